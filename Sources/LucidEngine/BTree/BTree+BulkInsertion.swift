extension BTree {
    /// Stores `values[i]` under key `i` of `keys` for every `i`, replacing existing values; calls
    /// `replaced(i, old)` for each key that already had one. The keys must be strictly increasing.
    ///
    /// Same result as calling `updateValue(_:forKey:)` for each key, but the keys are routed down the tree
    /// together: each node on their paths is visited (and checked for sharing) once per call rather than once
    /// per key, and a leaf receiving several keys splits once, into as many leaves as needed, after taking them
    /// all. O(m log n) for m keys, and O(m + nodes touched · node size) work on node storage.
    mutating func updateValues(_ keys: PackedKeys, _ values: [Value], replaced: (Int, Value) -> Void) {
        precondition(keys.count == values.count, "BTree: \(keys.count) keys for \(values.count) values")
        guard !keys.isEmpty else { return }
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        var added = 0
        keys.withView { view in
            precondition(view.isSorted, "BTree: bulk insertion keys are not strictly increasing")
            let batch = BulkInsertion(keys: view, values: values)
            var splits = root.insertSorted(0 ..< view.count, batch, added: &added, replaced: replaced)
            while !splits.isEmpty {
                let newRoot = Node(isLeaf: false)
                newRoot.appendChild(root)
                newRoot.insertSplits(splits, afterChild: 0)
                root = newRoot
                splits = newRoot.children.count > BTreeLayout.maxInternalChildren ? newRoot.splitInternalMany() : []
            }
        }
        entryCount += added
    }

    /// The sorted entries of one `updateValues` call, shared by every node it visits.
    struct BulkInsertion {
        let keys: PackedKeys.View
        let values: [Value]
    }
}

extension BTree.Node {
    /// Inserts or replaces the entries `range` of `batch` (all within this subtree's key range) in the subtree
    /// rooted at this uniquely referenced node. Returns the new right siblings (in key order) the caller must
    /// link in after this node when it overflowed; `added` counts the keys that were new, `replaced` gets the
    /// old value of each key that was not.
    func insertSorted(_ range: Range<Int>, _ batch: BTree.BulkInsertion, added: inout Int,
                      replaced: (Int, Value) -> Void) -> [BTree.Split] {
        if isLeaf {
            var roomReserved = range.count < 2   // a single key grows the storage as it goes (`makeRoom`)
            var j = range.lowerBound
            while j < range.upperBound {
                let (index, found) = search(batch.keys[j])
                if found {
                    replaced(j, values[index])
                    values[index] = batch.values[j]
                    j += 1
                    continue
                }
                // The new keys from j on that sort before key `index` (every one, past the last key) fall in one
                // gap: they go in as one block, one move of the keys after them rather than one per key.
                var end = j + 1
                if index == keyCount {
                    end = range.upperBound
                } else {
                    while end < range.upperBound && compareKey(at: index, with: batch.keys[end]) > 0 { end += 1 }
                }
                if !roomReserved {
                    // Room for the rest of the run at once, from its first new key (replacing grows nothing).
                    roomReserved = true
                    var bytes = 0
                    for r in j ..< range.upperBound { bytes &+= batch.keys[r].count }
                    makeRoom(forKeys: range.upperBound - j, bytes: bytes)
                }
                insertKeys(batch.keys, j ..< end, at: index)
                insertValues(batch.values, j ..< end, at: index)
                for r in j ..< end { load += BTreeLayout.entryCost(keyLength: batch.keys[r].count) }
                added += end - j
                j = end
            }
            if load > BTreeLayout.leafCapacity { return splitLeafMany() }
            // Keys of the run that were already here leave the room reserved for them unused.
            if range.count > 1 { releaseSpareCapacity() }
            return []
        }
        // Route each run of keys to its child (prefetching the leaves); remember the children that split, to
        // link them in afterwards (right to left, so that the indices of the runs not yet linked stay valid).
        var childSplits: [(child: Int, splits: [BTree.Split])] = []
        forEachRun(of: range, batch.keys) { child, run in
            ensureUniqueChild(at: child)
            let splits = children[child].insertSorted(run, batch, added: &added, replaced: replaced)
            childChanged(at: child)
            if !splits.isEmpty { childSplits.append((child, splits)) }
        }
        for (child, splits) in childSplits.reversed() { insertSplits(splits, afterChild: child) }
        return children.count > BTreeLayout.maxInternalChildren ? splitInternalMany() : []
    }

