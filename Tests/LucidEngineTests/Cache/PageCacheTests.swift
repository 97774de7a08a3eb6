import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// The page cache: its eviction (CLOCK with 2Q's admission) lets a working set displace what filled the cache
/// first, while pages read once neither displace it nor stay; a page found is always the one cached under its key,
/// through evictions and segment removals; the byte budget holds.
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

    /// The hit rate of `hot` keys read in random order, each read followed by a read of a page never read again,
    /// after the cache was filled (and those pages read twice) by a first working set.
    static func hotHitRate(capacityPages: Int, hotPages: Int, rounds: Int) -> Double {
        let cache = PageCache(capacityBytes: capacityPages * pageBytes)
        var rng = SplitMix64(seed: 9)
        for _ in 0..<2 { for i in 0..<capacityPages { _ = read(cache, .init(segment: 1, offset: UInt64(i))) } }
        var hits = 0
        var reads = 0
        var cold = UInt64(0)
        for round in 0..<rounds {
            for _ in 0..<hotPages {
                let hit = read(cache, .init(segment: 2, offset: rng.next() % UInt64(hotPages)))
                if round >= rounds / 2 { reads += 1; hits += hit ? 1 : 0 }
                cold += 1
                _ = read(cache, .init(segment: 3, offset: cold))   // one-off pages streaming through
            }
        }
        return Double(hits) / Double(reads)
    }

    @Test("a new working set of a quarter of the cache displaces what filled it first, with one-off pages streaming")
    func newWorkingSetGetsIn() {
        // 85% when every new page stayed under the hand (the next victim unless read before the next miss).
        let rate = Self.hotHitRate(capacityPages: 1_024, hotPages: 256, rounds: 40)
        #expect(rate > 0.95, "hot pages hit \(Int(rate * 100))% of the time")
    }

    @Test("many more pages read once than fit do not flush a working set read before")
    func onceReadPagesDoNotFlush() {
        // A textbook CLOCK (every new page behind the hand) keeps none of the 256.
        let cache = PageCache(capacityBytes: 1_024 * Self.pageBytes)
        var rng = SplitMix64(seed: 10)
        for _ in 0..<3 { for i in 0..<256 { _ = Self.read(cache, .init(segment: 1, offset: UInt64(i))) } }
        for _ in 0..<20_000 { _ = Self.read(cache, .init(segment: 2, offset: rng.next() % 1_000_000)) }
        var kept = 0
        for i in 0..<256 where cache.page(for: .init(segment: 1, offset: UInt64(i))) != nil { kept += 1 }
        #expect(kept > 230, "\(kept) of the 256 working-set pages still cached")
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

    @Test("a point read's miss caches the page while there is room; once full, a first miss only remembers it")
    func pointReadAdmission() {
        let cache = PageCache(capacityBytes: 64 * Self.pageBytes)
        let key = PageCache.Key(segment: 1, offset: 7)
        #expect(cache.afterMiss(key) == .cache(admitted: false), "room: cached on probation, evicting nothing")
        // Fill every shard.
        for i in 0..<1_000 { cache.insert(Self.page(1), for: .init(segment: 5, offset: UInt64(i))) }
        #expect(cache.afterMiss(key) == .readValueOnly, "full: a first miss does not cache the page")
        #expect(cache.afterMiss(key) == .cache(admitted: true), "a second miss, while the first is remembered, does")
        cache.insert(Self.page(7), for: key, admitted: true)
        #expect(cache.page(for: key)?.bytes.first == 7)
        // Remembered keys are bounded: after many other first misses, a key is a first miss again.
        let other = PageCache.Key(segment: 2, offset: 1)
        #expect(cache.afterMiss(other) == .readValueOnly)
        for i in 0..<10_000 { _ = cache.afterMiss(.init(segment: 4, offset: UInt64(i))) }
        #expect(cache.afterMiss(other) == .readValueOnly, "forgotten after 10,000 other misses")
        #expect(cache.afterMiss(other) == .cache(admitted: true), "and remembered again")
        // A cache of no bytes caches nothing: every miss reads the value only.
        let none = PageCache(capacityBytes: 0)
        #expect(none.afterMiss(key) == .readValueOnly && none.afterMiss(key) == .readValueOnly)
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
