import Testing
import LucidEngineTestSupport
@testable import LucidEngine

@Suite("BTree.updateValues (sorted bulk insertion)")
struct BTreeBulkInsertionTests {
    /// A random key: a shared family prefix or none, then a few low-alphabet bytes; rarely very long.
    private func randomKey(_ rng: inout SplitMix64, sequential: Int?) -> [UInt8] {
        if let n = sequential {
            return (0 ..< 8).map { UInt8(truncatingIfNeeded: UInt64(n) >> (56 - 8 * UInt64($0))) }
        }
        let roll = Int.random(in: 0 ..< 100, using: &rng)
        var key: [UInt8] = roll < 30 ? Array("idx/genre/".utf8) : []
        if roll < 3 { key += [UInt8](repeating: 0xFF, count: Int.random(in: 0 ... 1200, using: &rng)) }
        for _ in 0 ..< Int.random(in: 0 ... 6, using: &rng) { key.append(UInt8.random(in: 0 ... 3, using: &rng) * 85) }
        return key
    }

    /// Every entry of `tree`, in key order.
    private static func entries(_ tree: BTree<Int>) -> [([UInt8], Int)] {
        var result: [([UInt8], Int)] = []
        tree.forEach(from: nil, to: nil, reverse: false) { result.append((Array($0), $1)); return true }
        return result
    }

    /// Puts `batch` into `tree` in one `updateValues` and into `model` one key at a time, then checks that both
    /// replaced the same values and hold the same entries, and the tree's invariants.
    private static func apply(_ batch: [[UInt8]: Int], to tree: inout BTree<Int>, model: inout [[UInt8]: Int]) {
        let sorted = batch.keys.sorted { $0.lexicographicallyPrecedes($1) }
        var keys = PackedKeys()
        for key in sorted { key.withUnsafeBytes { keys.append($0) } }
        var replacedByBulk: [Int: Int] = [:]
        tree.updateValues(keys, sorted.map { batch[$0]! }) { i, old in replacedByBulk[i] = old }
        var expectedReplaced: [Int: Int] = [:]
        for (i, key) in sorted.enumerated() {
            if let old = model.updateValue(batch[key]!, forKey: key) { expectedReplaced[i] = old }
        }
        #expect(replacedByBulk == expectedReplaced)
        tree.checkInvariants()
        #expect(tree.count == model.count)
        let expected = model.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        let actual = entries(tree)
        #expect(actual.map(\.0) == expected.map(\.key))
        #expect(actual.map(\.1) == expected.map(\.value))
    }

    @Test("batches of sorted keys give the same tree contents as one update per key", .heavy,
          arguments: [(1, 1), (2, 7), (3, 60), (4, 1000), (5, 5000)] as [(UInt64, Int)])
    func matchesOneByOne(seed: UInt64, batchSize: Int) {
        for sequential in [false, true] {
            var rng = SplitMix64(seed: seed)
            var bulk = BTree<Int>()
            var single = BTree<Int>()
            var snapshot = bulk
            var next = 0
            for round in 0 ..< 12 {
                var batch: [[UInt8]: Int] = [:]
                for _ in 0 ..< batchSize {
                    batch[randomKey(&rng, sequential: sequential ? next : nil)] = round * 100_000 + next
                    next += 1
                }
                let sorted = batch.keys.sorted { $0.lexicographicallyPrecedes($1) }
                var keys = PackedKeys()
                for key in sorted { key.withUnsafeBytes { keys.append($0) } }
                var replacedByBulk: [Int: Int] = [:]
                if round % 3 == 0 { snapshot = bulk }  // shared nodes must be copied, never written
                let before = snapshot.count
                bulk.updateValues(keys, sorted.map { batch[$0]! }) { i, old in replacedByBulk[i] = old }
                var replacedOneByOne: [Int: Int] = [:]
                for (i, key) in sorted.enumerated() {
                    if let old = single.updateValue(batch[key]!, forKey: key) { replacedOneByOne[i] = old }
                }
                #expect(replacedByBulk == replacedOneByOne)
                #expect(snapshot.count == before)
                snapshot.checkInvariants()
                bulk.checkInvariants()
            }
            #expect(bulk.count == single.count)
            var bulkEntries: [([UInt8], Int)] = []
            bulk.forEach(from: nil, to: nil, reverse: false) { bulkEntries.append((Array($0), $1)); return true }
            var singleEntries: [([UInt8], Int)] = []
            single.forEach(from: nil, to: nil, reverse: false) { singleEntries.append((Array($0), $1)); return true }
            #expect(bulkEntries.map(\.0) == singleEntries.map(\.0))
            #expect(bulkEntries.map(\.1) == singleEntries.map(\.1))
            // The tree keeps working under ordinary mutations afterwards.
            for (i, entry) in bulkEntries.enumerated() where i % 2 == 0 { bulk.removeValue(forKey: entry.0) }
            bulk.checkInvariants()
        }
    }

