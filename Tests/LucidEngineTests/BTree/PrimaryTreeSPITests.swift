@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Testing

/// `FuzzingSupport.PrimaryTree`, the B-tree the micro-benchmarks `btree-insert-remove-random` and
/// `btree-lookup-random` measure: it must be the engine's tree doing the work, with its answers.
@Suite("Fuzzing SPI: PrimaryTree")
struct PrimaryTreeSPITests {
    @Test("inserts, replaces, removes and looks up keys like a dictionary; snapshots do not change")
    func matchesADictionary() {
        var tree = FuzzingSupport.PrimaryTree()
        var model: [[UInt8]: UInt64] = [:]
        var rng = SplitMix64(seed: 0xB7EE)
        // Short keys of few distinct bytes, so that steps often replace or remove a key that is there.
        for step in 0..<6_000 {
            let key = (0..<rng.int(0...12)).map { _ in UInt8(truncatingIfNeeded: rng.next() % 5) }
            if rng.int(0..<4) == 0 {
                let removed = tree.remove(key)
                let removedInModel = model.removeValue(forKey: key) != nil
                #expect(removed == removedInModel, "step \(step)")
            } else {
                let new = tree.insert(key, sequence: UInt64(step))
                let newInModel = model.updateValue(UInt64(step), forKey: key) == nil
                #expect(new == newInModel, "step \(step)")
            }
        }
        #expect(model.count > 1_000)
        tree.checkInvariants()
        #expect(tree.count == model.count)
        for (key, sequence) in model { #expect(tree.sequence(forKey: key) == sequence) }
        #expect(tree.sequence(forKey: [0xFF]) == nil, "a key no step wrote (their bytes are below 5)")

        // Changes after a copy leave the copy as it was: a new key, a replaced one, a removed one.
        let snapshot = tree
        let (replaced, removed) = (model.keys.min { $0.count < $1.count }!, model.keys.max { $0.count < $1.count }!)
        let new = tree.insert([0xFF], sequence: 1)
        let wasThere = tree.insert(replaced, sequence: 2)
        let wasRemoved = tree.remove(removed)
        #expect(new && !wasThere && wasRemoved)
        tree.checkInvariants()
        snapshot.checkInvariants()
        #expect(tree.count == model.count)
        #expect(snapshot.count == model.count)
        for (key, sequence) in model { #expect(snapshot.sequence(forKey: key) == sequence) }
        #expect(snapshot.sequence(forKey: [0xFF]) == nil)
        #expect(tree.sequence(forKey: [0xFF]) == 1)
        #expect(tree.sequence(forKey: replaced) == 2)
        #expect(tree.sequence(forKey: removed) == nil)
    }
}
