@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Testing

/// `FuzzingSupport.PrimaryTree`, the B-tree the micro-benchmarks `btree-insert-random` and `btree-lookup-random`
/// measure: it must be the engine's tree doing the work, with its answers.
@Suite("Fuzzing SPI: PrimaryTree")
struct PrimaryTreeSPITests {
    @Test("inserts, replaces and looks up keys like a dictionary; snapshots do not change")
    func matchesADictionary() {
        var tree = FuzzingSupport.PrimaryTree()
        var model: [[UInt8]: UInt64] = [:]
        var rng = SplitMix64(seed: 0xB7EE)
        for step in 0..<5_000 {
            let key = (0..<rng.int(0...20)).map { _ in UInt8(truncatingIfNeeded: rng.next() % 7) }
            let sequence = UInt64(step)
            let new = tree.insert(key, sequence: sequence)
            let newInModel = model.updateValue(sequence, forKey: key) == nil
            #expect(new == newInModel, "step \(step)")
        }
        // A key no step wrote (their bytes are below 7).
        let snapshot = tree
        let new = tree.insert([0xFF, 0xFF], sequence: 1)
        #expect(new)
        tree.checkInvariants()
        snapshot.checkInvariants()
        #expect(snapshot.count == model.count)
        #expect(tree.count == model.count + 1)
        for (key, sequence) in model { #expect(snapshot.sequence(forKey: key) == sequence) }
        #expect(tree.sequence(forKey: [0xFF, 0xFF]) == 1)
        #expect(snapshot.sequence(forKey: [0xFF, 0xFF]) == nil)
        #expect(tree.sequence(forKey: [0xFF, 0xFF, 0xFF]) == nil)
    }
}
