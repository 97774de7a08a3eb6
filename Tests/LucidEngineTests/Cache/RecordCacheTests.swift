import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// The cache of single decoded records: a value is admitted on its key's second miss, a record read since it came
/// in keeps its slot against one competing key's second miss, a value found is always the one cached under its
/// key, the byte budget and the length limit hold, a segment's values go with it, and concurrent readers agree.
@Suite("Engine: record cache")
struct RecordCacheTests {
    static func key(_ n: Int, segment: UInt32 = 1, length: Int = 200) -> RecordCache.Key {
        .init(segment: segment, pageOffset: UInt32(64 + (n / 16) * 4096), valueOffset: UInt32((n % 16) * 250),
              valueLength: UInt32(length))
    }

    /// The bytes a record under `key` holds: derived from the key, so a value found under the wrong key shows.
    static func value(_ key: RecordCache.Key) -> [UInt8] {
        var rng = SplitMix64(seed: key.hash)
        return (0..<Int(key.valueLength)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }

    /// Reads `key` as the engine does: a miss decodes the value and inserts it when the cache says so.
    /// Returns whether it hit.
    @discardableResult
    static func read(_ cache: RecordCache, _ key: RecordCache.Key) -> Bool {
        switch cache.lookup(key) {
        case .hit(let found):
            #expect(found == value(key), "a hit returns the value cached under its key")
            return true
        case .miss(let admit):
            if admit { cache.insert(value(key), for: key) }
            return false
        }
    }

    /// A key other than `key` with the same slot.
    static func rival(of key: RecordCache.Key, in cache: RecordCache) -> RecordCache.Key {
        let home = cache.place(key.hash)
        for n in 1... {
            let other = Self.key(n, segment: 2)
            let place = cache.place(other.hash)
            if place.shard == home.shard && place.slot == home.slot { return other }
        }
        fatalError("unreachable")
    }

    @Test("a value is cached on its key's second miss and found after; never under another key")
    func admitsOnSecondMiss() {
        let cache = RecordCache(capacityBytes: 1 << 20)
        let a = Self.key(1)
        #expect(!Self.read(cache, a) && cache.bytes == 0, "a first miss caches nothing")
        #expect(!Self.read(cache, a) && cache.bytes == 200, "a second miss caches the value")
        #expect(Self.read(cache, a) && Self.read(cache, a))
        #expect(cache.hits == 2 && cache.misses == 2)
        // A key sharing the slot misses (it is never given the value held there).
        let b = Self.rival(of: a, in: cache)
        #expect(!Self.read(cache, b))
        #expect(cache.checkInvariants().isEmpty, "\(cache.checkInvariants())")
    }

    @Test("a value read since it came in keeps its slot against one second miss of another key, not two")
    func secondChance() {
        let cache = RecordCache(capacityBytes: 1 << 20)
        let a = Self.key(3)
        Self.read(cache, a); Self.read(cache, a)
        #expect(Self.read(cache, a), "a is cached and now read")
        let b = Self.rival(of: a, in: cache)
        #expect(!Self.read(cache, b) && !Self.read(cache, b), "b misses twice")
        #expect(Self.read(cache, a), "a kept its slot (and is read again)")
        #expect(!Self.read(cache, b), "b's third miss passes over a, read again")
        #expect(!Self.read(cache, b), "b's fourth miss, a unread since: b replaces it")
        #expect(Self.read(cache, b) && !Self.read(cache, a))
        #expect(cache.bytes == 200 && cache.checkInvariants().isEmpty, "\(cache.checkInvariants())")
    }

    @Test("uniformly random reads of many more keys than slots rarely admit; a small working set read again does")
    func scanResistance() {
        let cache = RecordCache(capacityBytes: 64 << 10)   // 16 slots per shard, 256 in all
        var rng = SplitMix64(seed: 4)
        for _ in 0..<20_000 { Self.read(cache, Self.key(Int(rng.next() % 1_000_000), segment: 3)) }
        let admitted = cache.bytes / 200
        #expect(admitted < 256 / 4, "random reads admitted \(admitted) values into 256 slots")
        let hot = (0..<20).map { Self.key($0, segment: 4) }
        for _ in 0..<4 { for key in hot { Self.read(cache, key) } }
        let hits = hot.filter { Self.read(cache, $0) }.count
        #expect(hits >= 16, "a small working set read four times is cached: \(hits) of 20 hit")
        #expect(cache.checkInvariants().isEmpty, "\(cache.checkInvariants())")
    }

    @Test("the byte budget holds; longer values than the limit are never cached")
    func budget() {
        let cache = RecordCache(capacityBytes: 16 * 4096)   // 4 KiB per shard
        for n in 0..<2_000 {
            let key = Self.key(n, length: 1_000)
            Self.read(cache, key); Self.read(cache, key)
        }
        #expect(cache.bytes <= 16 * 4096 && cache.bytes >= 16 * 4 * 1_000 / 2, "\(cache.bytes)")
        #expect(cache.checkInvariants().isEmpty, "\(cache.checkInvariants())")

        let large = RecordCache(capacityBytes: 64 << 20)
        let long = Self.key(1, length: RecordCache.maximumValueLength + 1)
        for _ in 0..<4 { #expect(!Self.read(large, long)) }
        #expect(large.bytes == 0)
    }

    @Test("dropping a segment drops its values only")
    func removeSegment() {
        let cache = RecordCache(capacityBytes: 1 << 20)
        let keys = (0..<50).map { Self.key($0, segment: 5) } + (0..<50).map { Self.key($0, segment: 6) }
        for key in keys { Self.read(cache, key); Self.read(cache, key) }
        let before = keys.filter { Self.read(cache, $0) }
        #expect(before.count > 80, "most were cached: \(before.count)")
        cache.removeAll(segment: 5)
        #expect(!keys.prefix(50).contains { Self.read(cache, $0) }, "segment 5's values are gone")
        #expect(before.filter { $0.segment == 6 }.allSatisfy { Self.read(cache, $0) }, "segment 6's stay")
        #expect(cache.bytes == before.filter { $0.segment == 6 }.count * 200)
        #expect(cache.checkInvariants().isEmpty, "\(cache.checkInvariants())")
    }

    @Test("threads reading, admitting and dropping the same keys only ever find the value of the key they ask for")
    func concurrentReaders() async {
        let cache = RecordCache(capacityBytes: 32 << 10)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    var rng = SplitMix64(seed: UInt64(t))
                    for i in 0..<20_000 {
                        Self.read(cache, Self.key(Int(rng.next() % 600), segment: UInt32(7 + i % 2)))
                        if t == 0 && i % 5_000 == 0 { cache.removeAll(segment: 8) }
                    }
                }
            }
        }
        #expect(cache.hits > 0 && cache.checkInvariants().isEmpty, "\(cache.checkInvariants())")
    }
}
