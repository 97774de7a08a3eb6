import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// A tree's memory is mostly its leaves' four arrays. Insertions grow them by a quarter, not by the standard
/// library's doubling, and a split leaves neither half with the storage of the whole: the capacity of a tree
/// built by insertions stays within about a third of its entries.
@Suite("BTree storage")
struct BTreeStorageTests {
    /// Entries and reserved slots (value slots, key-byte slots) over every leaf.
    private struct Usage {
        var entries = 0
        var valueSlots = 0
        var keyBytes = 0
        var keyByteSlots = 0
    }

    private func usage(_ node: BTree<UInt64>.Node, into total: inout Usage) {
        if node.isLeaf {
            total.entries += node.keyCount
            total.valueSlots += node.values.capacity
            total.keyBytes += node.keyBytes.count
            total.keyByteSlots += node.keyBytes.capacity
            #expect(node.keyEnds.capacity >= node.keyCount && node.keyHeads.capacity >= node.keyCount)
        } else {
            for child in node.children { usage(child, into: &total) }
        }
    }

    private func key(_ n: UInt64) -> [UInt8] {
        (0 ..< 16).map { UInt8(truncatingIfNeeded: n >> (8 * UInt64($0 % 8))) }
    }

    @Test("random single inserts and sorted runs leave leaves' storage within a third of their entries",
          arguments: [1, 2, 40])
    func storageStaysClose(runLength: Int) {
        var rng = SplitMix64(seed: UInt64(runLength))
        var tree = BTree<UInt64>()
        for _ in 0 ..< 30_000 / runLength {
            let run = (0 ..< runLength).map { _ in key(rng.next()) }.sorted { $0.lexicographicallyPrecedes($1) }
            var keys = PackedKeys()
            for k in run { k.withUnsafeBytes { keys.append($0) } }
            if runLength == 1 {
                tree.updateValue(0, forKey: run[0])
            } else {
                tree.updateValues(keys, run.map { _ in 0 }) { _, _ in }
            }
        }
        tree.checkInvariants()
        var total = Usage()
        usage(tree.root, into: &total)
        #expect(total.entries == tree.count)
        let valueRatio = Double(total.valueSlots) / Double(total.entries)
        let byteRatio = Double(total.keyByteSlots) / Double(total.keyBytes)
        #expect(valueRatio < 1.34, "value slots per entry: \(valueRatio)")
        #expect(byteRatio < 1.34, "key byte slots per key byte: \(byteRatio)")
    }
}
