import Foundation
@testable import Lucid
import LucidEngine
import Testing

/// The disk store's cache of decoded entities: reads that find the same record take the cached entity, a write
/// (a later commit) is never hidden by an older entry, and the cache keeps to its bound.
@Suite("Entity cache")
struct EntityCacheTests {
    @Test("a second read of the same record hits; a write is seen at once")
    func hitsAndWrites() async throws {
        let temp = try TemporaryStore()
        let store = DiskStore<Book>(engine: temp.engine)
        _ = try await store.set([.remote(1, "one"), .remote(2, "two")])

        #expect(try store.getNow(.remote(1))?.title == "one")
        #expect(store.entityCacheStatistics.hits == 0)
        #expect(try store.getNow(.remote(1))?.title == "one")
        #expect(store.entityCacheStatistics.hits == 1)

        // A write commits a later sequence: the cached entry no longer matches.
        _ = try await store.set([.remote(1, "uno")])
        #expect(try store.getNow(.remote(1))?.title == "uno")
        #expect(try store.getNow(.remote(1))?.title == "uno")
        // Queries read through the same cache.
        let found = try await store.search(.filter(.identifier == .identifier(.remote(1))))
        #expect(found.entities.map(\.title) == ["uno"])

        try await store.remove([.remote(1)])
        #expect(try store.getNow(.remote(1)) == nil)
        #expect(try store.getNow(.remote(2))?.title == "two")
    }

    @Test("an older snapshot's read neither hides nor replaces a newer entry")
    func olderSnapshot() async throws {
        let temp = try TemporaryStore()
        let store = DiskStore<Book>(engine: temp.engine)
        _ = try await store.set([.remote(1, "old")])
        let before = temp.engine.snapshot()
        _ = try await store.set([.remote(1, "new")])
        let key = Book.Identifier.remote(1).storageKey

        #expect(try store.fetch(key, in: temp.engine.snapshot())?.title == "new")   // cached at the new sequence
        #expect(try store.fetch(key, in: before)?.title == "old")                   // the old record, decoded
        #expect(try store.fetch(key, in: temp.engine.snapshot())?.title == "new")   // still the new entry
        let stats = store.entityCacheStatistics
        #expect(stats.entries == 1 && stats.hits == 1)
    }

    @Test("the cache keeps to its bound and keeps entries read again")
    func bounded() async throws {
        let temp = try TemporaryStore()
        let capacity = 8 << 10
        let store = DiskStore<Book>(engine: temp.engine, entityCacheBytes: capacity)
        _ = try await store.set((0..<400).map { Book.remote($0, "title \($0)") })
        for round in 0..<3 {
            for i in 0..<400 {
                #expect(try store.getNow(.remote(i))?.title == "title \(i)")
                // Record 7 is read between all the others: CLOCK keeps it.
                #expect(try store.getNow(.remote(7))?.title == "title 7")
                let stats = store.entityCacheStatistics
                #expect(stats.bytes <= capacity)
                if round > 0 || i > 0 { #expect(stats.entries > 1) }
            }
        }
        let stats = store.entityCacheStatistics
        // Every read of record 7 after the first hits; most of the 400 others do not fit.
        #expect(stats.hits >= 3 * 400 - 1)
        #expect(stats.misses >= 3 * 300)
    }

    @Test("a cache of 0 bytes keeps nothing")
    func disabled() async throws {
        let temp = try TemporaryStore()
        let store = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 0)
        _ = try await store.set([.remote(1, "one")])
        for _ in 0..<3 { #expect(try store.getNow(.remote(1))?.title == "one") }
        #expect(store.entityCacheStatistics.entries == 0)
        #expect(store.entityCacheStatistics.hits == 0)
    }

    @Test("a closed store throws, cached or not")
    func closed() async throws {
        let temp = try TemporaryStore()
        let store = DiskStore<Book>(engine: temp.engine)
        _ = try await store.set([.remote(1, "one")])
        #expect(try store.getNow(.remote(1))?.title == "one")
        try temp.engine.close()
        #expect(throws: StoreError.self) { try store.getNow(.remote(1)) }
    }
}
