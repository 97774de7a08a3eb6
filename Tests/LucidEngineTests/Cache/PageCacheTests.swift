import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// The page cache: a page found is always the one cached under its key, through evictions and segment removals;
/// the byte budget holds.
@Suite("Engine: page cache")
struct PageCacheTests {
    static let pageBytes = 4_096

    static func page(_ fill: UInt8) -> PageBuffer { PageBuffer([UInt8](repeating: fill, count: pageBytes)) }

    /// Reads `key` through the cache as the engine does: a miss inserts the page. Returns whether it hit.
    static func read(_ cache: PageCache, _ key: PageCache.Key) -> Bool {
        if cache.page(for: key) != nil { return true }
        cache.insert(page(UInt8(truncatingIfNeeded: key.offset)), for: key)
        return false
    }

    @Test("random reads, inserts and segment removals: a page found is the one cached under its key", arguments: [1, 8, 64])
    func matchesItsKeys(capacityPages: Int) {
        let cache = PageCache(capacityBytes: capacityPages * Self.pageBytes)
        var rng = SplitMix64(seed: UInt64(capacityPages))
        var wrong = 0
        for step in 0..<40_000 {
            let key = PageCache.Key(segment: rng.next() % 4, offset: rng.next() % UInt64(capacityPages * 3))
            if let found = cache.page(for: key) {
                if found.bytes.first != UInt8(truncatingIfNeeded: key.offset &+ key.segment) { wrong += 1 }
            } else {
                cache.insert(Self.page(UInt8(truncatingIfNeeded: key.offset &+ key.segment)), for: key)
            }
            if step % 5_000 == 4_999 { cache.removeAll(segment: rng.next() % 4) }
        }
        #expect(wrong == 0)
    }

    @Test("the cache holds no more bytes than its capacity, and a page larger than a shard is not cached")
    func byteBudget() {
        let cache = PageCache(capacityBytes: 64 * Self.pageBytes)
        for i in 0..<1_000 { _ = Self.read(cache, .init(segment: 1, offset: UInt64(i))) }
        var cached = 0
        for i in 0..<1_000 where cache.page(for: .init(segment: 1, offset: UInt64(i))) != nil { cached += 1 }
        #expect(cached > 0 && cached <= 64, "\(cached) pages of 4 KiB cached in 256 KiB")
        cache.insert(PageBuffer([UInt8](repeating: 0, count: 64 * Self.pageBytes)), for: .init(segment: 9, offset: 0))
        #expect(cache.page(for: .init(segment: 9, offset: 0)) == nil)
    }
}
