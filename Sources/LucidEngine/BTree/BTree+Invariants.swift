extension BTree {
#if LUCID_INTERNAL_CHECKS
    /// Validates the whole tree and stops with a `precondition` failure describing the first
    /// broken invariant:
    /// - keys strictly ascending within every node and across the tree, and each separator
    ///   bounding its subtrees (`children[i]` keys `< keys[i] <=` `children[i + 1]` keys);
    /// - all leaves at the same depth;
    /// - no empty node except an empty root leaf, and an internal root with at least 2 children;
    /// - node sizes within limits: leaf load `<= leafCapacity` and, below the root,
    ///   `>= minLeafLoad`; internal nodes `<= maxInternalChildren` children and, below the root,
    ///   `>= minInternalChildren`; leaf `load` and array shapes consistent;
    /// - each internal node's prefetch hints (`childHints`) are those of its children as they are now;
    /// - the stored `count` equals the number of leaf entries.
    ///
    /// O(n · key length). Only compiled with `LUCID_INTERNAL_CHECKS` (debug builds); a no-op
    /// otherwise. Not called automatically — tests call it.
    func checkInvariants() {
        precondition(BTreeLayout.maxEntryCost <= BTreeLayout.minLeafLoad,
                     "BTreeLayout: an entry may cost more than the minimum leaf load; splits could underfill")
        if !root.isLeaf {
            precondition(root.children.count >= 2,
                         "BTree invariant: internal root has \(root.children.count) child(ren), needs >= 2")
        }
        var leafDepth: Int?
        let entries = root.checkSubtree(lower: nil, upper: nil, depth: 0, isRoot: true, leafDepth: &leafDepth)
        precondition(entries == count, "BTree invariant: count is \(count) but the leaves hold \(entries) entries")
    }
#else
    /// Validates the tree's invariants; compiled out (no-op) without `LUCID_INTERNAL_CHECKS`.
    @inline(__always)
    func checkInvariants() {}
#endif
}

#if LUCID_INTERNAL_CHECKS
extension BTree.Node {
    /// Checks this subtree against the bounds its ancestors imply (`lower <= key < upper`)
    /// and returns its number of entries. O(subtree size · key length).
    fileprivate func checkSubtree(
        lower: [UInt8]?, upper: [UInt8]?, depth: Int, isRoot: Bool, leafDepth: inout Int?
    ) -> Int {
        checkKeyStorage()
        let keys = (0 ..< keyCount).map { key(at: $0) }
        checkHeads(keys: keys)
        for i in keys.indices.dropFirst() {
            precondition(keys[i - 1].lexicographicallyPrecedes(keys[i]),
                         "BTree invariant: keys \(keys[i - 1]) and \(keys[i]) out of order at depth \(depth)")
        }
        if isLeaf {
            return checkLeaf(keys: keys, lower: lower, upper: upper, depth: depth, isRoot: isRoot,
                             leafDepth: &leafDepth)
        }
        precondition(values.isEmpty, "BTree invariant: internal node holds values at depth \(depth)")
        precondition(children.count == keys.count + 1,
                     "BTree invariant: \(children.count) children for \(keys.count) separators at depth \(depth)")
        precondition(children.count <= BTreeLayout.maxInternalChildren,
                     "BTree invariant: internal node with \(children.count) children at depth \(depth)")
        precondition(isRoot || children.count >= BTreeLayout.minInternalChildren,
                     "BTree invariant: underfull internal node (\(children.count) children) at depth \(depth)")
        for separator in keys {
            if let lower {
                precondition(lower.lexicographicallyPrecedes(separator),
                             "BTree invariant: separator \(separator) not above subtree bound \(lower)")
            }
            if let upper {
                precondition(separator.lexicographicallyPrecedes(upper),
                             "BTree invariant: separator \(separator) not below subtree bound \(upper)")
            }
        }
        precondition(childHints.count == children.count,
                     "BTree invariant: \(childHints.count) hints for \(children.count) children at depth \(depth)")
        for (index, child) in children.enumerated() {
            precondition(childHints[index] == Self.hint(of: child),
                         "BTree invariant: stale prefetch hint for child \(index) at depth \(depth)")
        }
        var entries = 0
        for (index, child) in children.enumerated() {
            entries += child.checkSubtree(
                lower: index == 0 ? lower : keys[index - 1],
                upper: index == keys.count ? upper : keys[index],
                depth: depth + 1, isRoot: false, leafDepth: &leafDepth)
        }
        return entries
    }

