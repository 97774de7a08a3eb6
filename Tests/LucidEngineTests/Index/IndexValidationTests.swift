import Foundation
import Testing
@testable import LucidEngine

/// Commit-time validation of index terms: a term that is not an `IndexValue` encoding (or a bad index name, or
/// an oversized term) makes the whole batch fail with `.invalidArgument`, and nothing of it is written; the
/// engine keeps accepting valid batches afterwards.
@Suite("Secondary indexes: term validation")
struct IndexValidationTests {
    /// Raw terms that are not (exactly) one IndexValue encoding.
    static let invalidTerms: [(String, [UInt8])] = [
        ("empty", []),
        ("tag 0x00", [0x00]),
        ("unknown tag 0x08", [0x08, 0x00, 0x01]),
        ("bool 0x02", [0x02, 0x02]),
        ("truncated bool", [0x02]),
        ("truncated int", [0x03, 0x80, 0x00, 0x00]),
        ("truncated date", [0x05, 0x80]),
        ("non-canonical -0.0", [0x04, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        ("NaN with payload", [0x04, 0xFF, 0xF8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]),
        ("unterminated string", [0x06, 0x61, 0x62]),
        ("string with a bad escape", [0x06, 0x61, 0x00, 0x02, 0x00, 0x01]),
        ("string with invalid UTF-8", [0x06, 0xC3, 0x28, 0x00, 0x01]),
        ("unterminated identifier", [0x07, 0x00, 0xFF]),
        ("a valid null followed by a byte", [0x01, 0x01]),
        ("a valid string followed by another", IndexValue.string("a").encoded + IndexValue.string("b").encoded),
        ("raw UTF-8 text", Array("sf".utf8)),
    ]

    @Test("invalid terms fail the whole batch with invalidArgument and write nothing")
    func invalidTermsRejectBatch() async throws {
        try await withTemporaryDirectoryAsync { dir in
            let engine = try Engine.open(at: dir, options: IndexTest.options(sync: .always))
            var batch = WriteBatch()
            batch.put([1], forKey: [0], in: "books", indexTerms: [IndexTerm(index: "genre", value: .string("sf"))])
            batch.put([2], forKey: [1], in: "books", indexTerms: [IndexTerm(index: "genre", value: .string("horror")),
                                                              IndexTerm(index: "year", value: .int(1999))])
            try await engine.commit(batch)

            func state() throws -> String {
                let s = engine.snapshot()
                var parts: [String] = ["seq \(s.sequence)", "count \(s.count(in: "books"))",
                                       "names \(s.indexNames(in: "books")) \(s.indexNames(in: "films"))",
                                       "bytes \(engine.statistics.totalBytes)"]
                for index in ["genre", "year", "tags"] {
                    let entries = s.entries(matching: IndexQuery(keyspace: "books", index: index, condition: .any))
                    parts.append("\(index): " + entries.map { "\(IndexTest.describe($0.value))→\($0.key)" }.joined(separator: ","))
                }
                parts.append("values \(try s.scan(in: "books").map { "\($0.key)=\($0.value)" })")
                return parts.joined(separator: "; ")
            }
            let before = try state()

            for (label, bytes) in Self.invalidTerms {
                var bad = WriteBatch()
                bad.put([9], forKey: [7], in: "films", indexTerms: [IndexTerm(index: "genre", value: .string("ok"))])
                bad.delete([0], in: "books")
                bad.put([8], forKey: [1], in: "books", indexTerms: [IndexTerm(index: "genre", value: .string("sf")),
                                                                    IndexTerm(index: "tags", term: bytes)])
                do {
                    try await engine.commit(bad)
                    Issue.record("\(label) [\(IndexTest.hex(bytes))]: the batch was accepted")
                } catch {
                    #expect(IndexTest.lucidErrorCode(error) == .invalidArgument, "\(label): \(error)")
                }
                do {
                    try engine.commitAndWait(bad)
                    Issue.record("\(label): commitAndWait accepted the batch")
                } catch {
                    #expect(IndexTest.lucidErrorCode(error) == .invalidArgument, "\(label): \(error)")
                }
                do {
                    try await engine.put([1], forKey: [5], in: "books", indexTerms: [IndexTerm(index: "tags", term: bytes)])
                    Issue.record("\(label): put accepted the term")
                } catch {
                    #expect(IndexTest.lucidErrorCode(error) == .invalidArgument, "\(label): \(error)")
                }
                #expect(try state() == before, "\(label): a rejected batch changed the store")
            }

            // Bad index names and oversized terms are rejected the same way.
            let longName = String(repeating: "n", count: 256)
            let tooLong = IndexValue.identifier(Array(repeating: 0x41, count: Format.maxIndexTermLength - 2)).encoded
            for (label, term) in [("empty index name", IndexTerm(index: "", value: .null)),
                                  ("index name of 256 bytes", IndexTerm(index: longName, value: .null)),
                                  ("term of \(tooLong.count) bytes", IndexTerm(index: "tags", term: tooLong))] {
                var bad = WriteBatch()
                bad.put([3], forKey: [3], in: "books", indexTerms: [term])
                do {
                    try await engine.commit(bad)
                    Issue.record("\(label): accepted")
                } catch {
                    #expect(IndexTest.lucidErrorCode(error) == .invalidArgument, "\(label): \(error)")
                }
            }
            #expect(try state() == before, "rejected batches changed the store")

            // The limits themselves are accepted, and the engine still takes valid batches.
            let longest = IndexValue.identifier(Array(repeating: 0x41, count: Format.maxIndexTermLength - 3))
            #expect(longest.encoded.count == Format.maxIndexTermLength)
            let name255 = String(repeating: "n", count: 255)
            try await engine.put([3], forKey: [3], in: "books",
                                 indexTerms: [IndexTerm(index: "tags", value: longest), IndexTerm(index: name255, value: .bool(true))])
            let s = engine.snapshot()
            #expect(s.keys(matching: IndexQuery(keyspace: "books", index: "tags", condition: .equals(longest))) == [[3]])
            #expect(s.keys(matching: IndexQuery(keyspace: "books", index: name255, condition: .any)) == [[3]])
            // (term, key) order: "horror" (key 1) before "sf" (key 0).
            #expect(s.keys(matching: IndexQuery(keyspace: "books", index: "genre", condition: .any)) == [[1], [0]])
            #expect(try s.get([7], in: "films") == nil)

            try engine.close()
            let reopened = try Engine.open(at: dir, options: IndexTest.options(sync: .always))
            defer { try? reopened.close() }
            let r = reopened.snapshot()
            #expect(r.keys(matching: IndexQuery(keyspace: "books", index: "genre", condition: .any)) == [[1], [0]])
            #expect(r.keys(matching: IndexQuery(keyspace: "books", index: "tags", condition: .any)) == [[3]])
            #expect(r.indexNames(in: "films") == [])
            let report = try reopened.verify()
            #expect(report.ok, "verify: \(report.problems.prefix(5).map(\.description).joined(separator: "; "))")
        }
    }

    /// Values may be 4 MiB and a record may carry 4096 terms of 1 KiB, but a page's raw payload may be at most
    /// 8 MiB (`Format.maxRawPageLength`, checked by every reader). A record over that must either be rejected at
    /// commit or be stored so that it can be read back, survives a reopen (and a crash) and passes verify; the
    /// largest record the limits allow must be accepted and durable.
    ///
    /// `excess`: the record's size as `WriteBatch.validate` counts it (`RecordCodec.encodedSize` with the widest
    /// sequence delta) minus `Format.maxRawPageLength`; nil for the largest value (4 MiB) with 4096 1-KiB terms.
    @Test("records at and over the page limit: accepted ones stay readable and durable, larger ones are refused",
          .heavy,
          arguments: [0, 1, nil] as [Int?])
    func recordAtPageLimit(excess: Int?) throws {
        let seed: UInt64 = 0x1DE5_0B16
        try IndexTest.withTemporaryDirectory { dir in
            var rng = IndexTest.SplitMix64(seed: seed)
            let options = IndexTest.options(sync: .always)
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            let terms = (0..<Format.maxIndexTermsPerRecord).map { i -> IndexTerm in
                // Distinct identifiers without 0x00 bytes: 1 + 1021 + 2 = 1024 encoded bytes each.
                let body = [UInt8(1 + i / 255), UInt8(1 + i % 255)] + Array(repeating: 0x41, count: 1019)
                return IndexTerm(index: "x", value: .identifier(body))
            }
            #expect(terms.allSatisfy { $0.term.count == Format.maxIndexTermLength })
            func batch(valueLength: Int) -> WriteBatch {
                var b = WriteBatch()
                b.put([UInt8](repeating: 0, count: valueLength), forKey: [1], in: "big", indexTerms: terms)
                return b
            }
            let full = RecordCodec.encodedSize(batch(valueLength: Format.maxValueLength).operations[0], seqDelta: .max)
            let valueLength = excess.map { Format.maxValueLength - (full - (Format.maxRawPageLength + $0)) }
                ?? Format.maxValueLength
            try #require(valueLength <= Format.maxValueLength, "full size \(full)")
            let value = rng.bytes(valueLength)
            var batch = WriteBatch()
            batch.put(value, forKey: [1], in: "big", indexTerms: terms)
            let recordBytes = RecordCodec.encodedSize(batch.operations[0], seqDelta: .max)
            if let excess { try #require(recordBytes == Format.maxRawPageLength + excess) }

            do {
                try engine.commitAndWait(batch)
            } catch {
                #expect(recordBytes > Format.maxRawPageLength,
                        "a \(recordBytes)-byte record is within every limit but was refused: \(error)")
                #expect(IndexTest.lucidErrorCode(error) == .invalidArgument, "\(error)")
                return
            }
            // Accepted: then it must be a durable, readable record. What a crash right now would leave (the
            // commit was acknowledged with SyncMode.always, so it is durable):
            let crashImage = dir + "-crash"
            try IndexTest.copyStore(from: dir, to: crashImage)
            defer { try? FileManager.default.removeItem(atPath: crashImage) }
            let what = "a \(recordBytes)-byte record (max raw page \(Format.maxRawPageLength)) was acknowledged"
            do {
                #expect(try engine.get([1], in: "big") == value, "\(what) but reads back differently")
            } catch {
                Issue.record("\(what) but cannot be read: \(error)")
            }
            let report = try engine.verify()
            #expect(report.ok, "\(what); verify: \(report.problems.prefix(3).map(\.description).joined(separator: "; "))")
            try engine.close()

            // Reopen after a clean close, and open the crash image.
            for (path, how) in [(dir, "reopened after close"), (crashImage, "opened after a crash")] {
                do {
                    engine = try Engine.open(at: path, options: options)
                } catch {
                    Issue.record("\(what) but the store cannot be \(how): \(error)")
                    continue
                }
                defer { try? engine.close() }
                #expect(engine.recoveryReport.droppedBytes == 0,
                        "\(what) but the store \(how) dropped \(engine.recoveryReport.droppedBytes) bytes")
                do {
                    #expect(try engine.get([1], in: "big") == value, "\(what) but is gone in the store \(how)")
                } catch {
                    Issue.record("\(what) but cannot be read in the store \(how): \(error)")
                }
                #expect(engine.snapshot().entryCount(keyspace: "big", index: "x") == Format.maxIndexTermsPerRecord,
                        "\(what) but its index entries are gone in the store \(how)")
                // Overwriting it reads its terms back (to remove them from the index).
                do {
                    var b = WriteBatch()
                    b.put([2], forKey: [1], in: "big")
                    try engine.commitAndWait(b)
                    #expect(engine.snapshot().entryCount(keyspace: "big", index: "x") == 0)
                } catch {
                    Issue.record("\(what) but overwriting it in the store \(how) fails: \(error)")
                }
                try engine.close()
            }
        }
    }
}

