import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// A tree's memory is mostly its leaves' four arrays. Insertions grow them by a quarter, not by the standard
/// library's doubling; a split leaves neither half with the storage of the whole; a sorted run that replaces keys
/// gives back the room it reserved for them. So the capacity of a tree built and updated by insertions stays
/// within about a third of its entries.
@Suite("BTree storage")
struct BTreeStorageTests {
    /// Entries and reserved slots over every leaf: values, key offsets, key bytes.
    private struct Usage {
        var entries = 0
        var valueSlots = 0
        var offsetSlots = 0
        var keyBytes = 0
        var keyByteSlots = 0

        var valueRatio: Double { Double(valueSlots) / Double(entries) }
        var offsetRatio: Double { Double(offsetSlots) / Double(entries) }
        var byteRatio: Double { Double(keyByteSlots) / Double(keyBytes) }
    }

    private func usage(_ node: BTree<UInt64>.Node, into total: inout Usage) {
        if node.isLeaf {
            total.entries += node.keyCount
            total.valueSlots += node.values.capacity
            total.offsetSlots += node.keyEnds.capacity
            total.keyBytes += node.keyBytes.count
            total.keyByteSlots += node.keyBytes.capacity
        } else {
            for child in node.children { usage(child, into: &total) }
        }
    }

    private func usage(_ tree: BTree<UInt64>) -> Usage {
        var total = Usage()
        usage(tree.root, into: &total)
        #expect(total.entries == tree.count)
        return total
    }

    private func key(_ n: UInt64) -> [UInt8] {
        (0 ..< 16).map { UInt8(truncatingIfNeeded: n >> (8 * UInt64($0 % 8))) }
    }

    /// 16-byte keys that sort as `n` does.
    private func sequentialKey(_ n: UInt64) -> [UInt8] {
        withUnsafeBytes(of: n.bigEndian) { Array($0) } + [UInt8](repeating: 7, count: 8)
    }

    private func insertRun(_ run: [[UInt8]], into tree: inout BTree<UInt64>, value: UInt64 = 0) {
        let sorted = run.sorted { $0.lexicographicallyPrecedes($1) }
        var keys = PackedKeys()
        for k in sorted { k.withUnsafeBytes { keys.append($0) } }
        tree.updateValues(keys, sorted.map { _ in value }) { _, _ in }
    }

    private func expectClose(_ usage: Usage, _ what: String) {
        #expect(usage.valueRatio < 1.34, "\(what): value slots per entry \(usage.valueRatio)")
        #expect(usage.offsetRatio < 1.34, "\(what): key offset slots per entry \(usage.offsetRatio)")
        #expect(usage.byteRatio < 1.34, "\(what): key byte slots per key byte \(usage.byteRatio)")
    }

    @Test("random single inserts and sorted runs leave leaves' storage within a third of their entries",
          arguments: [1, 2, 40])
    func storageStaysClose(runLength: Int) {
        var rng = SplitMix64(seed: UInt64(runLength))
        var tree = BTree<UInt64>()
        for _ in 0 ..< 30_000 / runLength {
            let run = (0 ..< runLength).map { _ in key(rng.next()) }
            if runLength == 1 {
                tree.updateValue(0, forKey: run[0])
            } else {
                insertRun(run, into: &tree)
            }
        }
        tree.checkInvariants()
        expectClose(usage(tree), "random runs of \(runLength)")
    }

    @Test("runs appended in key order (a sequential load) and runs that rewrite existing keys stay close too")
    func sequentialRunsAndRewrites() {
        var tree = BTree<UInt64>()
        for batch in 0 ..< 30 {
            insertRun((0 ..< 1000).map { sequentialKey(UInt64(batch * 1000 + $0)) }, into: &tree)
        }
        tree.checkInvariants()
        expectClose(usage(tree), "sequential runs")
        // Rewriting every key in runs of 500 (each leaf gets a run of keys it already holds) adds nothing.
        for batch in 0 ..< 60 {
            insertRun((0 ..< 500).map { sequentialKey(UInt64(batch * 500 + $0)) }, into: &tree, value: 1)
        }
        tree.checkInvariants()
        #expect(tree.count == 30_000)
        expectClose(usage(tree), "rewritten runs")
    }
}