    /// Leaf part of `checkSubtree`. O(leaf size).
    private func checkLeaf(
        keys: [[UInt8]], lower: [UInt8]?, upper: [UInt8]?, depth: Int, isRoot: Bool, leafDepth: inout Int?
    ) -> Int {
        if let expected = leafDepth {
            precondition(depth == expected, "BTree invariant: leaves at depths \(expected) and \(depth)")
        } else {
            leafDepth = depth
        }
        precondition(children.isEmpty && childHints.isEmpty, "BTree invariant: leaf with children at depth \(depth)")
        precondition(values.count == keys.count,
                     "BTree invariant: leaf with \(keys.count) keys but \(values.count) values")
        precondition(isRoot || !keys.isEmpty, "BTree invariant: empty non-root leaf at depth \(depth)")
        let expectedLoad = keys.reduce(0) { $0 + BTreeLayout.entryCost(keyLength: $1.count) }
        precondition(load == expectedLoad, "BTree invariant: leaf load \(load), expected \(expectedLoad)")
        precondition(load <= BTreeLayout.leafCapacity, "BTree invariant: overfull leaf (load \(load))")
        precondition(isRoot || load >= BTreeLayout.minLeafLoad,
                     "BTree invariant: underfull leaf (load \(load), \(keys.count) keys) at depth \(depth)")
        if let first = keys.first, let lower {
            precondition(!first.lexicographicallyPrecedes(lower),
                         "BTree invariant: key \(first) below its separator \(lower)")
        }
        if let last = keys.last, let upper {
            precondition(last.lexicographicallyPrecedes(upper),
                         "BTree invariant: key \(last) not below its separator \(upper)")
        }
        return keys.count
    }

    /// Checks the shared prefix and the cached key heads against the keys. O(node size).
    private func checkHeads(keys: [[UInt8]]) {
        precondition(keyHeads.count == keys.count, "BTree invariant: \(keyHeads.count) heads for \(keys.count) keys")
        guard let first = keys.first else {
            precondition(prefixLength == 0 && prefixHead == 0, "BTree invariant: empty node with a prefix")
            return
        }
        let prefix = first.prefix(prefixLength)
        precondition(prefix.count == prefixLength, "BTree invariant: prefix longer than the first key")
        let expectedPrefixHead = prefix.prefix(8).withUnsafeBytes { BTreeLayout.head(of: $0) }
        precondition(prefixHead == expectedPrefixHead, "BTree invariant: stale prefix head")
        for (index, key) in keys.enumerated() {
            precondition(key.starts(with: prefix), "BTree invariant: key \(key) lacks the node prefix \(Array(prefix))")
            let expected = key.withUnsafeBytes { BTreeLayout.head(of: $0, from: prefixLength) }
            precondition(keyHeads[index] == expected, "BTree invariant: stale head for key \(key)")
        }
    }

    /// Checks that `keyEnds` is non-decreasing and covers exactly `keyBytes`. O(keyCount).
    private func checkKeyStorage() {
        var previous: UInt32 = 0
        for end in keyEnds {
            precondition(end >= previous, "BTree invariant: key offsets decrease (\(previous) then \(end))")
            previous = end
        }
        precondition(Int(previous) == keyBytes.count,
                     "BTree invariant: key offsets end at \(previous) but the node has \(keyBytes.count) key bytes")
    }
}
#endif
