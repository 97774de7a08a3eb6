import Testing
import LucidEngineTestSupport
@testable import LucidEngine

@Suite("TermOrder (a commit group's index entries in term order)")
struct TermOrderTests {
    /// The positions of `terms`, stably sorted by bytes: what `TermOrder.order` must return.
    private func reference(_ terms: [[UInt8]]) -> [Int] {
        terms.indices.sorted { a, b in
            terms[a] == terms[b] ? a < b : terms[a].lexicographicallyPrecedes(terms[b])
        }
    }

    private func packed(_ terms: [[UInt8]]) -> PackedKeys {
        var keys = PackedKeys()
        for term in terms { term.withUnsafeBytes { keys.append($0) } }
        return keys
    }

    /// `count` terms drawn from `distinct` values made by `make`.
    private func draw(_ count: Int, distinct: Int, seed: UInt64, _ make: (Int) -> [UInt8]) -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        let values = (0 ..< distinct).map(make)
        return (0 ..< count).map { _ in values[Int(rng.next() % UInt64(distinct))] }
    }

    /// Values whose summaries tie or nearly tie: prefixes of each other, trailing zeros, the empty term, 8 and 16
    /// byte boundaries, and long terms sharing their first 16 bytes (told apart only past them).
    private static func tricky(_ v: Int) -> [UInt8] {
        let shared = [UInt8](repeating: 0x41, count: 16)
        switch v % 8 {
        case 0: return []
        case 1: return [UInt8](repeating: 0, count: v % 17)
        case 2: return Array([6, 0x61, 0x62].prefix(v % 4))
        case 3: return [6, 0x61, 0x62, 0, 1] + [UInt8](repeating: 0, count: v % 3)
        case 4: return shared + [UInt8(truncatingIfNeeded: v)]
        case 5: return shared + [UInt8](repeating: 0x42, count: 20) + [UInt8(truncatingIfNeeded: v), 0]
        case 6: return Array(shared.prefix(8 + v % 9))
        default: return [3] + (0 ..< 8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) }
        }
    }

    @Test("few distinct terms: grouped, and the same order as a stable sort", arguments: [
        (1000, 12), (1000, 1), (37, 5), (4096, 200), (2, 1), (600, 150),
    ] as [(Int, Int)])
    func grouped(count: Int, distinct: Int) {
        for (seed, make) in [(1, Self.tricky), (2, { v in [6] + Array("genre \(v)".utf8) + [0, 1] })]
            as [(UInt64, (Int) -> [UInt8])] {
            let terms = draw(count, distinct: distinct, seed: seed, make)
            let keys = packed(terms)
            let grouped = keys.withView { TermOrder.grouped($0) }
            #expect(grouped != nil, "\(distinct) distinct terms of \(count) group")
            #expect(grouped == reference(terms))
            #expect(keys.withView { TermOrder.order($0) } == reference(terms))
        }
    }

    @Test("mostly distinct terms: the grouping gives up, the comparison sort orders them", arguments: [
        (1000, 1000), (1000, 400), (3, 3), (5000, 4000),
    ] as [(Int, Int)])
    func sorted(count: Int, distinct: Int) {
        for seed: UInt64 in [3, 4] {
            // Distinct draws: values spread over the tricky shapes and plain integers.
            let terms = draw(count, distinct: distinct, seed: seed) { v in v % 3 == 0 ? Self.tricky(v) : Self.tricky(v * 8 + 7) }
            let keys = packed(terms)
            if Set(terms).count > Swift.max(count / 4, 1) {
                #expect(keys.withView { TermOrder.grouped($0) } == nil)
            }
            #expect(keys.withView { TermOrder.sorted($0) } == reference(terms))
            #expect(keys.withView { TermOrder.order($0) } == reference(terms))
        }
    }

    @Test("long terms sharing their first 16 bytes and their length do not share one hash bucket")
    func longTermsSpread() {
        let shared = [UInt8](repeating: 0x55, count: 16)
        let terms = (0 ..< 256).map { shared + [0x10, UInt8($0), 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80] }
        let hashes = terms.map { term in
            term.withUnsafeBytes { TermOrder.Summary($0).hash($0) & 1023 }
        }
        #expect(Set(hashes).count > 128, "\(Set(hashes).count) buckets for 256 terms")
        let keys = packed(terms + terms.reversed())
        #expect(keys.withView { TermOrder.order($0) } == reference(terms + terms.reversed()))
    }

    @Test("terms built to share one slot of the grouping's table: it gives up, the sort orders them")
    func collidingTerms() {
        // 100 distinct integer terms whose hashes fall in one slot of the 512-slot table of a 400-entry run.
        let slots = 512
        var colliding: [[UInt8]] = []
        var v: Int64 = 0
        var target: UInt64?
        while colliding.count < 100 {
            let term = IndexValue.int(v).encoded
            v += 1
            let slot = term.withUnsafeBytes { TermOrder.Summary($0).hash($0) } & UInt64(slots - 1)
            if target == nil { target = slot }
            if slot == target { colliding.append(term) }
        }
        let terms = colliding + colliding + colliding.reversed() + colliding
        let keys = packed(terms)
        #expect(keys.withView { TermOrder.grouped($0) } == nil, "a probe past \(TermOrder.maximumProbes) slots gives up")
        #expect(keys.withView { TermOrder.order($0) } == reference(terms))
        // Without the collisions the same number of distinct terms groups.
        let plain = (0 ..< 100).map { IndexValue.int(Int64($0) * 7_919).encoded }
        let plainTerms = plain + plain + plain.reversed() + plain
        #expect(packed(plainTerms).withView { TermOrder.grouped($0) } == reference(plainTerms))
    }

    @Test("empty and single runs")
    func small() {
        #expect(PackedKeys().withView { TermOrder.order($0) } == [])
        #expect(packed([[9, 9]]).withView { TermOrder.order($0) } == [0])
    }
}
