extension BTree {
    /// Removes the entry for `key`, returning its value, or `nil` when there was none.
    ///
    /// O(log n): one root-to-leaf path, copying shared nodes as in `updateValue`; on the way
    /// back up, a node that dropped below its minimum fill borrows from or merges with a
    /// sibling, and a root left with a single child is replaced by that child, so memory is
    /// reclaimed as entries go.
    @discardableResult
    mutating func removeValue(forKey key: [UInt8]) -> Value? {
        key.withUnsafeBytes { removeValue(forKey: $0) }
    }

    /// Same as `removeValue(forKey:)` for a key given as raw bytes. O(log n).
    @discardableResult
    mutating func removeValue(forKey key: UnsafeRawBufferPointer) -> Value? {
        if !isKnownUniquelyReferenced(&root) {
            // Don't copy a path of a shared tree just to find nothing there.
            guard value(forKey: key) != nil else { return nil }
            root = root.copy()
        }
        guard let old = root.remove(key) else { return nil }
        entryCount -= 1
        if !root.isLeaf && root.children.count == 1 {
            root = root.children[0]
        }
        return old
    }

    /// Removes every entry. O(1) (nodes are released lazily by reference counting).
    mutating func removeAll() {
        self = BTree()
    }
}

extension BTree.Node {
    /// Removes `key` from the subtree rooted at this uniquely referenced node and returns its
    /// value. Rebalances the child it descended into if that child became underfull (this
    /// node itself may become underfull; its parent handles that). O(height · node size).
    func remove(_ key: UnsafeRawBufferPointer) -> Value? {
        if isLeaf {
            let (index, found) = search(key)
            guard found else { return nil }
            load -= BTreeLayout.entryCost(keyLength: keyLength(at: index))
            removeKey(at: index)
            return values.remove(at: index)
        }
        let index = childIndex(for: key)
        ensureUniqueChild(at: index)
        let removed = children[index].remove(key)
        // Even when the key was not there: the child may have copied its own `children` to make a child of its
        // unique (`ensureUniqueChild`), which moves what this node's hint for it records.
        childChanged(at: index)
        guard let old = removed else { return nil }
        if children[index].isUnderfull { rebalanceChild(at: index) }
        return old
    }

    /// Restores the minimum fill of the underfull `children[index]` of this internal node by
    /// combining it with an adjacent sibling: the pair is merged into the left node, and if
    /// the result is overfull it is split again at its balanced point (which redistributes the
    /// entries so that both halves are at least ~1/4 full). O(node size).
    func rebalanceChild(at index: Int) {
        precondition(children.count >= 2, "BTree: internal node with a single child")
        let leftIndex = index > 0 ? index - 1 : index
        let rightIndex = leftIndex + 1
        ensureUniqueChild(at: leftIndex)  // the right node is only read, then dropped or replaced
        let left = children[leftIndex]
        let right = children[rightIndex]
        let split: BTree.Split?
        if left.isLeaf {
            left.appendKeys(of: right, in: 0 ..< right.keyCount)
            left.values.append(contentsOf: right.values)
            left.load += right.load
            split = left.load > BTreeLayout.leafCapacity ? left.splitLeaf() : nil
        } else {
            withKey(at: leftIndex) { left.appendKey($0) }
            left.appendKeys(of: right, in: 0 ..< right.keyCount)
            left.appendChildren(of: right, in: 0 ..< right.children.count)
            split = left.children.count > BTreeLayout.maxInternalChildren ? left.splitInternal() : nil
        }
        if let split {
            replaceChild(at: rightIndex, with: split.node)
            replaceKey(at: leftIndex, with: split.separator)
        } else {
            removeChild(at: rightIndex)
            removeKey(at: leftIndex)
        }
        childChanged(at: leftIndex)
    }
}
