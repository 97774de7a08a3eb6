import Foundation
import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// The shared seeded generator, so failures replay from their seed.
private typealias BTreeTestRNG = SplitMix64

/// Bytes that make keys collide, share prefixes and hit the unsigned-order edge cases.
private let alphabet: [UInt8] = [0x00, 0x01, 0x41, 0x42, 0x7F, 0x80, 0xFE, 0xFF]
/// Long shared prefixes (some prefixes of others) to exercise node prefixes longer than 8 bytes.
private let families: [[UInt8]] = [
    Array("tbl:users/idx/".utf8), Array("tbl:users/".utf8), Array("tbl:users/idx/zz\u{0}".utf8), [0xFF, 0xFF, 0xFF, 0xFF],
]

/// A random key: usually short over `alphabet` (the empty key included), sometimes a family
/// prefix plus a suffix, rarely long (up to 1.5 KB, to drive byte-based splits).
private func randomKey(_ rng: inout BTreeTestRNG) -> [UInt8] {
    let roll = rng.next() % 100
    if roll < 2 {
        let filler = alphabet[Int(rng.next() % 2) + 6]
        return [UInt8](repeating: filler, count: Int(rng.next() % 1500)) + randomKey(&rng)
    }
    var key = roll < 35 ? families[Int(rng.next() % UInt64(families.count))] : []
    for _ in 0 ..< Int(rng.next() % (roll < 35 ? 5 : 8)) { key.append(alphabet[Int(rng.next() % 8)]) }
    return key
}

/// A sorted-array + dictionary reference model of the tree.
private struct Model {
    var values: [[UInt8]: Int] = [:]
    var sortedKeys: [[UInt8]] = []

