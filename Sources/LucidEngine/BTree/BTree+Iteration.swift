extension BTree {
    /// Visits the entries whose keys lie between `lower` and `upper` in key order (descending
    /// when `reverse`); `body` returns `false` to stop early.
    ///
    /// `lower` is always the smaller end and `upper` the larger one, whatever the direction; a
    /// `nil` bound leaves that side open. A range whose lower bound lies above its upper bound
    /// visits nothing. The key buffer passed to `body` is valid only during that call.
    ///
    /// O(log n + k) for k visited entries; no allocation per entry.
    func forEach(
        from lower: BTreeBound?,
        to upper: BTreeBound?,
        reverse: Bool,
        _ body: (UnsafeRawBufferPointer, Value) throws -> Bool
    ) rethrows {
        _ = try root.visit(from: lower, to: upper, reverse: reverse, body)
    }

    /// Visits every entry in ascending key order until `body` returns `false`. O(n).
    func forEach(_ body: (UnsafeRawBufferPointer, Value) throws -> Bool) rethrows {
        _ = try root.visit(from: nil, to: nil, reverse: false, body)
    }
}

extension BTree.Node {
    /// Visits this subtree's entries within the bounds (see `BTree.forEach`). Bounds are passed
    /// down only to the children on the edges of the range, so interior leaves are walked
    /// without comparisons. Returns `false` if `body` asked to stop. O(height + visited).
    func visit(
        from lower: BTreeBound?,
        to upper: BTreeBound?,
        reverse: Bool,
        _ body: (UnsafeRawBufferPointer, Value) throws -> Bool
    ) rethrows -> Bool {
        if isLeaf {
            return try visitLeaf(from: lower, to: upper, reverse: reverse, body)
        }
        let firstChild = lower.map { bound in bound.key.withUnsafeBytes { childIndex(for: $0) } } ?? 0
        let lastChild = upper.map { bound in bound.key.withUnsafeBytes { childIndex(for: $0) } }
            ?? children.count - 1
        guard firstChild <= lastChild else { return true }
        // Children are visited through unretained references, as `value(forKey:)` descends: this node holds them,
        // and the caller holds this node (the tree, a value, is borrowed for the walk), so no reference count is
        // paid per child.
        func visitChild(_ index: Int) throws -> Bool {
            let child = children.withUnsafeBufferPointer { Unmanaged.passUnretained($0[index]) }
            return try child._withUnsafeGuaranteedRef { child in
                try child.visit(from: index == firstChild ? lower : nil, to: index == lastChild ? upper : nil,
                                reverse: reverse, body)
            }
        }
        if reverse {
            for index in stride(from: lastChild, through: firstChild, by: -1) where try !visitChild(index) {
                return false
            }
        } else {
            for index in firstChild ... lastChild where try !visitChild(index) { return false }
        }
        return true
    }

    /// Leaf part of `visit`: resolves the bounds to an index range, then calls `body` on each
    /// entry of it. O(log keyCount + visited).
    private func visitLeaf(
        from lower: BTreeBound?,
        to upper: BTreeBound?,
        reverse: Bool,
        _ body: (UnsafeRawBufferPointer, Value) throws -> Bool
    ) rethrows -> Bool {
        let start: Int
        if let lower {
            // Included: first key >= bound; excluded: first key > bound.
            start = lower.key.withUnsafeBytes { firstIndex(after: $0, orEqual: lower.isIncluded) }
        } else {
            start = 0
        }
        let end: Int
        if let upper {
            // Included: up to the first key > bound; excluded: up to the first key >= bound.
            end = upper.key.withUnsafeBytes { firstIndex(after: $0, orEqual: !upper.isIncluded) }
        } else {
            end = keyCount
        }
        guard start < end else { return true }
        // The arrays are borrowed once for the whole run rather than once per entry (each borrow retained and
        // released its array). Nothing mutates a node while it is visited: the tree is a value the caller holds.
        return try keyEnds.withUnsafeBufferPointer { ends in
            try keyBytes.withUnsafeBytes { bytes in
                try values.withUnsafeBufferPointer { values in
                    func visit(_ index: Int) throws -> Bool {
                        let from = index == 0 ? 0 : Int(truncatingIfNeeded: ends[index &- 1])
                        let key = UnsafeRawBufferPointer(rebasing: bytes[from ..< Int(truncatingIfNeeded: ends[index])])
                        return try body(key, values[index])
                    }
                    if reverse {
                        for index in stride(from: end - 1, through: start, by: -1) where try !visit(index) { return false }
                    } else {
                        for index in start ..< end where try !visit(index) { return false }
                    }
                    return true
                }
            }
        }
    }
}
