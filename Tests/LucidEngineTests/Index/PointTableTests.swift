import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `PointTable` against a dictionary: updates, removals (with the slots after a removed key shifted back), growths
/// and copies, on keys of every length it takes, with the table's own invariants checked along the way.
@Suite("Point table")
struct PointTableTests {
    /// A location that differs in every field from its neighbours', with lengths up to the format's 4 MiB.
    static func location(_ n: Int) -> RecordLocation {
        RecordLocation(segment: UInt32(n % 11), pageOffset: UInt32(truncatingIfNeeded: n &* 4099),
                       valueOffset: UInt32(n % 8191), valueLength: UInt32(n % 3 == 0 ? Format.maxValueLength : n % 5000),
                       hasTerms: n % 2 == 0, sequence: UInt64(n) << 33 | UInt64(n))
    }

    /// Keys of 0 to 16 bytes over a small alphabet with zeros (so that keys differing only in trailing zeros, and
    /// so only in length, are common), plus such keys listed outright.
    static func keyPool(_ rng: inout SplitMix64, count: Int) -> [[UInt8]] {
        var pool: Set<[UInt8]> = [[], [0], [0, 0], [UInt8](repeating: 0, count: 8), [UInt8](repeating: 0, count: 9),
                                  [UInt8](repeating: 0, count: 16), [UInt8](repeating: 0xFF, count: 16), [1], [1, 0]]
        while pool.count < count {
            pool.insert((0 ..< rng.int(0 ... 16)).map { _ in [0, 0, 1, 0x80, 0xFF][rng.int(0 ..< 5)] })
        }
        return pool.sorted { $0.lexicographicallyPrecedes($1) }
    }

    static func key(_ bytes: [UInt8]) -> PointTable.Key { bytes.withUnsafeBytes { PointTable.Key($0)! } }

    /// The keys whose answer differs from the model's.
    static func differences(_ table: PointTable, _ model: [[UInt8]: RecordLocation], pool: [[UInt8]]) -> [String] {
        var diffs: [String] = []
        for bytes in pool where table.location(forKey: key(bytes)) != model[bytes] {
            diffs.append("\(bytes): \(String(describing: table.location(forKey: key(bytes)))), expected \(String(describing: model[bytes]))")
        }
        if table.count != model.count { diffs.append("count \(table.count), expected \(model.count)") }
        return diffs
    }

    @Test("random updates and removals match a dictionary through growths and copies", arguments: [UInt64(0x9017_0001), 0x9017_0002])
    func model(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let pool = Self.keyPool(&rng, count: 600)
        var table = PointTable()
        var model: [[UInt8]: RecordLocation] = [:]
        var growths = 0
        for step in 0 ..< 12_000 {
            let bytes = pool[rng.int(0 ..< pool.count)]
            // Puts outweigh removals early on, so that the table fills and grows, then they balance.
            if rng.chance(step < 4_000 ? 0.75 : 0.5) {
                if model[bytes] == nil && table.needsGrowth(adding: 1) {
                    table = table.grown(toHold: table.count + 1)
                    growths += 1
                }
                table.update(Self.location(step), forKey: Self.key(bytes))
                model[bytes] = Self.location(step)
            } else {
                table.remove(Self.key(bytes))
                model[bytes] = nil
            }
            if rng.chance(0.001) { table = PointTable(copying: table) }
            if step % 500 == 499 {
                let problems = table.checkInvariants()
                #expect(problems.isEmpty, "seed \(seed) step \(step): \(problems)")
                let diffs = Self.differences(table, model, pool: pool)
                #expect(diffs.isEmpty, "seed \(seed) step \(step): \(diffs.prefix(5))")
                if !problems.isEmpty || !diffs.isEmpty { return }
            }
        }
        #expect(growths >= 3, "seed \(seed): the table grew \(growths) times")
    }