    func index(of key: [UInt8]) -> Int {
        var low = 0, high = sortedKeys.count
        while low < high {
            let mid = (low + high) / 2
            if sortedKeys[mid].lexicographicallyPrecedes(key) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    mutating func update(_ value: Int, _ key: [UInt8]) -> Int? {
        let old = values.updateValue(value, forKey: key)
        if old == nil { sortedKeys.insert(key, at: index(of: key)) }
        return old
    }

    mutating func remove(_ key: [UInt8]) -> Int? {
        guard let old = values.removeValue(forKey: key) else { return nil }
        sortedKeys.remove(at: index(of: key))
        return old
    }

    func entries(from lower: BTreeBound?, to upper: BTreeBound?) -> [[UInt8]] {
        sortedKeys.filter { key in
            let aboveLower: Bool
            switch lower {
            case nil: aboveLower = true
            case .included(let bound)?: aboveLower = !key.lexicographicallyPrecedes(bound)
            case .excluded(let bound)?: aboveLower = bound.lexicographicallyPrecedes(key)
            }
            let belowUpper: Bool
            switch upper {
            case nil: belowUpper = true
            case .included(let bound)?: belowUpper = !bound.lexicographicallyPrecedes(key)
            case .excluded(let bound)?: belowUpper = key.lexicographicallyPrecedes(bound)
            }
            return aboveLower && belowUpper
        }
    }
}

/// One entry as collected from a tree (tuples are not `Equatable`).
private struct Entry: Equatable {
    var key: [UInt8]
    var value: Int
}

/// A 4-byte big-endian key: numeric order equals key order.
private func numericKey(_ n: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt32(n).bigEndian) { Array($0) }
}

/// Every entry of `tree` in ascending order.
private func contents(_ tree: BTree<Int>) -> [Entry] {
    collect(tree).map { Entry(key: $0.0, value: $0.1) }
}

/// All entries of `tree` within the bounds, in visiting order.
private func collect<V>(
    _ tree: BTree<V>, from lower: BTreeBound? = nil, to upper: BTreeBound? = nil, reverse: Bool = false
) -> [([UInt8], V)] {
    var result: [([UInt8], V)] = []
    tree.forEach(from: lower, to: upper, reverse: reverse) { key, value in
        result.append((Array(key), value))
        return true
    }
    return result
}

/// Compares every observable of `tree` with `model`; throws on the first mismatch.
private func verify(_ tree: BTree<Int>, _ model: Model, _ rng: inout BTreeTestRNG, seed: UInt64) throws {
    tree.checkInvariants()
    try #require(tree.count == model.values.count, "seed \(seed)")
    try #require(tree.isEmpty == model.values.isEmpty, "seed \(seed)")
    let ascending = collect(tree)
    try #require(ascending.map(\.0) == model.sortedKeys, "ascending order, seed \(seed)")
    try #require(ascending.allSatisfy { model.values[$0.0] == $0.1 }, "values, seed \(seed)")
    try #require(collect(tree, reverse: true).map(\.0) == model.sortedKeys.reversed(), "descending, seed \(seed)")
    try #require(tree.first?.key == model.sortedKeys.first, "first, seed \(seed)")
    try #require(tree.last?.key == model.sortedKeys.last, "last, seed \(seed)")
    try #require(tree.first?.value == model.sortedKeys.first.flatMap { model.values[$0] }, "seed \(seed)")
    try #require(tree.last?.value == model.sortedKeys.last.flatMap { model.values[$0] }, "seed \(seed)")
    func randomBound() -> BTreeBound? {
        let key = model.sortedKeys.isEmpty || rng.next() % 3 == 0
            ? randomKey(&rng) : model.sortedKeys[Int(rng.next() % UInt64(model.sortedKeys.count))]
        switch rng.next() % 5 {
        case 0: return nil
        case 1, 2: return .included(key)
        default: return .excluded(key)
        }
    }
    for _ in 0 ..< 12 {
        let (lower, upper) = (randomBound(), randomBound())
        let expected = model.entries(from: lower, to: upper)
        let forward = collect(tree, from: lower, to: upper).map(\.0)
        try #require(forward == expected, "range \(String(describing: lower))...\(String(describing: upper)), seed \(seed)")
        let backward = collect(tree, from: lower, to: upper, reverse: true).map(\.0)
        try #require(backward == expected.reversed(), "reverse range, seed \(seed)")
    }
}

@Suite("BTree")
struct BTreeTests {
    @Test("Random operations match a dictionary model", .heavy, arguments: [1, 2, 3, 0xDEAD_BEEF] as [UInt64])
    func randomizedModel(seed: UInt64) throws {
        var rng = BTreeTestRNG(seed: seed)
        var tree = BTree<Int>()
        var model = Model()
        // Grow, churn, then shrink to empty, so splits and merges happen at every level.
        let phases: [(operations: Int, insertPercent: UInt64)] = [(10000, 85), (5000, 50), (14000, 25)]
        var step = 0
        for phase in phases {
            for _ in 0 ..< phase.operations {
                step += 1
                let roll = rng.next() % 100
                if roll < phase.insertPercent {
                    let key = randomKey(&rng), value = Int(truncatingIfNeeded: rng.next())
                    try #require(tree.updateValue(value, forKey: key) == model.update(value, key), "seed \(seed)")
                } else if roll < 95 || model.sortedKeys.isEmpty {
                    let key = model.sortedKeys.isEmpty || roll % 4 == 0
                        ? randomKey(&rng) : model.sortedKeys[Int(rng.next() % UInt64(model.sortedKeys.count))]
                    try #require(tree.removeValue(forKey: key) == model.remove(key), "seed \(seed)")
                } else {
                    let key = randomKey(&rng)
                    try #require(tree.value(forKey: key) == model.values[key], "lookup, seed \(seed)")
                    let raw = key.withUnsafeBytes { tree.value(forKey: $0) }
                    try #require(raw == model.values[key], "raw lookup, seed \(seed)")
                }
                if step % 500 == 0 { try verify(tree, model, &rng, seed: seed) }
            }
            try verify(tree, model, &rng, seed: seed)
        }
        for key in model.sortedKeys { try #require(tree.removeValue(forKey: key) != nil, "seed \(seed)") }
        tree.checkInvariants()
        #expect(tree.isEmpty && tree.height == 1, "seed \(seed)")
    }

    @Test("Copies are isolated snapshots, whichever side is mutated")
    func snapshotIsolation() throws {
        var rng = BTreeTestRNG(seed: 7)
        var tree = BTree<Int>()
        for i in 0 ..< 20_000 { tree.updateValue(i, forKey: numericKey(i)) }
        var snapshots: [(tree: BTree<Int>, contents: [Entry])] = [(tree, contents(tree))]
        // Mutate the original heavily (removals merge nodes, inserts split them, replacements
        // rewrite leaves), taking a snapshot after each round.
        for round in 0 ..< 6 {
            for _ in 0 ..< 6_000 {
                let n = Int(rng.next() % 30_000)
                switch rng.next() % 3 {
                case 0: tree.removeValue(forKey: numericKey(n))
                case 1: tree.updateValue(-n - round, forKey: numericKey(n))
                default: tree.updateValue(n, forKey: numericKey(n) + [UInt8(round)])
                }
            }
            if round == 3 { for i in stride(from: 0, to: 30_000, by: 2) { tree.removeValue(forKey: numericKey(i)) } }
            tree.checkInvariants()
            snapshots.append((tree, contents(tree)))
        }
        for (index, snapshot) in snapshots.enumerated() {
            snapshot.tree.checkInvariants()
            try #require(snapshot.tree.count == snapshot.contents.count, "snapshot \(index)")
            try #require(contents(snapshot.tree) == snapshot.contents, "snapshot \(index) changed")
        }
        // The other way round: mutate the copy, the original must not move.
        let original = tree
        let originalContents = contents(tree)
        var copy = original
        for (index, entry) in originalContents.enumerated() {
            if index % 3 == 0 { copy.removeValue(forKey: entry.key) } else { copy.updateValue(0, forKey: entry.key) }
        }
        for i in 0 ..< 5_000 { copy.updateValue(i, forKey: numericKey(i) + [0xFF]) }
        copy.checkInvariants()
        original.checkInvariants()
        #expect(contents(original) == originalContents)
        #expect(contents(copy) != originalContents)
        #expect(contents(snapshots[0].tree) == snapshots[0].contents)
    }

    @Test("Removing a missing key below a node shared with a snapshot keeps the parents' prefetch hints current")
    func missingKeyRemovalUnderASnapshot() throws {
        var tree = BTree<Int>()
        for i in 0 ..< 20_000 { tree.updateValue(i, forKey: numericKey(i)) }
        try #require(tree.height >= 3)
        let snapshot = tree
        // The root and the path to key 0 become the tree's own; the subtree of the last keys stays shared.
        tree.updateValue(-1, forKey: numericKey(0))
        // A key that is not there, in that last subtree: its internal node is copied, and the copy copies its own
        // children array to make the leaf its own, though nothing is removed; the root's hint must follow.
        #expect(tree.removeValue(forKey: numericKey(19_999) + [0x01]) == nil)
        tree.checkInvariants()
        snapshot.checkInvariants()
        #expect(tree.count == 20_000 && tree.value(forKey: numericKey(0)) == -1)
        #expect(snapshot.value(forKey: numericKey(0)) == 0)
    }

    @Test("Readers of published snapshots see consistent trees while a writer mutates")
    func concurrentSnapshotReaders() throws {
        let exchange = SnapshotExchange()
        let finished = DispatchGroup()
        let writer = Thread {
            defer { finished.leave() }
            var rng = BTreeTestRNG(seed: 11)
            var tree = BTree<Int>()
            var sum = 0
            for step in 1 ... 40_000 {
                let key = numericKey(Int(rng.next() % 8_000))
                let value = Int(rng.next() % 1_000)
                if rng.next() % 3 == 0 {
                    sum -= tree.removeValue(forKey: key) ?? 0
                } else {
                    sum += value - (tree.updateValue(value, forKey: key) ?? 0)
                }
                if step % 200 == 0 {
                    let published = PublishedSnapshot(tree: tree, count: tree.count, sum: sum)
                    exchange.latest.withLock { $0 = published }
                }
            }
            exchange.writerDone.store(true, ordering: .releasing)
        }
        var readers: [Thread] = []
        for _ in 0 ..< 2 {
            readers.append(Thread {
                defer { finished.leave() }
                while !exchange.writerDone.load(ordering: .acquiring) {
                    guard let snapshot = exchange.latest.withLock({ $0 }) else { continue }
                    snapshot.tree.checkInvariants()
                    if let problem = snapshot.inconsistency() {
                        exchange.problems.withLock { $0.append(problem) }
                        return
                    }
                    exchange.snapshotsChecked.add(1, ordering: .relaxed)
                }
            })
        }
        for thread in [writer] + readers {
            finished.enter()
            thread.start()
        }
        finished.wait()
        let problems = exchange.problems.withLock { $0 }
        #expect(problems.isEmpty, "\(problems)")
        #expect(exchange.snapshotsChecked.load(ordering: .relaxed) > 0)
        let last = try #require(exchange.latest.withLock { $0 })
        #expect(last.inconsistency() == nil)
    }

    @Test("Deleting everything empties the tree; sequential inserts then every other removal")
    func deleteEverythingAndSequential() throws {
        var rng = BTreeTestRNG(seed: 5)
        var tree = BTree<Int>()
        var keys = (0 ..< 20_000).map { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }
        for (i, key) in keys.enumerated() { tree.updateValue(i, forKey: key) }
        tree.checkInvariants()
        #expect(tree.height >= 3)
        keys.shuffle(using: &rng)
        for (i, key) in keys.enumerated() {
            try #require(tree.removeValue(forKey: key) != nil)
            if i % 2_500 == 0 { tree.checkInvariants() }
        }
        tree.checkInvariants()
        #expect(tree.isEmpty && tree.count == 0 && tree.height == 1)
        #expect(tree.first == nil && tree.last == nil && collect(tree).isEmpty)
        #expect(tree.removeValue(forKey: keys[0]) == nil)

        for i in 0 ..< 100_000 { tree.updateValue(i, forKey: numericKey(i)) }
        tree.checkInvariants()
        #expect(tree.count == 100_000)
        for i in stride(from: 0, to: 100_000, by: 2) { tree.removeValue(forKey: numericKey(i)) }
        tree.checkInvariants()
        #expect(tree.count == 50_000)
        #expect(tree.value(forKey: numericKey(4_242)) == nil && tree.value(forKey: numericKey(4_243)) == 4_243)
        #expect(contents(tree) == stride(from: 1, to: 100_000, by: 2).map { Entry(key: numericKey($0), value: $0) })
        #expect(tree.first?.value == 1 && tree.last?.value == 99_999)
    }

    @Test("forEach stops as soon as the body returns false")
    func earlyStop() {
        var tree = BTree<Int>()
        for i in 0 ..< 1_000 { tree.updateValue(i, forKey: numericKey(i)) }
        for reverse in [false, true] {
            var visited: [Int] = []
            tree.forEach(from: .included(numericKey(100)), to: nil, reverse: reverse) { _, value in
                visited.append(value)
                return visited.count < 150
            }
            #expect(visited == (reverse ? Array((850 ..< 1_000).reversed()) : Array(100 ..< 250)))
        }
        var calls = 0
        tree.forEach { _, _ in
            calls += 1
            return false
        }
        #expect(calls == 1)
    }

    @Test("Empty key, prefix keys and bound edge cases")
    func edgeCases() {
        var tree = BTree<Int>()
        #expect(tree.first == nil && tree.value(forKey: []) == nil && collect(tree).isEmpty)
        let keys: [[UInt8]] = [[], [0x00], [0x00, 0x00], [0x01], [0x7F], [0x80], [0xFF], [0xFF, 0x00], [0xFF, 0xFF]]
        for (i, key) in keys.reversed().enumerated() { tree.updateValue(i, forKey: key) }
        tree.checkInvariants()
        #expect(collect(tree).map(\.0) == keys)
        #expect(tree.first?.key == [] && tree.last?.key == [0xFF, 0xFF])
        #expect(tree.updateValue(100, forKey: []) == keys.count - 1 && tree.value(forKey: []) == 100)
        #expect(collect(tree, from: .included([0x00]), to: .excluded([0xFF])).map(\.0) == Array(keys[1 ..< 6]))
        #expect(collect(tree, from: .excluded([]), to: .included([0x01])).map(\.0) == Array(keys[1 ... 3]))
        #expect(collect(tree, from: .included([0x80]), to: .included([0x7F])).isEmpty)
        #expect(collect(tree, from: .included([0x80]), to: .excluded([0x80])).isEmpty)
        #expect(collect(tree, from: .included([0x80]), to: .included([0x80])).map(\.0) == [[0x80]])
        #expect(collect(tree, from: .excluded([0xFF]), to: nil, reverse: true).map(\.0) == [[0xFF, 0xFF], [0xFF, 0x00]])
        #expect(tree.removeValue(forKey: []) == 100 && tree.removeValue(forKey: []) == nil)
        #expect(tree.first?.key == [0x00])
    }

    @Test("Very long keys split by bytes and stay ordered", .heavy)
    func longKeys() throws {
        var rng = BTreeTestRNG(seed: 9)
        var tree = BTree<Int>()
        var model = Model()
        for step in 0 ..< 1_500 {
            let length = Int(rng.next() % 6_000)
            let key = [UInt8](repeating: alphabet[Int(rng.next() % 8)], count: length) + randomKey(&rng)
            if step % 3 == 2, let victim = model.sortedKeys.randomElement(using: &rng) {
                try #require(tree.removeValue(forKey: victim) == model.remove(victim))
            } else {
                try #require(tree.updateValue(step, forKey: key) == model.update(step, key))
            }
            if step % 100 == 0 { try verify(tree, model, &rng, seed: 9) }
        }
        try verify(tree, model, &rng, seed: 9)
    }
}

/// A published snapshot: the tree plus the count and value sum it must have.
private struct PublishedSnapshot: Sendable {
    let tree: BTree<Int>
    let count: Int
    let sum: Int

    /// A description of the first way the snapshot disagrees with itself, or `nil`.
    func inconsistency() -> String? {
        var entries = 0, total = 0
        var previous: [UInt8]?
        var ordered = true
        tree.forEach { key, value in
            let current = Array(key)
            if let previous, !previous.lexicographicallyPrecedes(current) { ordered = false }
            previous = current
            entries += 1
            total += value
            return true
        }
        guard ordered else { return "keys out of order" }
        guard entries == count, tree.count == count else { return "count \(tree.count)/\(entries), expected \(count)" }
        guard total == sum else { return "sum \(total), expected \(sum)" }
        if let first = tree.first, tree.value(forKey: first.key) != first.value { return "lookup mismatch" }
        return nil
    }
}

/// State shared by the writer and reader threads of the concurrency test.
private final class SnapshotExchange: Sendable {
    let latest = Mutex<PublishedSnapshot?>(nil)
    let writerDone = Atomic<Bool>(false)
    let snapshotsChecked = Atomic<Int>(0)
    let problems = Mutex<[String]>([])
}
