import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// The page cache's adaptive admission: uniformly random point reads of data larger than the cache stop admitting
/// pages (each admission costs a whole-page decode and gains nothing), while a working set still gets in, also
/// after a long random phase; the window's own arithmetic and the ghost list's ages.
@Suite("Engine: page cache admission window")
struct AdmissionWindowTests {
    static let pageBytes = 4_096

    /// A point read as ``PageFetch/value(at:file:cache:storePath:lookingUpRecord:)`` makes it: a hit, or a miss
    /// followed by ``PageCache/afterMiss(_:)`` and, when that says so, an insert. Returns (hit, admitted).
    static func pointRead(_ cache: PageCache, _ key: PageCache.Key) -> (hit: Bool, admitted: Bool) {
        if cache.withPage(for: key, { _ in true }) != nil { return (true, false) }
        guard case .cache(let admitted) = cache.afterMiss(key) else { return (false, false) }
        cache.insert(PageBuffer([UInt8](repeating: 1, count: pageBytes)), for: key, admitted: admitted)
        return (false, admitted)
    }

    /// Admissions among `reads` uniformly random point reads of `pages` pages of segment `segment`.
    static func randomAdmissions(_ cache: PageCache, _ rng: inout SplitMix64, reads: Int, pages: UInt64,
                                 segment: UInt64 = 1) -> Int {
        var admitted = 0
        for _ in 0..<reads where pointRead(cache, .init(segment: segment, offset: rng.next() % pages)).admitted {
            admitted += 1
        }
        return admitted
    }

    @Test("uniformly random point reads of 20 times the cache soon admit a fifth as often as 2Q's fixed window")
    func randomReadsStopAdmitting() {
        let cache = PageCache(capacityBytes: 1_024 * Self.pageBytes)
        var rng = SplitMix64(seed: 11)
        let pages: UInt64 = 20_480
        // The fill, then the first reads: the window starts at its widest (2Q's fixed rule).
        let early = Self.randomAdmissions(cache, &rng, reads: 20_000, pages: pages)
        _ = Self.randomAdmissions(cache, &rng, reads: 200_000, pages: pages)
        let late = Self.randomAdmissions(cache, &rng, reads: 20_000, pages: pages)
        // The widest window (16 to 32 first misses remembered per shard of 1,280 pages) admits about 2% of the
        // misses (380); the narrowest (1 to 2, and the ghosts' false positives) about 0.3% (45).
        #expect(early > 200, "the widest window admits as 2Q does: \(early) admissions")
        #expect(late * 5 < early, "admissions fell from \(early) to \(late) per 20,000 reads")
    }

    @Test("after a long uniformly random phase, a working set of a quarter of the cache gets in again")
    func workingSetWidensTheWindow() {
        let cache = PageCache(capacityBytes: 1_024 * Self.pageBytes)
        var rng = SplitMix64(seed: 12)
        _ = Self.randomAdmissions(cache, &rng, reads: 220_000, pages: 20_480)
        // 256 hot pages, each hot read followed by a read of a page never read again.
        var hits = 0
        var reads = 0
        var cold: UInt64 = 0
        for round in 0..<60 {
            for _ in 0..<256 {
                let hit = Self.pointRead(cache, .init(segment: 2, offset: rng.next() % 256)).hit
                if round >= 50 { reads += 1; hits += hit ? 1 : 0 }
                cold += 1
                _ = Self.pointRead(cache, .init(segment: 3, offset: cold))
            }
        }
        #expect(Double(hits) > 0.9 * Double(reads), "hot pages hit \(hits) of \(reads) times in the last rounds")
    }

    @Test("benefits widen the window to its maximum, regrets at the same rate narrow it to its minimum")
    func windowArithmetic() {
        var window = AdmissionWindow(maximum: 640)
        #expect(window.keys == 640 && window.minimum == 20 && window.step == 10)
        for _ in 0..<100 {
            let stamp = window.admit()
            window.firstHit(stamp: stamp)
            window.regret()
        }
        #expect(window.keys == window.minimum, "as many regrets as benefits: \(window.keys)")
        for _ in 0..<100 { window.firstHit(stamp: window.admit()) }
        #expect(window.keys == window.maximum, "benefits only: \(window.keys)")
        // A hit on a page admitted more than `maximum` admissions ago is no benefit.
        window.regret()
        let old = window.admit()
        for _ in 0..<640 { _ = window.admit() }
        let narrowed = window.keys
        window.firstHit(stamp: old)
        #expect(window.keys == narrowed, "an old admission's first hit left the window at \(narrowed)")
    }

    @Test("ghosts: a key is remembered for one to two generations, forgotten once taken, and few are imagined")
    func ghostGenerations() {
        var ghosts = PageGhosts(capacity: 64)
        ghosts.remember(1, generation: 64)
        let first = ghosts.take(1)
        let again = ghosts.take(1)
        #expect(first && !again, "taken once: \(first), \(again)")
        // 2 then 63 more keys: the generation turns, and 2 is in the previous one.
        ghosts.remember(2, generation: 64)
        for key in UInt64(1_000)..<1_063 { ghosts.remember(key, generation: 64) }
        let previous = ghosts.take(2)
        #expect(previous, "remembered in the previous generation")
        // 3 then 127 more: two turns, and 3 is forgotten.
        ghosts.remember(3, generation: 64)
        for key in UInt64(2_000)..<2_127 { ghosts.remember(key, generation: 64) }
        let forgotten = ghosts.take(3)
        #expect(!forgotten, "two generations later")
        // Two full generations: 64 keys turn the generation, 63 more fill the current one (2,048 bits each, about
        // two keys per word). A key never remembered finds both its bits set about once in 70 look-ups (140).
        var full = PageGhosts(capacity: 64)
        for key in UInt64(3_000)..<3_127 { full.remember(key, generation: 64) }
        var imagined = 0
        for key in UInt64(100_000)..<110_000 {
            var probe = full   // a take forgets what it finds: each look-up on the same two generations
            if probe.take(key) { imagined += 1 }
        }
        #expect(imagined < 250, "\(imagined) of 10,000 keys never remembered were taken")
    }

    @Test("evicted keys: a key remembered is taken once, a later key may take its slot, and few are imagined")
    func evictedKeys() {
        var keys = EvictedKeys(capacity: 1_024)
        keys.remember(7)
        let first = keys.take(7)
        let again = keys.take(7)
        #expect(first && !again, "taken once: \(first), \(again)")
        // Fill the table (2,048 slots) with 4,096 keys: the last key remembered is always there.
        for key in UInt64(10_000)..<14_096 { keys.remember(key) }
        let last = keys.take(14_095)
        #expect(last)
        var kept = 0
        for key in UInt64(10_000)..<14_095 where keys.take(key) { kept += 1 }
        // A slot keeps the last of its keys, so at most 2,047 of the others (14,095's slot was emptied); consecutive
        // keys spread evenly over the slots, two to each.
        #expect(kept > 1_500 && kept <= 2_047, "\(kept) of 4,095 earlier keys still remembered in 2,048 slots")
        for key in UInt64(20_000)..<22_048 { keys.remember(key) }
        var imagined = 0
        for key in UInt64(1_000_000)..<1_100_000 where keys.take(key) { imagined += 1 }
        #expect(imagined < 30, "\(imagined) of 100,000 keys never remembered were taken")
    }
}
