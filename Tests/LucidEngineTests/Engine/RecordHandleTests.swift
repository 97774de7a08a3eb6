import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `Snapshot.handle(forKey:in:)` and `value(of:)`: a record found without reading it names the commit that wrote
/// it, every rewrite gives a greater sequence, compaction keeps it, and the value read through the handle is the
/// one `get` reads.
@Suite("Engine: record handles")
struct RecordHandleTests {
    static func options() -> EngineOptions {
        var o = EngineTest.options(sync: .none)
        o.autoCompaction = nil
        return o
    }

    @Test("a handle names its commit; rewrites raise it, other keys and compaction leave it; values match get")
    func sequences() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            func put(_ pairs: [(String, String)]) throws -> UInt64 {
                var batch = WriteBatch()
                for (k, v) in pairs { batch.put(Array(v.utf8), forKey: Array(k.utf8), in: "ks") }
                return try engine.commitAndWait(batch)
            }
            let first = try put([("a", "1"), ("b", "2")])
            let s1 = engine.snapshot()
            let a1 = try #require(try s1.handle(forKey: Array("a".utf8), in: "ks"))
            #expect(a1.sequence == first)
            #expect(try s1.handle(forKey: Array("b".utf8), in: "ks")?.sequence == first)
            #expect(a1.valueLength == 1)
            #expect(try s1.value(of: a1) == Array("1".utf8))
            #expect(try s1.handle(forKey: Array("zz".utf8), in: "ks") == nil)
            #expect(try s1.handle(forKey: Array("a".utf8), in: "other") == nil)

            _ = try put([("b", "22")])                       // another key: a's handle is unchanged
            let third = try put([("a", "111")])
            let s3 = engine.snapshot()
            let a3 = try #require(try s3.handle(forKey: Array("a".utf8), in: "ks"))
            #expect(a3.sequence == third && third > first)
            #expect(try s3.value(of: a3) == s3.get(Array("a".utf8), in: "ks"))
            #expect(try s1.value(of: a1) == Array("1".utf8))   // the old snapshot still reads the old value