    /// Links the right siblings `splits` of `children[child]` in after it, with their separators. O(node size).
    func insertSplits(_ splits: [BTree.Split], afterChild child: Int) {
        for (offset, split) in splits.enumerated() {
            split.separator.withUnsafeBytes { insertKey($0, at: child + offset) }
        }
        insertChildren(splits.map(\.node), at: child + 1)
    }

    /// Splits an overfull leaf into as many leaves as needed, keeping the first here. A leaf at most one
    /// entry's worth over capacity splits in half (`splitLeaf`); a bigger one is cut into leaves of about 3/4
    /// of the capacity, each in `minLeafLoad...leafCapacity` (a short remainder is shared with its neighbour).
    /// O(node size).
    func splitLeafMany() -> [BTree.Split] {
        if load <= BTreeLayout.leafCapacity + BTreeLayout.minLeafLoad { return [splitLeaf()] }
        // Cut points: a piece ends as soon as its load reaches the target (so it stays <= target + maxEntryCost).
        let target = BTreeLayout.leafCapacity * 3 / 4
        var cuts: [Int] = []
        var pieceLoad = 0
        var lastPieceLoad = 0
        for i in 0 ..< keyCount {
            pieceLoad += BTreeLayout.entryCost(keyLength: keyLength(at: i))
            if pieceLoad >= target && i + 1 < keyCount {
                cuts.append(i + 1)
                lastPieceLoad = pieceLoad
                pieceLoad = 0
            }
        }
        var splits: [BTree.Split] = []
        // A remainder below the minimum goes with the piece before it; the pair splits in half if too big.
        let tailTooSmall = pieceLoad < BTreeLayout.minLeafLoad
        if tailTooSmall { cuts.removeLast() }
        var bounds = [0] + cuts + [keyCount]
        if tailTooSmall && lastPieceLoad + pieceLoad > BTreeLayout.leafCapacity {
            // Re-cut the merged last piece at its load midpoint (both halves then fit, as in `splitLeaf`).
            let from = bounds[bounds.count - 2]
            var half = 0
            var mid = from
            while mid < keyCount - 1 {
                half += BTreeLayout.entryCost(keyLength: keyLength(at: mid))
                mid += 1
                if half * 2 >= lastPieceLoad + pieceLoad { break }
            }
            bounds.insert(mid, at: bounds.count - 1)
        }
        for p in 1 ..< bounds.count - 1 {
            let node = BTree.Node(isLeaf: true)
            let piece = bounds[p] ..< bounds[p + 1]
            node.appendKeys(of: self, in: piece)
            node.values.append(contentsOf: values[piece])
            node.load = piece.reduce(0) { $0 + BTreeLayout.entryCost(keyLength: keyLength(at: $1)) }
            let separator = withKey(at: bounds[p] - 1) { last in
                withKey(at: bounds[p]) { first in BTreeLayout.separator(between: last, and: first) }
            }
            splits.append(BTree.Split(separator: separator, node: node))
        }
        let keep = bounds[1]
        load = (0 ..< keep).reduce(0) { $0 + BTreeLayout.entryCost(keyLength: keyLength(at: $1)) }
        removeKeys(from: keep)
        values.removeSubrange(keep...)
        releaseSpareCapacity()
        return splits
    }

    /// Splits an internal node with too many children into as many nodes as needed, keeping the first here:
    /// in half (`splitInternal`) when one over, otherwise pieces of 3/4 of the maximum (a remainder below the
    /// minimum joins the piece before it). O(node size).
    func splitInternalMany() -> [BTree.Split] {
        let total = children.count
        if total <= BTreeLayout.maxInternalChildren + BTreeLayout.minInternalChildren { return [splitInternal()] }
        let target = BTreeLayout.maxInternalChildren * 3 / 4
        var bounds = Array(stride(from: 0, to: total, by: target))
        if total - bounds[bounds.count - 1] < BTreeLayout.minInternalChildren { bounds.removeLast() }
        bounds.append(total)
        var splits: [BTree.Split] = []
        for p in 1 ..< bounds.count - 1 {
            let node = BTree.Node(isLeaf: false)
            // Children `from ..< to` and the separators between them; separator `from - 1` moves up.
            let from = bounds[p], to = bounds[p + 1]
            node.appendKeys(of: self, in: from ..< (to - 1))
            node.appendChildren(of: self, in: from ..< to)
            splits.append(BTree.Split(separator: key(at: from - 1), node: node))
        }
        let keep = bounds[1]
        removeKeys(from: keep - 1)
        removeChildren(from: keep)
        return splits
    }
}