    @Test("bulk insertion into shared and unshared trees matches a sorted model; snapshots never change", .heavy,
          arguments: [(11, 3), (12, 40), (13, 400)] as [(UInt64, Int)])
    func sharedAndUnsharedAgainstModel(seed: UInt64, batchSize: Int) {
        var rng = SplitMix64(seed: seed)
        var tree = BTree<Int>()
        var model: [[UInt8]: Int] = [:]
        var snapshots: [(tree: BTree<Int>, entries: [([UInt8], Int)])] = []
        for round in 0 ..< 40 {
            // Half the rounds share every node with a snapshot; a quarter of the keys already exist.
            if round % 2 == 0 { snapshots.append((tree, Self.entries(tree))) }
            var batch: [[UInt8]: Int] = [:]
            for n in 0 ..< batchSize {
                let key = !model.isEmpty && Int.random(in: 0 ..< 4, using: &rng) == 0
                    ? model.keys.randomElement(using: &rng)! : randomKey(&rng, sequential: nil)
                batch[key] = round * 100_000 + n
            }
            Self.apply(batch, to: &tree, model: &model)
        }
        for snapshot in snapshots {
            snapshot.tree.checkInvariants()
            let actual = Self.entries(snapshot.tree)
            #expect(actual.map(\.0) == snapshot.entries.map(\.0))
            #expect(actual.map(\.1) == snapshot.entries.map(\.1))
        }
    }

    @Test("runs of new keys in the gaps of leaves, before the first key and past the last, go in as blocks")
    func gapBlocks() {
        let family = Array("idx/genre/".utf8)   // every leaf's keys share this prefix, and more
        func key(_ n: Int, _ prefix: [UInt8] = family) -> [UInt8] {
            prefix + (0 ..< 4).map { UInt8(truncatingIfNeeded: n >> (24 - 8 * $0)) }
        }
        var tree = BTree<Int>()
        var model: [[UInt8]: Int] = [:]
        var rng = SplitMix64(seed: 31)
        func apply(_ batch: [[UInt8]: Int]) { Self.apply(batch, to: &tree, model: &model) }
        // Every hundredth number, then runs of 1 to 40 new numbers in gaps, some with an existing key among them
        // (replaced, splitting the run into two blocks), some gaps left alone.
        apply(Dictionary(uniqueKeysWithValues: stride(from: 0, to: 60_000, by: 100).map { (key($0), $0) }))
        for round in 1 ... 3 {
            var batch: [[UInt8]: Int] = [:]
            for gap in stride(from: 0, to: 60_000, by: 100) where Int.random(in: 0 ..< 3, using: &rng) != 0 {
                let count = Int.random(in: 1 ... 40, using: &rng)
                let first = gap + Int.random(in: 1 ... 99 - min(count, 98), using: &rng)
                for n in first ..< min(first + count, gap + 100) { batch[key(n)] = round * 1_000_000 + n }
                if Int.random(in: 0 ..< 4, using: &rng) == 0 { batch[key(gap)] = round * 1_000_000 + gap }
            }
            apply(batch)
        }
        // Blocks that lack the leaves' prefix: before the first key, and past the last (both ends of the tree).
        apply(Dictionary(uniqueKeysWithValues: (0 ..< 50).map { (key($0, Array("idx/a".utf8)), -$0) }))
        apply(Dictionary(uniqueKeysWithValues: (0 ..< 70).map { (key($0, Array("j".utf8)), $0) }
            + (0 ..< 5).map { (key(300_000 + $0), $0) }))
        apply([key(7, []): 7])
        #expect(tree.count == model.count)
    }

