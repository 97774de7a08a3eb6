@testable import Lucid
import Testing

/// The decoded-entity cache's adaptive admission: uniformly random reads of many more records than fit soon stop
/// admitting (each admission an insertion and an eviction for nothing), and a working set read again gets in,
/// also after a long random phase.
@Suite("Entity cache admission")
struct EntityCacheAdmissionTests {
    final class Box: Sendable {}

    /// Room for 256 entries of 256 bytes.
    static func table() -> EntityCacheTable { EntityCacheTable(capacityBytes: 256 * 256) }

    static func key(_ i: Int) -> EntityCacheKey {
        EntityCacheKey(withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) })
    }

    /// A read as `DiskStore` makes it: a hit takes the entry; a miss inserts the decoded entity when the probe
    /// admits it. Returns (hit, inserted).
    static func read(_ table: EntityCacheTable, _ i: Int) -> (hit: Bool, inserted: Bool) {
        let key = key(i)
        let probe = table.probe(key, at: 1)
        if probe.box != nil && probe.current { return (true, false) }
        guard probe.admit else { return (false, false) }
        table.insert(Box(), forKey: key, sequence: 1, at: 1, cost: 256)
        return (false, true)
    }

    /// Inserts among `reads` uniformly random reads of `keys` keys.
    static func randomInserts(_ table: EntityCacheTable, _ state: inout UInt64, reads: Int, keys: Int) -> Int {
        var inserted = 0
        for _ in 0..<reads {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            if read(table, Int((state >> 33) % UInt64(keys))).inserted { inserted += 1 }
        }
        return inserted
    }

    @Test("mostlyMisses follows the last period's reads: true at first, false once they mostly hit, true again once they mostly miss, always true without a bound")
    func mostlyMissesFollowsReads() {
        let table = Self.table()
        #expect(table.mostlyMisses)
        let period = EntityCacheTable.samplePeriod
        for i in 0..<period { _ = Self.read(table, i) }   // misses, each inserted (the cache is not full)
        #expect(table.mostlyMisses)
        for round in 0..<2 { for i in 0..<period where Self.read(table, i).hit == false { Issue.record("round \(round): \(i) missed") } }
        #expect(!table.mostlyMisses, "after \(2 * period) hits")
        // Two thirds hits (the misses probe only, so that nothing is evicted): still mostly hits.
        for i in 0..<(2 * period) {
            if i % 3 == 0 { _ = table.probe(Self.key(1_000_000 + i), at: 1) } else { #expect(Self.read(table, i % period).hit) }
        }
        #expect(!table.mostlyMisses)
        for i in 0..<(2 * period) { _ = table.probe(Self.key(2_000_000 + i), at: 1) }
        #expect(table.mostlyMisses, "after \(2 * period) misses")
        let off = EntityCacheTable(capacityBytes: 0)
        for _ in 0..<(2 * period) { _ = Self.read(off, 1) }
        #expect(off.mostlyMisses)
    }

    @Test("uniformly random reads of 800 times the cache soon admit less than a quarter as often as at first")
    func randomReadsStopAdmitting() {
        let table = Self.table()
        var state: UInt64 = 21
        _ = Self.randomInserts(table, &state, reads: 256, keys: 200_000)   // the fill
        let early = Self.randomInserts(table, &state, reads: 5_000, keys: 200_000)
        _ = Self.randomInserts(table, &state, reads: 300_000, keys: 200_000)
        let late = Self.randomInserts(table, &state, reads: 20_000, keys: 200_000)
        // At first the filter notes up to 16,384 keys and admits about one miss in sixteen, most by false
        // positives (the key hashes are seeded per process): 220-280 of the first 5,000 reads, 100-120 of 20,000
        // reads once the window is narrow, in six runs.
        #expect(early > 150, "the widest window admits as the fixed filter did: \(early) inserts")
        #expect(late < early, "inserts fell from \(early) per 5,000 reads to \(late) per 20,000")
    }

    @Test("after a long uniformly random phase, a working set of a quarter of the cache gets in again")
    func workingSetGetsIn() {
        let table = Self.table()
        var state: UInt64 = 22
        _ = Self.randomInserts(table, &state, reads: 320_000, keys: 200_000)
        let narrowed = table.admissionWindow
        #expect(narrowed.keys <= 4 * narrowed.minimum, "after the random reads: \(narrowed)")
        // 64 hot entries, each hot read followed by a read of a record never read again.
        var hits = 0
        var reads = 0
        var cold = 1_000_000
        for round in 0..<60 {
            for _ in 0..<64 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let hit = Self.read(table, 500_000 + Int((state >> 33) % 64)).hit
                if round >= 50 { reads += 1; hits += hit ? 1 : 0 }
                cold += 1
                _ = Self.read(table, cold)
            }
        }
        #expect(Double(hits) > 0.9 * Double(reads), "hot entries hit \(hits) of \(reads) times in the last rounds")
    }

    @Test("a miss of an entry evicted by an admission narrows the window; the admitted entry's first hit widens it")
    func regretsAndBenefits() {
        let table = Self.table()
        for i in 0..<256 { _ = Self.read(table, i) }   // the fill: each key admitted at its first miss
        // Key 1,000 missed twice: admitted, it evicts the entry under the hand, key 0 (read once, unreferenced).
        let first = Self.read(table, 1_000)
        let second = Self.read(table, 1_000)
        #expect(!first.inserted && second.inserted)
        let widest = table.admissionWindow.keys
        let regret = Self.read(table, 0)
        let narrowed = table.admissionWindow.keys
        #expect(!regret.hit && narrowed < widest, "a regret: \(widest) → \(narrowed)")
        let hit = Self.read(table, 1_000)
        let widened = table.admissionWindow.keys
        #expect(hit.hit && widened > narrowed, "a benefit: \(narrowed) → \(widened)")
        _ = Self.read(table, 1_000)
        #expect(table.admissionWindow.keys == widened, "only the first hit counts")
    }
}
