import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// Large groups update the primary tree and the indexes on several threads (`ParallelPublish`): the live-bytes
/// count for automatic compaction stays exact, a snapshot taken before keeps its trees while later groups copy the
/// nodes they share, and batched reads count one page-cache hit or miss per value, as `get` does.
@Suite("Engine: parallel publish, batch statistics")
struct ParallelPublishTests {
    static func key(_ i: Int) -> [UInt8] { Array("k\(i)".utf8) }
    static func terms(_ i: Int, round: Int) -> [IndexTerm] {
        [IndexTerm(index: "a", value: .int(Int64((i + round) % 13))),
         IndexTerm(index: "b", value: .string("s\((i * 7 + round) % 29)"))]
    }

    @Test("live bytes kept through parallel publishes equal a walk of the tree; an old snapshot read meanwhile is unchanged")
    func liveBytesAndSnapshots() async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            var o = EngineTest.options(sync: .none)
            o.autoCompaction = nil
            let engine = try Engine.open(at: dir, options: o)
            defer { try? engine.close() }
            engine.core.autoCompaction.liveRawBytes = 0   // empty engine, before any write
            var batch = WriteBatch()
            for i in 0 ..< 3000 { batch.put([UInt8](repeating: 1, count: 10 + i % 50), forKey: Self.key(i), in: "ks", indexTerms: Self.terms(i, round: 0)) }
            try engine.commitAndWait(batch)
            let old = engine.snapshot()
            let oldCounts = (0 ..< 13).map { g in old.keys(matching: IndexQuery(keyspace: "ks", index: "a", condition: .equals(.int(Int64(g))))).count }
            let flags = Flags()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for round in 1 ... 6 {
                        var batch = WriteBatch()
                        for i in stride(from: round * 300, to: round * 300 + 2500, by: 1) {
                            if i % 17 == 0 { batch.delete(Self.key(i), in: "ks") } else {
                                batch.put([UInt8](repeating: UInt8(round), count: 5 + (i * round) % 70), forKey: Self.key(i), in: "ks",
                                          indexTerms: Self.terms(i, round: round))
                            }
                        }
                        try engine.commitAndWait(batch)
                    }
                    flags.stop.store(true, ordering: .releasing)
                }
                group.addTask {
                    while !flags.stop.load(ordering: .acquiring) {
                        let counts = (0 ..< 13).map { g in old.keys(matching: IndexQuery(keyspace: "ks", index: "a", condition: .equals(.int(Int64(g))))).count }
                        if counts != oldCounts { flags.bad.add(1, ordering: .relaxed) }
                        let v = try old.values(forKeys: (0 ..< 64).map { Self.key($0 * 37 % 3000) }, in: "ks")
                        if v.contains(where: { $0?.first != 1 }) { flags.bad.add(1, ordering: .relaxed) }
                    }
                }
                try await group.waitForAll()
            }
            #expect(flags.bad.load(ordering: .relaxed) == 0)
            var live: Int64 = 0
            engine.snapshot().state.keyspaces["ks"]!.primary.forEach { k, loc in
                live += AutoCompactionState.recordBytes(keyLength: k.count, valueLength: loc.valueLength); return true
            }
            #expect(engine.core.autoCompaction.liveRawBytes == live)
            let report = try engine.verify()
            #expect(report.ok)
        }
    }

    final class Flags: Sendable {
        let stop = Atomic<Bool>(false)
        let bad = Atomic<Int>(0)
    }

    @Test("a batch counts one hit or one miss per value, as get does")
    func statistics() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var o = EngineTest.options(sync: .none, pageCacheBytes: 256 << 10)
            o.autoCompaction = nil
            let engine = try Engine.open(at: dir, options: o)
            defer { try? engine.close() }
            var batch = WriteBatch()
            for i in 0 ..< 5000 { batch.put([UInt8](repeating: 2, count: 200), forKey: Self.key(i), in: "ks") }
            try engine.commitAndWait(batch)
            let snapshot = engine.snapshot()
            let keys = (0 ..< 400).map { Self.key($0 * 11 % 5000) }
            for _ in 0 ..< 3 {
                let s0 = engine.statistics
                _ = try snapshot.values(forKeys: keys, in: "ks")
                let s1 = engine.statistics
                #expect((s1.cacheHits - s0.cacheHits) + (s1.cacheMisses - s0.cacheMisses) == 400, "\(s0) \(s1)")
            }
        }
    }
}