    @Test("values(forSortedKeys:) finds what value(forKey:) finds, for sorted keys with repeats and gaps")
    func sortedLookup() {
        var rng = SplitMix64(seed: 21)
        var tree = BTree<Int>()
        for n in 0 ..< 20_000 { tree.updateValue(n, forKey: randomKey(&rng, sequential: nil)) }
        for size in [0, 1, 5, 300, 5000] {
            var probes = (0 ..< size).map { _ in randomKey(&rng, sequential: nil) }
            probes += probes.prefix(size / 4)   // repeats
            probes.sort { $0.lexicographicallyPrecedes($1) }
            var keys = PackedKeys()
            for key in probes { key.withUnsafeBytes { keys.append($0) } }
            let lower = probes.count / 3
            let found = keys.withView { tree.values(forSortedKeys: $0, in: lower ..< probes.count) }
            #expect(found == probes[lower...].map { tree.value(forKey: $0) })
        }
    }

    @Test("values(forKeys:) finds what value(forKey:) finds, for unsorted keys with repeats and absent keys",
          arguments: [1, 300, 20_000])
    func batchLookup(treeSize: Int) {
        var rng = SplitMix64(seed: 23)
        var tree = BTree<Int>()
        // Keys with a long shared prefix as well, so leaves carry prefixes the prefetch must respect.
        let prefix = [UInt8](repeating: 0xAB, count: 12)
        var present: [[UInt8]] = []
        for n in 0 ..< treeSize {
            let key = n % 2 == 0 ? randomKey(&rng, sequential: nil) : prefix + randomKey(&rng, sequential: nil)
            tree.updateValue(n, forKey: key)
            present.append(key)
        }
        for size in [0, 1, 2, 20, 333] {
            var probes: [[UInt8]] = []
            for i in 0 ..< size {
                switch i % 4 {
                case 0: probes.append(randomKey(&rng, sequential: nil))                    // (almost surely) absent
                case 1: probes.append(prefix + randomKey(&rng, sequential: nil))           // absent, in the prefix
                default: probes.append(present[Int(rng.next() % UInt64(present.count))])  // present, repeats likely
                }
            }
            probes.shuffle(using: &rng)
            probes += probes.prefix(size / 5)   // certain repeats
            let found = tree.values(forKeys: probes)
            #expect(found == probes.map { tree.value(forKey: $0) }, "\(size) keys in a tree of \(treeSize)")
            if size >= 20 { #expect(found.contains { $0 != nil }, "present keys are found") }
        }
        #expect(BTree<Int>().values(forKeys: [[1], [2]]) == [nil, nil])
    }

    @Test("one huge batch into an empty tree, and into a tree with long keys")
    func hugeBatches() {
        var tree = BTree<Int>()
        var keys = PackedKeys()
        for i in 0 ..< 100_000 {
            let key = (0 ..< 4).map { UInt8(truncatingIfNeeded: i >> (24 - 8 * $0)) }
            key.withUnsafeBytes { keys.append($0) }
        }
        tree.updateValues(keys, Array(0 ..< 100_000)) { _, _ in Issue.record("nothing to replace") }
        tree.checkInvariants()
        #expect(tree.count == 100_000)
        #expect(tree.value(forKey: [0, 1, 0x86, 0x9F]) == 99_999)

        var long = BTree<Int>()
        var longKeys = PackedKeys()
        for i in 0 ..< 300 {
            let key = [UInt8(i >> 8), UInt8(i & 0xFF)] + [UInt8](repeating: 7, count: 700 + (i * 37) % 900)
            key.withUnsafeBytes { longKeys.append($0) }
        }
        long.updateValues(longKeys, Array(0 ..< 300)) { _, _ in }
        long.checkInvariants()
        #expect(long.count == 300)
    }

    @Test("sortedOrder is a stable sort by bytes; reordered follows it")
    func packedKeysSort() {
        var keys = PackedKeys()
        for key: [UInt8] in [[3], [1, 2], [], [1], [3], [0xFF, 0], [1, 2, 0]] { key.withUnsafeBytes { keys.append($0) } }
        let order = keys.sortedOrder()
        #expect(order == [2, 3, 1, 6, 0, 4, 5])
        let sorted = keys.reordered(order)
        let bytes = sorted.withView { view in (0 ..< view.count).map { Array(view[$0]) } }
        #expect(bytes == [[], [1], [1, 2], [1, 2, 0], [3], [3], [0xFF, 0]])
    }
}
