import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// A batch holds its operations packed, as record bodies in one buffer: the records it encodes must be the bytes
/// an operation of arrays encodes (the log format does not change with the batch's layout), concatenated batches
/// must read back as their operations one after another, and the limits must be enforced as before.
@Suite("WriteBatch packing")
struct WriteBatchPackingTests {
    /// Operations of every shape: puts and deletes, several keyspaces (non-ASCII ones among them, in two spellings
    /// of one name), empty and long keys and values (long enough for two-byte varints), no term, one, several, a
    /// repeated index name and non-ASCII ones.
    private static func operations(seed: UInt64, count: Int) -> [WriteBatch.Operation] {
        var rng = SplitMix64(seed: seed)
        let spaces = ["a", "books", String(repeating: "k", count: 200), "r\u{E9}sum\u{E9}", "re\u{301}sume\u{301}",
                      "\u{1F4DA}"]
        let names = ["genre", "rating", "tags", "\u{E9}t\u{E9}", "e\u{301}te\u{301}"]
        return (0 ..< count).map { n in
            let keyspace = spaces[Int(rng.next() % UInt64(spaces.count))]
            let key = (0 ..< Int(rng.next() % 300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 5 == 0 {
                return .init(kind: .delete, keyspace: keyspace, key: key, value: [], terms: [])
            }
            let value = (0 ..< Int(rng.next() % 700)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let terms = (0 ..< Int(rng.next() % 4)).map { t in
                IndexTerm(index: t == 2 ? "genre" : names[Int(rng.next() % UInt64(names.count))],
                          value: rng.next() % 2 == 0 ? .int(Int64(n)) : .string(String(repeating: "x", count: t * 90)))
            }
            return .init(kind: .put, keyspace: keyspace, key: key, value: value, terms: terms)
        }
    }

    private static func batch(_ ops: [WriteBatch.Operation]) -> WriteBatch {
        var batch = WriteBatch()
        for op in ops { batch.append(op) }
        return batch
    }

    /// Equal to the byte: names compared as UTF-8, so that a name read back in another spelling fails.
    private static func same(_ a: WriteBatch.Operation, _ b: WriteBatch.Operation) -> Bool {
        a.kind == b.kind && Array(a.keyspace.utf8) == Array(b.keyspace.utf8) && a.key == b.key && a.value == b.value
            && a.terms.map { Array($0.index.utf8) } == b.terms.map { Array($0.index.utf8) }
            && a.terms.map(\.term) == b.terms.map(\.term)
    }

    @Test("a packed operation encodes the record an operation of arrays encodes, value offset included")
    func encodesTheSameRecords() {
        let ops = Self.operations(seed: 7, count: 400)
        let batch = Self.batch(ops)
        #expect(batch.count == ops.count)
        batch.withPacked { packed in
            for (i, op) in ops.enumerated() {
                for delta: UInt64 in [0, 1, 300, .max] {
                    var expected = ByteWriter()
                    let expectedOffset = RecordCodec.encode(op, seqDelta: delta, into: &expected)
                    var actual = ByteWriter()
                    actual.u8(0xAA)   // a record that does not start the buffer
                    let offset = RecordCodec.encode(packed, i, seqDelta: delta, into: &actual)
                    #expect(Array(actual.bytes.dropFirst()) == expected.bytes, "operation \(i), delta \(delta)")
                    #expect(offset == expectedOffset + 1, "operation \(i), delta \(delta)")
                    #expect(RecordCodec.encodedSize(packed[i], seqDelta: delta) == expected.count)
                    #expect(RecordCodec.encodedSize(op, seqDelta: delta) == expected.count)
                }
            }
        }
    }

    /// Both encoders share `RecordCodec.encodeBody`, so comparing them cannot catch a change of the body itself:
    /// the records the batch encodes are read back with the decoder recovery uses, field by field.
    @Test("the records a batch encodes decode, with recovery's decoder, to the operations put")
    func decodesAsPut() {
        let ops = Self.operations(seed: 13, count: 300)
        let batch = Self.batch(ops)
        var payload = ByteWriter()
        var valueOffsets: [Int] = []
        batch.withPacked { packed in
            for i in 0 ..< packed.count {
                valueOffsets.append(RecordCodec.encode(packed, i, seqDelta: UInt64(i), into: &payload))
            }
        }
        var decoded = 0
        let ok = payload.bytes.withUnsafeBytes { bytes in
            RecordCodec.decodeAll(bytes, expectedCount: ops.count, baseSequence: 1000) { record in
                let op = ops[decoded]
                #expect(record.kind == op.kind && record.sequence == 1000 + UInt64(decoded), "operation \(decoded)")
                #expect(Array(record.keyspace) == Array(op.keyspace.utf8), "operation \(decoded)")
                #expect(Array(record.key) == op.key, "operation \(decoded)")
                #expect(record.valueOffset == valueOffsets[decoded], "operation \(decoded)")
                #expect(Array(bytes[record.valueOffset ..< record.valueOffset + record.valueLength]) == op.value)
                let terms = RecordCodec.terms(of: record, in: bytes)
                #expect(terms.map { Array($0.index.utf8) } == op.terms.map { Array($0.index.utf8) })
                #expect(terms.map(\.term) == op.terms.map(\.term), "operation \(decoded)")
                decoded += 1
            }
        }
        #expect(ok && decoded == ops.count)
    }

    @Test("operations, terms and keys read back as they were put")
    func readsBack() {
        let ops = Self.operations(seed: 11, count: 300)
        let batch = Self.batch(ops)
        let back = batch.operations
        #expect(back.count == ops.count)
        for (i, op) in ops.enumerated() {
            #expect(Self.same(back[i], op), "operation \(i)")
            #expect(batch.terms(of: i).map { Array($0.index.utf8) } == op.terms.map { Array($0.index.utf8) })
            batch.withPacked { packed in
                #expect(Array(packed.key(i)) == op.key)
                #expect(packed[i].valueLength == op.value.count)
                #expect(packed[i].termCount == op.terms.count)
                #expect(batch.keyspaceNames[packed[i].keyspace] == op.keyspace)   // as strings: one per name
            }
        }
        #expect(Set(batch.keyspaceNames).count == batch.keyspaceNames.count)
    }

    @Test("concatenated batches read as their operations one after another, keyspaces merged")
    func concatenates() {
        let parts = [Self.operations(seed: 1, count: 50), [], Self.operations(seed: 2, count: 1),
                     Self.operations(seed: 3, count: 120)]
        let batches = parts.map(Self.batch)
        let joined = WriteBatch(concatenating: batches)
        let all = parts.flatMap { $0 }
        #expect(joined.count == all.count)
        #expect(joined.approximateBytes == batches.reduce(0) { $0 + $1.approximateBytes })
        #expect(Set(joined.keyspaceNames).count == joined.keyspaceNames.count)
        for (i, op) in joined.operations.enumerated() { #expect(Self.same(op, all[i]), "operation \(i)") }
        joined.withPacked { packed in
            for (i, op) in all.enumerated() {
                var expected = ByteWriter()
                _ = RecordCodec.encode(op, seqDelta: 5, into: &expected)
                var actual = ByteWriter()
                _ = RecordCodec.encode(packed, i, seqDelta: 5, into: &actual)
                #expect(actual.bytes == expected.bytes, "operation \(i)")
            }
        }
    }

    @Test("a batch that breaks a limit names its first offending operation, alone or concatenated")
    func validatesAsBefore() throws {
        var batch = WriteBatch()
        batch.put([1], forKey: [1], in: "ks")
        batch.put([2], forKey: [UInt8](repeating: 0, count: Format.maxKeyLength + 1), in: "ks")
        batch.put([3], forKey: [3], in: "", indexTerms: [])
        do {
            try batch.validate()
            Issue.record("an over-long key was accepted")
        } catch let error as LucidError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("operation 1: key of 1025 bytes"))
        }
        var good = WriteBatch()
        good.put([1], forKey: [1], in: "ks", indexTerms: [IndexTerm(index: "i", value: .int(1))])
        try good.validate()
        var badTerm = WriteBatch()
        badTerm.put([1], forKey: [1], in: "ks", indexTerms: [IndexTerm(index: "i", term: [0xEE])])
        do {
            try WriteBatch(concatenating: [good, good, badTerm]).validate()
            Issue.record("a term that is not an IndexValue encoding was accepted")
        } catch let error as LucidError {
            #expect(error.message == "operation 2: index term is not an IndexValue encoding")
        }
        try WriteBatch(concatenating: [good, good]).validate()
    }
}
