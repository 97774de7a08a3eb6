import Testing
import LucidEngineTestSupport
@testable import LucidEngine

@Suite("BTree.Builder")
struct BTreeBuilderTests {
    private func sortedKeys(_ n: Int, seed: UInt64, maxLength: Int) -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        var set = Set<[UInt8]>()
        while set.count < n {
            let length = Int.random(in: 0...maxLength, using: &rng)
            // Few byte values make long shared prefixes; the first byte is free so the key space stays large.
            let first = UInt8.random(in: 0...255, using: &rng)
            set.insert([first] + (0..<length).map { _ in UInt8.random(in: 0...3, using: &rng) * 85 })
        }
        return set.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The tree's keys in iteration order, stopping after the first whose value is not its position (every test
    /// tree maps its i-th key to i).
    private static func keysInOrder(_ tree: BTree<Int>) -> [[UInt8]] {
        var visited: [[UInt8]] = []
        tree.forEach(from: nil, to: nil, reverse: false) { key, value in
            visited.append(Array(key))
            return value == visited.count - 1
        }
        return visited
    }

    @Test("bulk-built trees hold exactly their input and satisfy every invariant",
          arguments: [0, 1, 2, 49, 56, 57, 64, 65, 500, 3_000, 20_000])
    func buildsValidTrees(count: Int) {
        for maxLength in [6, 24, 1000] where count < 3_000 || maxLength < 1000 {
            let keys = sortedKeys(count, seed: UInt64(count * 31 + maxLength), maxLength: maxLength)
            var builder = BTree<Int>.Builder()
            for (i, key) in keys.enumerated() {
                let appended = builder.append(key, i)
                #expect(appended)
            }
            var tree = builder.build()
            tree.checkInvariants()
            #expect(tree.count == keys.count)
            #expect(Self.keysInOrder(tree) == keys, "count \(count) maxLength \(maxLength)")
            for (i, key) in keys.enumerated() where i % 7 == 0 { #expect(tree.value(forKey: key) == i) }
            // The built tree must keep working under ordinary mutations.
            var rng = SplitMix64(seed: UInt64(count))
            for (i, key) in keys.enumerated() where i % 3 == 0 { tree.removeValue(forKey: key) }
            for _ in 0..<200 {
                let key = (0..<Int.random(in: 0...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                tree.updateValue(-1, forKey: key)
            }
            tree.checkInvariants()
        }
    }

    @Test("out-of-order and duplicate keys are refused")
    func refusesDisorder() {
        var builder = BTree<Int>.Builder()
        let results = [builder.append([2], 0), builder.append([2], 1), builder.append([1], 1), builder.append([3], 1)]
        #expect(results == [true, false, false, true])
        #expect(builder.build().count == 2)

        // Around leaf boundaries too: the entry that seals a full leaf is checked against its last key.
        var long = BTree<Int>.Builder()
        var refused: [Int] = []
        for i in 0..<400 {
            let key = Array(String(format: "key-%05d", i).utf8)
            if !long.append(key, i) { refused.append(i) }
            for j in [i - 1, i] where i % 28 == 0 && j >= 0 {
                if long.append(Array(String(format: "key-%05d", j).utf8), -1) { refused.append(-j - 1) }
            }
        }
        #expect(refused.isEmpty, "accepted or refused wrongly: \(refused)")
        let tree = long.build()
        #expect(tree.count == 400)
        tree.checkInvariants()
    }

    @Test("leaf runs built apart assemble into one valid tree; runs out of order are refused",
          arguments: [1, 3, 40, 700])
    func assemblesRuns(maxRun: Int) {
        let keys = sortedKeys(5_000, seed: UInt64(maxRun), maxLength: 24)
        var rng = SplitMix64(seed: UInt64(maxRun) &* 7)
        var runs: [BTree<Int>.LeafRun] = []
        var runKeys: [[[UInt8]]] = []
        var start = 0
        while start < keys.count {
            let end = min(keys.count, start + Int.random(in: 1...maxRun, using: &rng))
            var builder = BTree<Int>.Builder()
            for i in start..<end { keys[i].withUnsafeBytes { builder.appendAscending($0, i) } }
            runs.append(builder.leafRun())
            runKeys.append(Array(keys[start..<end]))
            start = end
        }
        let tree = BTree<Int>.assemble(runs)
        #expect(tree != nil)
        guard let tree else { return }
        tree.checkInvariants()
        #expect(tree.count == keys.count)
        #expect(Self.keysInOrder(tree) == keys)
        // Two runs swapped, or a run that repeats the previous run's last key, are refused.
        if runs.count >= 2 {
            var swapped = runs
            swapped.swapAt(0, 1)
            #expect(BTree<Int>.assemble(swapped) == nil)
            var repeated = BTree<Int>.Builder()
            runKeys[0].last!.withUnsafeBytes { repeated.appendAscending($0, -1) }
            #expect(BTree<Int>.assemble([runs[0], repeated.leafRun()] + runs[1...]) == nil)
        }
    }

    @Test("a first run of one small leaf is joined with the next run's first leaf, whatever follows")
    func smallFirstRun() {
        // Found in review: a lone underfull first leaf had no left neighbour to merge into, and stayed underfull.
        for (firstCount, firstLength) in [(1, 1), (3, 1), (2, 900), (1, 1000)] {
            for nextCount in [1, 2, 56, 100, 1_000] {
                var first = BTree<Int>.Builder()
                for i in 0..<firstCount {
                    ([UInt8(1), UInt8(i)] + [UInt8](repeating: 7, count: firstLength)).withUnsafeBytes { first.appendAscending($0, i) }
                }
                var next = BTree<Int>.Builder()
                for i in 0..<nextCount { [UInt8(2), UInt8(i >> 8), UInt8(i & 255)].withUnsafeBytes { next.appendAscending($0, i) } }
                var tiny = BTree<Int>.Builder()
                [UInt8(3)].withUnsafeBytes { tiny.appendAscending($0, -1) }
                // assemble checks every invariant (a precondition in debug builds and tests) before returning.
                let tree = BTree<Int>.assemble([first.leafRun(), next.leafRun(), tiny.leafRun()])
                #expect(tree?.count == firstCount + nextCount + 1, "first \(firstCount)×\(firstLength), next \(nextCount)")
                tree?.checkInvariants()
            }
        }
    }
}
