import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// The page cache's open-addressing index against a dictionary model: inserts, replacements and removals (with
/// their backward shifts, across the table's wrap-around) keep every lookup right.
@Suite("Cache: page slot table")
struct PageSlotTableTests {
    @Test("random inserts, replacements and removals match a dictionary", arguments: [8, 64, 5_000])
    func matchesModel(keyRange: Int) {
        var rng = SplitMix64(seed: UInt64(keyRange))
        var table = PageSlotTable()
        var model: [UInt64: Int] = [:]
        // Keys as the cache makes them: a few segments, page offsets of a few KiB apart.
        func key(_ n: Int) -> UInt64 { UInt64(n % 3) << 32 | UInt64(64 + (n / 3) * 4_096) }
        for step in 0..<60_000 {
            let k = key(Int(rng.next() % UInt64(keyRange)))
            switch rng.next() % 3 {
            case 0, 1:
                let v = Int(rng.next() % 1_000_000)
                table.set(v, for: k)
                model[k] = v
            default:
                table.remove(k)
                model[k] = nil
            }
            let probe = key(Int(rng.next() % UInt64(keyRange)))
            if table.value(for: probe) != model[probe] {
                Issue.record("step \(step): \(probe) gives \(String(describing: table.value(for: probe))), expected \(String(describing: model[probe]))")
                return
            }
        }
        #expect(table.count == model.count)
        #expect(Dictionary(uniqueKeysWithValues: table.entries.map { ($0.key, $0.value) }) == model)
        for n in 0..<keyRange { #expect(table.value(for: key(n)) == model[key(n)]) }
    }

    @Test("removing every key of a long probe run leaves the others reachable")
    func removalInsideRuns() {
        var table = PageSlotTable()
        // Many keys in a small table make long runs that wrap around the end.
        let keys = (0..<200).map { UInt64($0) << 12 }
        for (i, k) in keys.enumerated() { table.set(i, for: k) }
        for (i, k) in keys.enumerated() where i % 3 == 0 { table.remove(k) }
        for (i, k) in keys.enumerated() {
            #expect(table.value(for: k) == (i % 3 == 0 ? nil : i), "key \(i)")
        }
        #expect(table.count == keys.count - (keys.count + 2) / 3)
    }
}
