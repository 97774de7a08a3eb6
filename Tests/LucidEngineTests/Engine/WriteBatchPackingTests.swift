import Testing
@testable import LucidEngine

/// A batch holds its operations packed, as record bodies in one buffer: the records it encodes must be the bytes
/// an operation of arrays encodes (the log format does not change with the batch's layout), concatenated batches
/// must read back as their operations one after another, and the limits must be enforced as before.
@Suite("WriteBatch packing")
struct WriteBatchPackingTests {
    /// Operations of every shape: puts and deletes, several keyspaces, empty and long keys and values (long enough
    /// for two-byte varints), no term, one, several, and a repeated index name.
    private static func operations(seed: UInt64, count: Int) -> [WriteBatch.Operation] {
        var rng = SplitMix(seed)
        let spaces = ["a", "books", String(repeating: "k", count: 200)]
        return (0 ..< count).map { n in
            let keyspace = spaces[Int(rng.next() % 3)]
            let key = (0 ..< Int(rng.next() % 300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 5 == 0 {
                return .init(kind: .delete, keyspace: keyspace, key: key, value: [], terms: [])
            }
            let value = (0 ..< Int(rng.next() % 700)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let terms = (0 ..< Int(rng.next() % 4)).map { t in
                IndexTerm(index: t == 2 ? "genre" : ["genre", "rating", "tags"][Int(rng.next() % 3)],
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

    private static func same(_ a: WriteBatch.Operation, _ b: WriteBatch.Operation) -> Bool {
        a.kind == b.kind && a.keyspace == b.keyspace && a.key == b.key && a.value == b.value && a.terms == b.terms
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

    @Test("operations, terms and keys read back as they were put")
    func readsBack() {
        let ops = Self.operations(seed: 11, count: 300)
        let batch = Self.batch(ops)
        let back = batch.operations
        #expect(back.count == ops.count)
        for (i, op) in ops.enumerated() {
            #expect(Self.same(back[i], op), "operation \(i)")
            #expect(batch.terms(of: i) == op.terms)
            batch.withPacked { packed in
                #expect(Array(packed.key(i)) == op.key)
                #expect(packed[i].valueLength == op.value.count)
                #expect(packed[i].termCount == op.terms.count)
                #expect(batch.keyspaceNames[packed[i].keyspace] == op.keyspace)
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
        #expect(throws: LucidError.self) { try WriteBatch(concatenating: [good, badTerm]).validate() }
        try WriteBatch(concatenating: [good, good]).validate()
    }

    /// splitmix64: a deterministic generator for the shapes above.
    private struct SplitMix {
        var state: UInt64
        init(_ seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