    @Test("removals from a table at its load limit keep every key reachable across the wrap-around")
    func fullTableChurn() {
        var rng = SplitMix64(seed: 0x9017_0003)
        let pool = Self.keyPool(&rng, count: 400)
        // A small table kept at its limit: long probe runs that wrap past the last slot.
        let table = PointTable(reserving: 20)
        let limit = Int(Double(table.capacity) * PointTable.maxLoad)
        var model: [[UInt8]: RecordLocation] = [:]
        for step in 0 ..< 20_000 {
            if model.count < limit {
                let bytes = pool[rng.int(0 ..< pool.count)]
                table.update(Self.location(step), forKey: Self.key(bytes))
                model[bytes] = Self.location(step)
            } else {
                let bytes = model.keys.sorted { $0.lexicographicallyPrecedes($1) }[rng.int(0 ..< model.count)]
                table.remove(Self.key(bytes))
                model[bytes] = nil
            }
            let problems = table.checkInvariants()
            let diffs = Self.differences(table, model, pool: pool)
            #expect(problems.isEmpty && diffs.isEmpty, "step \(step): \(problems) \(diffs.prefix(5))")
            if !problems.isEmpty || !diffs.isEmpty { return }
        }
    }

    @Test("keys of up to 16 bytes are the table's; longer ones are not, and equal words of other lengths differ")
    func keys() {
        let sixteen = [UInt8](repeating: 7, count: 16)
        #expect(sixteen.withUnsafeBytes { PointTable.Key($0) } != nil)
        #expect((sixteen + [7]).withUnsafeBytes { PointTable.Key($0) } == nil)
        #expect(Self.key([]) != Self.key([0]))
        #expect(Self.key([0]) != Self.key([0, 0]))
        #expect(Self.key([1, 2, 3, 4, 5, 6, 7, 8]) != Self.key([1, 2, 3, 4, 5, 6, 7, 8, 0]))
        #expect(Self.key([1, 2, 3]) == ([0, 1, 2, 3] as [UInt8]).withUnsafeBytes { PointTable.Key(UnsafeRawBufferPointer(rebasing: $0[1...]))! })

        let table = PointTable()
        table.update(Self.location(3), forKey: Self.key([0]))
        table.update(Self.location(4), forKey: Self.key([0, 0]))
        #expect(table.location(forKey: Self.key([0])) == Self.location(3))
        #expect(table.location(forKey: Self.key([0, 0])) == Self.location(4))
        #expect(table.location(forKey: Self.key([])) == nil)
        // The largest value length and the terms flag survive the slot's packing.
        #expect(table.location(forKey: Self.key([0]))?.valueLength == UInt32(Format.maxValueLength))
        #expect(table.location(forKey: Self.key([0, 0]))?.hasTerms == true)
    }

    @Test("a large table lives in a mapping of whole huge pages, and works as a small one")
    func largeTable() {
        for capacity in [104_858, 1_000_000, 1_818_182] {
            let length = PointTable.mappedLength(capacity)
            #expect(length % PointTable.hugePageBytes == 0 && length >= capacity * MemoryLayout<PointTable.Slot>.stride
                    && length - capacity * MemoryLayout<PointTable.Slot>.stride < PointTable.hugePageBytes)
        }
        var rng = SplitMix64(seed: 0x9017_0004)
        var table = PointTable(reserving: 120_000)
        #expect(table.isMapped && table.bytes >= PointTable.mappedBytes)
        #expect(UInt(bitPattern: table.slots) % UInt(PointTable.hugePageBytes) == 0)
        var model: [[UInt8]: RecordLocation] = [:]
        for n in 0 ..< 150_000 {
            let bytes = rng.bytes(rng.int(1 ... 16))
            if model[bytes] == nil && table.needsGrowth(adding: 1) { table = table.grown(toHold: table.count + 1) }
            table.update(Self.location(n), forKey: Self.key(bytes))
            model[bytes] = Self.location(n)
        }
        for (i, bytes) in model.keys.enumerated() where i % 2 == 0 {
            table.remove(Self.key(bytes))
            model[bytes] = nil
        }
        let copy = PointTable(copying: table)
        #expect(table.checkInvariants().isEmpty && copy.checkInvariants().isEmpty)
        for (bytes, location) in model.prefix(20_000) {
            #expect(table.location(forKey: Self.key(bytes)) == location && copy.location(forKey: Self.key(bytes)) == location)
        }
        #expect(table.count == model.count && copy.count == model.count)
    }
}
