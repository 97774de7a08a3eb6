import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `SeenKeys` answers as a set does, before and after its list becomes a set.
@Suite("SeenKeys")
struct SeenKeysTests {
    @Test("insert reports new keys exactly as Set.insert does, across the list-to-set switch",
          arguments: [5, SeenKeys.listLimit, SeenKeys.listLimit + 1, 300])
    func matchesASet(distinct: Int) {
        var rng = SplitMix64(seed: UInt64(distinct))
        var seen = SeenKeys()
        var model = Set<[UInt8]>()
        for _ in 0 ..< distinct * 3 {
            let n = Int(rng.next() % UInt64(distinct))
            let key = [UInt8(n & 0xFF), UInt8(n >> 8), 7]
            #expect(seen.insert(key) == model.insert(key).inserted, "key \(n)")
        }
        // Every key is now known, whichever form holds it: first the ones not drawn yet, then all of them again.
        for n in 0 ..< distinct {
            let key = [UInt8(n & 0xFF), UInt8(n >> 8), 7]
            #expect(seen.insert(key) == !model.contains(key))
            model.insert(key)
        }
        for n in 0 ..< distinct {
            let isNew = seen.insert([UInt8(n & 0xFF), UInt8(n >> 8), 7])
            #expect(!isNew, "key \(n) forgotten")
        }
    }
}