extension IndexValidationTests {
    /// Index entries are `term ‖ primary key`, up to 1024 + 1024 bytes: the longest keys, terms and index names
    /// (and keys that are prefixes of one another under the same term) must keep their order in memory, through
    /// the checkpoint written at close and through a full replay of the log.
    @Test("the longest keys, terms and index names keep their order through checkpoint and replay")
    func longestEntriesRoundTrip() throws {
        let seed: UInt64 = 0x1DE5_10C6
        try IndexTest.withTemporaryDirectory { dir in
            var rng = IndexTest.SplitMix64(seed: seed)
            let tag = "[seed 0x\(String(seed, radix: 16))]"
            let options = IndexTest.options(segmentSize: 1 << 20)
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            let longName = String(repeating: "名", count: 85)   // 255 UTF-8 bytes
            #expect(longName.utf8.count == Format.maxIndexNameLength)
            let names = ["i", longName]
            let base = rng.trickyBytes(Format.maxKeyLength)
            func randomTerm() -> IndexValue {
                switch rng.int(0..<4) {
                case 0: return .identifier(Array(base.prefix(rng.pick([0, 1, 300, 511]))))   // ≤ 1024 encoded
                case 1: return .identifier(rng.bytes(Format.maxIndexTermLength - 3).map { $0 | 1 })
                case 2: return .string(String(repeating: "\0", count: rng.pick([0, 1, 509, 510])))
                default: return .int(Int64(rng.int(-2...2)))
                }
            }
            // key → (index, term) pairs; keys are prefixes of one long key, or random.
            var model: [[UInt8]: [(String, IndexValue)]] = [:]
            for round in 0..<6 {
                var batch = WriteBatch()
                for _ in 0..<50 {
                    let key = rng.chance(0.5) ? Array(base.prefix(rng.pick([0, 1, 2, 1023, 1024, rng.int(0...1024)])))
                        : rng.bytes(rng.int(1000...1024))
                    if rng.chance(0.15) {
                        batch.delete(key, in: "ks")
                        model[key] = nil
                        continue
                    }
                    let terms = (0..<rng.int(0...3)).map { _ in (rng.pick(names), randomTerm()) }
                    for (_, t) in terms { #expect(t.encoded.count <= Format.maxIndexTermLength) }
                    batch.put([UInt8(round)], forKey: key, in: "ks",
                              indexTerms: terms.map { IndexTerm(index: $0.0, value: $0.1) })
                    model[key] = terms
                }
                try engine.commitAndWait(batch)
            }

            func check(_ when: String) {
                let snapshot = engine.snapshot()
                for name in names {
                    var expected: [(IndexValue, [UInt8])] = []
                    for (key, terms) in model {
                        for (n, t) in terms
                        where n == name && !expected.contains(where: { $0.1 == key && IndexTest.compare($0.0, t) == 0 }) {
                            expected.append((t, key))
                        }
                    }
                    expected.sort {
                        let c = IndexTest.compare($0.0, $1.0)
                        return c != 0 ? c < 0 : IndexTest.compareBytes($0.1, $1.1) < 0
                    }
                    for reverse in [false, true] {
                        let got = snapshot.entries(matching: IndexQuery(keyspace: "ks", index: name, condition: .any,
                                                                        reverse: reverse))
                        let want = reverse ? expected.reversed() : expected
                        let same = got.count == want.count
                            && zip(got, want).allSatisfy { $0.key == $1.1 && IndexTest.sameValue($0.value, $1.0) }
                        #expect(same, "\(tag) \(when) index \(name.prefix(3)) reverse \(reverse): \(got.count) entries, expected \(want.count)")
                    }
                    #expect(snapshot.entryCount(keyspace: "ks", index: name) == expected.count, "\(tag) \(when)")
                    // Equality on every distinct term finds exactly its records.
                    for (term, _) in expected.prefix(40) {
                        let keys = snapshot.keys(matching: IndexQuery(keyspace: "ks", index: name, condition: .equals(term)))
                        let want = expected.filter { IndexTest.compare($0.0, term) == 0 }.map(\.1)
                        #expect(keys == want, "\(tag) \(when) equals \(IndexTest.describe(term).prefix(60))")
                    }
                }
            }
            check("before reopening")
            try engine.close()
            engine = try Engine.open(at: dir, options: options)
            check("after a clean reopen")
            try engine.close()
            try? FileManager.default.removeItem(atPath: dir + "/CHECKPOINT")
            engine = try Engine.open(at: dir, options: options)
            #expect(!engine.recoveryReport.checkpointUsed)
            check("after replaying the whole log")
            let report = try engine.verify()
            #expect(report.ok, "\(tag) verify: \(report.problems.prefix(5).map(\.description).joined(separator: "; "))")
        }
    }
}

/// Async variant of `IndexTest.withTemporaryDirectory`.
private func withTemporaryDirectoryAsync(_ body: (String) async throws -> Void) async throws {
    let dir = FileManager.default.temporaryDirectory.path + "/lucid-index-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try await body(dir)
}
