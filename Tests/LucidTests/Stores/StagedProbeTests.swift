import Foundation
@testable import Lucid
import LucidEngine
import Testing

/// A query's walk stages its keys (``StagedKeys``) and probes the entity cache for them together
/// (``EntityCacheTable/probe(_:at:into:)``): each probe must be the one a probe of that key alone would give, in
/// order, with the table left as the single probes leave it.
@Suite("Entity cache: staged probes")
struct StagedProbeTests {
    final class Box: Sendable {}

    static func bytes(_ seed: Int, count: Int) -> [UInt8] {
        var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }

    @Test("staged keys of 0 to 40 bytes give back their bytes, heads and hashes")
    func stagedKeysRoundTrip() {
        var staged = StagedKeys()
        let keys = (0...40).map { Self.bytes($0, count: $0) } + [[0, 0, 0], [0xFF], Array(repeating: 0, count: 16)]
        for key in keys { key.withUnsafeBytes { staged.append($0) } }
        #expect(staged.count == keys.count)
        for (i, key) in keys.enumerated() {
            #expect(staged.key(i) == key, "key \(i)")
            let head = key.withUnsafeBytes(EntityCacheKeyHead.init)
            #expect(staged[i].head == head, "head \(i)")
            #expect(staged[i].hash == EntityCacheKey(key).hash, "hash \(i)")
            if head.isWhole { #expect(head.bytes == key, "whole head \(i)") }
        }
        staged.removeAll()
        #expect(staged.isEmpty)
        [UInt8]([1, 2, 3]).withUnsafeBytes { staged.append($0) }
        #expect(staged.key(0) == [1, 2, 3])
    }

    /// Two tables made alike: the same entries, with current, stale and absent keys among those probed.
    static func twinTables(capacity: Int) -> (EntityCacheTable, EntityCacheTable, [[UInt8]], [ObjectIdentifier: Int]) {
        let a = EntityCacheTable(capacityBytes: capacity)
        let b = EntityCacheTable(capacityBytes: capacity)
        var boxes: [ObjectIdentifier: Int] = [:]
        var keys: [[UInt8]] = []
        for i in 0..<300 {
            // Short keys (an identifier's storage key: 9 bytes) and long ones (24 bytes, compared byte by byte).
            let key = Self.bytes(i, count: i % 3 == 0 ? 24 : 9)
            keys.append(key)
            guard i % 5 != 4 else { continue }   // never inserted: absent
            // Entries seen at snapshots 1...2; those of i % 7 == 0 at 5...5 only (stale for a probe at 2).
            let seen: UInt64 = i % 7 == 0 ? 5 : 1
            let boxA = Box(), boxB = Box()
            boxes[ObjectIdentifier(boxA)] = i
            boxes[ObjectIdentifier(boxB)] = i
            for (table, box) in [(a, boxA), (b, boxB)] {
                table.insert(box, forKey: EntityCacheKey(key), sequence: UInt64(i + 1), at: seen, cost: 200)
                if seen == 1 { table.confirm(EntityCacheKey(key), sequence: UInt64(i + 1), at: 2) }
            }
        }
        return (a, b, keys, boxes)
    }

    @Test("a staged probe of present, stale, absent, short and long keys gives each key's own probe",
          arguments: [1 << 20, 40 * 296, 0])
    func matchesSingleProbes(capacity: Int) {
        // 1 MiB holds every entry; 40 entries' room keeps the table full (misses go through the admission filter);
        // no room: every probe is empty.
        let (staged, single, keys, boxes) = Self.twinTables(capacity: capacity)
        var order = Array(keys.indices)
        var state: UInt64 = 9
        for i in order.indices.reversed() {   // a fixed shuffle, with every key probed twice
            state = state &* 6364136223846793005 &+ 1442695040888963407
            order.swapAt(i, Int((state >> 33) % UInt64(i + 1)))
        }
        order += order.prefix(100)
        var batch = StagedKeys()
        for start in stride(from: 0, to: order.count, by: 50) {
            let part = order[start ..< min(start + 50, order.count)]
            batch.removeAll()
            for k in part { keys[k].withUnsafeBytes { batch.append($0) } }
            withUnsafeTemporaryAllocation(of: EntityCacheTable.Probe.self, capacity: part.count) { probes in
                staged.probe(batch, at: 2, into: probes)
                for (j, k) in part.enumerated() {
                    let got = (probes.baseAddress! + j).move()
                    let want = single.probe(EntityCacheKey(keys[k]), at: 2)
                    #expect((got.box == nil) == (want.box == nil), "key \(k): entry")
                    if let g = got.box, let w = want.box {
                        #expect(boxes[ObjectIdentifier(g)] == k && boxes[ObjectIdentifier(w)] == k, "key \(k): box")
                    }
                    #expect(got.sequence == want.sequence && got.current == want.current && got.admit == want.admit,
                            "key \(k): \(got) against \(want)")
                }
            }
        }
        // The batched probe prefetches three lines per slot, enough for a slot of at most 128 bytes.
        #expect(MemoryLayout<EntityCacheTable.Slot>.stride <= 128)
        let (s, o) = (staged.statistics, single.statistics)
        #expect(s.entries == o.entries && s.hits == o.hits && s.misses == o.misses, "\(s) against \(o)")
        if capacity > 0 { #expect(s.hits > 0 && s.misses > 0, "\(s)") }
    }

    @Test("queries walking more keys than are staged at once (64) return what uncached reads return")
    func longWalks() async throws {
        let temp = try TemporaryStore()
        let cached = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 1 << 20)
        let plain = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 0)
        _ = try await cached.set((0..<400).map {
            Book.remote($0, "t\($0)", genre: $0 % 2 == 0 ? "even" : "odd", rating: Double($0 % 50))
        })
        for i in stride(from: 0, to: 400, by: 3) { _ = try cached.getNow(.remote(i)) }   // some cached, some not
        let queries: [Query<Book>] = [
            .filter(.genre == .string("even")).with(limit: 150),
            .filter(.genre == .string("odd")).order([.desc(by: .identifier)]).with(offset: 10).with(limit: 130),
            .filter(.rating >= .double(10)).order([.asc(by: .rating)]).with(limit: 200),
            .filter(.rating >= .double(40)).order([.asc(by: .rating)]).with(limit: 70),
        ]
        for _ in 0..<2 {   // the second round hits what the first admitted
            for query in queries {
                let got = try cached.searchNow(query).entities
                let want = try plain.searchNow(query).entities
                #expect(got == want, "\(query)")
                #expect(got.count == query.limit, "\(query)")
            }
        }
        #expect(cached.entityCacheStatistics.hits > 0)
    }
}
