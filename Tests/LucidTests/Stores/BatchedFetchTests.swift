import Foundation
@testable import Lucid
import LucidEngine
import Testing

/// `DiskStore.fetch(keys)` probes the entity cache for every key, then looks up and reads the rest together (or one
/// by one when few): the entities are those one-key fetches return, and the cache admits what one-key fetches would.
@Suite("Disk store: batched fetches")
struct BatchedFetchTests {
    @Test("a large query of cold records does not flush a working set the cache would keep")
    func admission() async throws {
        var hits: [Bool: Int] = [:]
        for batched in [false, true] {
            let temp = try TemporaryStore()
            let store = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 8 << 10)
            _ = try await store.set((0..<400).map { Book.remote($0, "title \($0)") })
            for _ in 0..<3 { for i in 0..<10 { _ = try store.getNow(.remote(i)) } }
            let snapshot = temp.engine.snapshot()
            let keys = (100..<400).map { Book.Identifier.remote($0).storageKey }
            if batched {
                #expect(try store.fetch(keys, in: snapshot).count == keys.count)
            } else {
                for k in keys { _ = try store.fetch(k, in: snapshot) }
            }
            let before = store.entityCacheStatistics.hits
            for i in 0..<10 { _ = try store.getNow(.remote(i)) }
            hits[batched] = store.entityCacheStatistics.hits - before
        }
        // Each fetch admitted all 300 once the probes had seen room for one more (0 of 10 hits) before the fix.
        #expect(hits[true] == hits[false], "working-set hits after the query: \(hits)")
        #expect((hits[false] ?? 0) >= 8, "working-set hits after one-key fetches: \(hits)")
    }

    @Test("random keys (cached, confirmed, changed, absent, repeated), 0 to 39 per call: what one-key fetches return")
    func matchesOneKeyFetches() async throws {
        let temp = try TemporaryStore()
        let cached = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 1 << 20)
        let plain = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 0)
        _ = try await cached.set((0..<60).map { Book.remote($0, "v0 \($0)") })
        var state: UInt64 = 5
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        for step in 0..<300 {
            if next(3) == 0 {
                _ = try await plain.set((0..<next(8)).map { _ in let i = next(60); return Book.remote(i, "v\(step) \(i)") })
            }
            if next(5) == 0 { for _ in 0..<next(10) { _ = try cached.getNow(.remote(next(60))) } }
            let keys = (0..<next(40)).map { _ in Book.Identifier.remote(next(70)).storageKey }   // 60...69 absent
            let snapshot = temp.engine.snapshot()
            let batch = try cached.fetch(keys, in: snapshot)
            let single = try keys.compactMap { try plain.fetch($0, in: snapshot) }
            #expect(batch == single, "step \(step)")
        }
        #expect(cached.entityCacheStatistics.hits > 0)
    }
}
