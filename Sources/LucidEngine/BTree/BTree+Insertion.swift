extension BTree {
    /// Stores `value` for `key`, replacing any existing value. Returns the replaced value, or
    /// `nil` when `key` was new.
    ///
    /// O(log n): one root-to-leaf path; each node on it is copied first if it is shared with
    /// another copy of the tree (O(node size) each), and full nodes split on the way back up.
    @discardableResult
    mutating func updateValue(_ value: Value, forKey key: [UInt8]) -> Value? {
        key.withUnsafeBytes { updateValue(value, forKey: $0) }
    }

    /// Same as `updateValue(_:forKey:)` for a key given as raw bytes (copied into the tree).
    /// O(log n).
    @discardableResult
    mutating func updateValue(_ value: Value, forKey key: UnsafeRawBufferPointer) -> Value? {
        precondition(key.count <= BTreeLayout.maxKeyLength, "BTree: key of \(key.count) bytes is too long")
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        let (old, split) = root.insert(value, forKey: key)
        if let split {
            let newRoot = Node(isLeaf: false)
            split.separator.withUnsafeBytes { newRoot.appendKey($0) }
            newRoot.appendChild(root)
            newRoot.appendChild(split.node)
            root = newRoot
        }
        if old == nil { entryCount += 1 }
        return old
    }
}

extension BTree.Node {
    /// Inserts or replaces `key` in the subtree rooted at this uniquely referenced node.
    ///
    /// Returns the replaced value (if any) and, when this node overflowed, the new right
    /// sibling the caller must link in. O(height · node size).
    func insert(
        _ value: Value, forKey key: UnsafeRawBufferPointer
    ) -> (old: Value?, split: BTree.Split?) {
        if isLeaf {
            let (index, found) = search(key)
            if found {
                let old = values[index]
                values[index] = value
                return (old, nil)
            }
            insertKey(key, at: index)
            insertValue(value, at: index)
            load += BTreeLayout.entryCost(keyLength: key.count)
            return (nil, load > BTreeLayout.leafCapacity ? splitLeaf() : nil)
        }
        let index = childIndex(for: key)
        ensureUniqueChild(at: index)
        let (old, childSplit) = children[index].insert(value, forKey: key)
        childChanged(at: index)
        guard let childSplit else { return (old, nil) }
        childSplit.separator.withUnsafeBytes { insertKey($0, at: index) }
        insertChild(childSplit.node, at: index + 1)
        return (old, children.count > BTreeLayout.maxInternalChildren ? splitInternal() : nil)
    }

    /// Splits an overfull leaf (load > `leafCapacity`, at most `leafCapacity + minLeafLoad`)
    /// into two leaves of balanced load, keeping the left half here. O(node size).
    ///
    /// The split point is the first index where the left load reaches half the total; as no
    /// entry costs more than `maxEntryCost`, both halves end up within
    /// `minLeafLoad...leafCapacity`. The separator is the shortest prefix of the right half's
    /// first key that sorts after the left half's last key.
    func splitLeaf() -> BTree.Split {
        let total = keyCount
        precondition(total >= 2, "BTree: cannot split a leaf with fewer than two entries")
        var leftLoad = 0
        var mid = 0
        while mid < total - 1 {
            leftLoad += BTreeLayout.entryCost(keyLength: keyLength(at: mid))
            mid += 1
            if leftLoad * 2 >= load { break }
        }
        let right = BTree.Node(isLeaf: true)
        right.makeRoom(forKeys: total - mid, bytes: keyBytes.count - keyStart(mid))
        right.appendKeys(of: self, in: mid ..< total)
        right.values.append(contentsOf: values[mid...])
        right.load = load - leftLoad
        let separator = withKey(at: mid - 1) { last in
            withKey(at: mid) { first in BTreeLayout.separator(between: last, and: first) }
        }
        removeKeys(from: mid)
        values.removeSubrange(mid...)
        releaseSpareCapacity()
        load = leftLoad
        return BTree.Split(separator: separator, node: right)
    }

    /// Splits an internal node with too many children in the middle, keeping the left half
    /// here; the middle separator moves up to the parent. O(node size).
    func splitInternal() -> BTree.Split {
        let total = children.count
        let mid = total / 2  // children kept on the left
        let right = BTree.Node(isLeaf: false)
        right.reserveCapacity(keys: total, keyBytes: keyBytes.count)
        right.appendKeys(of: self, in: mid ..< keyCount)
        right.appendChildren(of: self, in: mid ..< total)
        let separator = key(at: mid - 1)
        removeKeys(from: mid - 1)
        removeChildren(from: mid)
        return BTree.Split(separator: separator, node: right)
    }
}
