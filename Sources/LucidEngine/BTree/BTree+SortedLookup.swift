extension BTree {
    /// The values stored for keys `range` of `keys` (sorted, repeats allowed): element `j - range.lowerBound`
    /// is `value(forKey: keys[j])`.
    ///
    /// The keys are routed down the tree together, as in `updateValues`: each node on their paths is searched
    /// once per call rather than once per key, and the leaves are prefetched before they are searched.
    /// O(m log n) comparisons for m keys; one allocation (the result).
    func values(forSortedKeys keys: PackedKeys.View, in range: Range<Int>) -> [Value?] {
        guard !range.isEmpty else { return [] }
        var result: [Value?] = []
        result.reserveCapacity(range.count)
        root.appendValues(forSortedKeys: keys, in: range, to: &result)
        return result
    }
}

extension BTree.Node {
    /// Appends the value of each key of `range` of `keys` (all within this subtree's key range, sorted), or
    /// `nil` for a key the subtree lacks, to `result`.
    func appendValues(forSortedKeys keys: PackedKeys.View, in range: Range<Int>, to result: inout [Value?]) {
        if isLeaf {
            for j in range {
                let (index, found) = search(keys[j])
                result.append(found ? values[index] : nil)
            }
            return
        }
        forEachRun(of: range, keys) { child, run in
            children[child].appendValues(forSortedKeys: keys, in: run, to: &result)
        }
    }
}