            // Compaction moves the records and keeps their sequences.
            try engine.sealActiveSegment()
            _ = try engine.compactAndWait()
            let s4 = engine.snapshot()
            let a4 = try #require(try s4.handle(forKey: Array("a".utf8), in: "ks"))
            #expect(a4.sequence == third)
            #expect(try s4.value(of: a4) == Array("111".utf8))
        }
    }

    @Test("a handle from another engine is refused, even one naming the same place; a closed engine throws")
    func misuse() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let one = try Engine.open(at: dir + "/one", options: Self.options())
            let two = try Engine.open(at: dir + "/two", options: Self.options())
            defer { try? one.close(); try? two.close() }
            var batch = WriteBatch()
            batch.put([1], forKey: [1], in: "ks")
            try one.commitAndWait(batch)
            try two.commitAndWait(batch)
            // Both stores hold the record at the same place: the handle still names `one`'s.
            let handle = try #require(try one.snapshot().handle(forKey: [1], in: "ks"))
            #expect(try two.snapshot().handle(forKey: [1], in: "ks")?.sequence == handle.sequence)
            #expect { try two.snapshot().value(of: handle) } throws: { error in
                (error as? LucidError)?.code == .invalidArgument
            }
            #expect(try one.snapshot().value(of: handle) == [1])
            let snapshot = one.snapshot()
            try one.close()
            #expect { try snapshot.handle(forKey: [1], in: "ks") } throws: { ($0 as? LucidError)?.code == .closed }
            #expect { try snapshot.value(of: handle) } throws: { ($0 as? LucidError)?.code == .closed }
        }
    }

    @Test("a lookup without a snapshot finds what a snapshot taken then finds, and reads its value after a compaction removed its segment")
    func lookupsWithoutSnapshots() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            func put(_ key: String, _ value: String) throws -> UInt64 {
                var batch = WriteBatch()
                batch.put(Array(value.utf8), forKey: Array(key.utf8), in: "ks")
                return try engine.commitAndWait(batch)
            }
            #expect(engine.currentSequence == engine.snapshot().sequence)
            let first = try put("a", "1")
            #expect(engine.currentSequence == first)
            let lookup = try engine.lookUp(Array("a".utf8), in: "ks")
            #expect(lookup.sequence == first && lookup.handle?.sequence == first)
            #expect(lookup.handle == (try engine.snapshot().handle(forKey: Array("a".utf8), in: "ks")))
            #expect(try engine.value(of: lookup) == Array("1".utf8))
            let missing = try engine.lookUp(Array("zz".utf8), in: "ks")
            #expect(missing.handle == nil && missing.sequence == first)
            #expect(try engine.value(of: missing) == nil)
            #expect(try engine.lookUp(Array("a".utf8), in: "other").handle == nil)

            // A later write and a compaction of the segment the lookup found: it still reads its own value.
            let second = try put("a", "2")
            try engine.sealActiveSegment()
            _ = try engine.compactAndWait()
            #expect(try engine.value(of: lookup) == Array("1".utf8))
            let now = try engine.lookUp(Array("a".utf8), in: "ks")
            #expect(now.sequence == second && now.handle?.sequence == second)
            #expect(try engine.value(of: now) == Array("2".utf8))
            #expect(engine.currentSequence == second)
        }
    }

    @Test("a lookup with work meanwhile passes that work the lookup's sequence, skips the lookup when told, and finds what a plain lookup finds")
    func lookupsWithWorkMeanwhile() throws {
        for pointIndex in [true, false] {
            try EngineTest.withTemporaryDirectory { dir in
                var options = Self.options()
                options.pointIndex = pointIndex
                let engine = try Engine.open(at: dir, options: options)
                defer { try? engine.close() }
                var batch = WriteBatch()
                for i in 0..<200 { batch.put(Array("v\(i)".utf8), forKey: Array("k\(i)".utf8), in: "ks") }
                // A key longer than the point index's 16 bytes: the primary tree answers.
                batch.put(Array("long".utf8), forKey: Array(repeating: 7, count: 40), in: "ks")
                let sequence = try engine.commitAndWait(batch)
                var seen: [UInt64] = []
                for key in (0..<200).map({ Array("k\($0)".utf8) }) + [Array(repeating: 7, count: 40), Array("zz".utf8)] {
                    let found = try engine.lookUp(key, in: "ks") { seen.append($0); return true }
                    let plain = try engine.lookUp(key, in: "ks")
                    #expect(found?.handle == plain.handle && found?.sequence == plain.sequence)
                    #expect(try found.flatMap { try engine.value(of: $0) } == (try engine.get(key, in: "ks")))
                    #expect(try engine.lookUp(key, in: "ks") { _ in false } == nil)
                }
                #expect(seen.count == 202 && seen.allSatisfy { $0 == sequence })
                #expect(try engine.lookUp(Array("k1".utf8), in: "other") { _ in true }?.handle == nil)
                try engine.close()
                var ran = false
                #expect { try engine.lookUp([1], in: "ks") { _ in ran = true; return true } } throws: {
                    ($0 as? LucidError)?.code == .closed
                }
                #expect(!ran, "the work meanwhile runs only on an open engine")
            }
        }
    }

    @Test("a lookup from another engine is refused; a closed engine throws closed")
    func lookupMisuse() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let one = try Engine.open(at: dir + "/one", options: Self.options())
            let two = try Engine.open(at: dir + "/two", options: Self.options())
            defer { try? two.close() }
            var batch = WriteBatch()
            batch.put([1], forKey: [1], in: "ks")
            try one.commitAndWait(batch)
            let lookup = try one.lookUp([1], in: "ks")
            #expect { try two.value(of: lookup) } throws: { ($0 as? LucidError)?.code == .invalidArgument }
            try one.close()
            #expect { try one.lookUp([1], in: "ks") } throws: { ($0 as? LucidError)?.code == .closed }
            #expect { try one.value(of: lookup) } throws: { ($0 as? LucidError)?.code == .closed }
        }
    }
}
