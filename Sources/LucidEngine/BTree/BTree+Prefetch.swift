import CLucidSupport

extension BTreeLayout {
    /// How many leaves ahead `BTree.Node.forEachRun` starts loading a leaf object; the leaf's arrays are
    /// loaded one leaf ahead, once the object (which points to them) has arrived.
    static let prefetchDistance = 4
}

extension BTree.Node {
    /// Where a child's arrays are, for a parent's prefetch: the addresses of the first elements of its `keyHeads`,
    /// of its `keyEnds`, and of its `values` (a leaf) or `children` (an internal node), which are what a search of
    /// the child reads after its heads. Never dereferenced.
    struct ChildHint: Equatable {
        var heads: UInt
        var ends: UInt
        var payload: UInt
    }

    /// The prefetch hint (`childHints`) for `node`: where its arrays are now. O(1).
    @inline(__always)
    static func hint(of node: BTree.Node) -> ChildHint {
        ChildHint(heads: elements(of: node.keyHeads), ends: elements(of: node.keyEnds),
                  payload: node.isLeaf ? elements(of: node.values) : elements(of: node.children))
    }

    /// The address of `array`'s first element (of where it would be, for an empty array). O(1).
    @inline(__always)
    private static func elements<T>(of array: [T]) -> UInt {
        array.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }
}

extension BTree.Node {
    /// Calls `body(child, run)` for each run of the sorted `keys` in `range` that falls in one child of this
    /// internal node, in key order. The runs are all found first so that, when the children are leaves, each
    /// leaf is prefetched (`prefetchChild(_:storage:)`) a few runs before `body` reaches it: with scattered keys,
    /// waiting for each leaf's memory would otherwise dominate. O(runs · log(range.count)) comparisons.
    @inline(__always)
    func forEachRun(of range: Range<Int>, _ keys: PackedKeys.View, _ body: (Int, Range<Int>) -> Void) {
        withUnsafeTemporaryAllocation(of: (child: Int, end: Int).self, capacity: children.count) { runs in
            var runCount = 0
            var start = range.lowerBound
            while start < range.upperBound {
                let child = childIndex(for: keys[start])
                let end = child == keyCount ? range.upperBound
                    : withKey(at: child) { keys.firstIndex(notBelow: $0, in: (start + 1) ..< range.upperBound) }
                runs[runCount] = (child, end)
                runCount += 1
                start = end
            }
            let prefetching = runCount > 1 && children.withUnsafeBufferPointer { $0[0].isLeaf }
            if prefetching {
                for r in 0 ..< Swift.min(runCount, BTreeLayout.prefetchDistance) {
                    prefetchChild(runs[r].child, storage: false)
                }
            }
            start = range.lowerBound
            for r in 0 ..< runCount {
                if prefetching {
                    if r + BTreeLayout.prefetchDistance < runCount {
                        prefetchChild(runs[r + BTreeLayout.prefetchDistance].child, storage: false)
                    }
                    if r + 1 < runCount { prefetchChild(runs[r + 1].child, storage: true) }
                }
                body(runs[r].child, start ..< runs[r].end)
                start = runs[r].end
            }
        }
    }

    /// Hints the CPU to start loading `children[i]` (a leaf about to be updated): with `storage == false`
    /// the node object itself, otherwise the start of its arrays (the object must be cached by now, as it is
    /// read to find them): the heads and key offsets that binary search reads, and the headers of the key
    /// bytes and values. Changes nothing and retains nothing; a hint only. O(1).
    @inline(__always)
    func prefetchChild(_ i: Int, storage: Bool) {
        // References are read as raw pointers: a retain (even one released at once) would write to the object,
        // and so wait for the memory being prefetched.
        let object = children.withUnsafeBufferPointer { children in
            UnsafeRawPointer(children.baseAddress.unsafelyUnwrapped + i).load(as: UnsafeRawPointer.self)
        }
        guard storage else {
            lucid_prefetch(object)
            lucid_prefetch(object + 64)
            return
        }
        Unmanaged<BTree.Node>.fromOpaque(object)._withUnsafeGuaranteedRef { leaf in
            // An array is one reference to its storage object: a header of 32 bytes, then the elements.
            Self.prefetch(Self.storage(of: &leaf.keyHeads), bytes: 32 + 8 * 64)
            Self.prefetch(Self.storage(of: &leaf.keyEnds), bytes: 32 + 4 * 64)
            Self.prefetch(Self.storage(of: &leaf.keyBytes), bytes: 0)
            Self.prefetch(Self.storage(of: &leaf.values), bytes: 0)
        }
    }

    /// Hints the CPU to load, together, everything a search of this node reads once the node object itself
    /// has arrived: every head, and the key offsets and values (leaf) or child references and their hints
    /// (internal node, see `prefetchChild(hintedBy:)`). A point lookup of a node that is not in the CPU cache
    /// otherwise waits for these one after the other: the heads' header, then each binary-search probe, then the
    /// offsets or the child. Sized for the largest node (`maxLeafEntries` entries, `maxInternalChildren`
    /// children); lines past an array's end are never read. Changes nothing and retains nothing; a hint only.
    /// O(1).
    ///
    /// Readers call it concurrently on a shared node. It reads each array's storage address through an `inout`
    /// access (`storage(of:)`), which writes nothing (the properties are `@exclusivity(unchecked)`, so no dynamic
    /// check runs either) but which the thread sanitizer's Swift access-race check reports as a modification.
    /// The read-only spellings tried (`withUnsafeBufferPointer`, a borrowing `withUnsafePointer`) each compile to
    /// a retain and release of the array, an atomic write to memory that readers share, per node visited.
    ///
    /// `hinted: true` is for a node reached through `child(for:)`, which prefetched its heads, key offsets and
    /// values or children from its parent's hint (the same lines): only an internal node's hints are left.
    @inline(__always)
    func prefetchSearch(hinted: Bool = false) {
        if isLeaf {
            guard !hinted else { return }
            Self.prefetch(Self.storage(of: &keyHeads), bytes: 32 + 8 * BTreeLayout.maxLeafEntries)
            Self.prefetch(Self.storage(of: &keyEnds), bytes: 32 + 4 * BTreeLayout.maxLeafEntries)
            Self.prefetch(Self.storage(of: &values), bytes: 0)
        } else {
            let storage = childStorage
            if !hinted {
                Self.prefetch(Self.storage(of: &keyHeads), bytes: 32 + 8 * BTreeLayout.maxInternalChildren)
                Self.prefetch(storage.children, bytes: 32 + 8 * BTreeLayout.maxInternalChildren)
            }
            Self.prefetch(storage.hints, bytes: 32 + MemoryLayout<ChildHint>.stride * BTreeLayout.maxInternalChildren)
        }
    }

    /// Hints the CPU to load the arrays of `children[i]` that a search reads, at the addresses `childHints[i]`
    /// recorded, so that they arrive with the child object rather than after it (the object holds the references
    /// to them): the heads, the key offsets, and the start of the values or children, each with its array's
    /// 32-byte header (its count, which the search reads), sized for the largest node. Reads no child; changes
    /// nothing. O(1).
    @inline(__always)
    func prefetchChild(hintedBy i: Int) {
        let hint = childHints.withUnsafeBufferPointer { $0[i] }
        // Each address is that of the array's first element; its storage object (a 32-byte header) starts before it.
        guard let heads = UnsafeRawPointer(bitPattern: hint.heads &- 32),
              let ends = UnsafeRawPointer(bitPattern: hint.ends &- 32),
              let payload = UnsafeRawPointer(bitPattern: hint.payload &- 32) else { return }
        Self.prefetch(heads, bytes: 32 + 8 * BTreeLayout.maxLeafEntries)
        Self.prefetch(ends, bytes: 32 + 4 * BTreeLayout.maxLeafEntries)
        Self.prefetch(payload, bytes: 32 + 8 * BTreeLayout.maxInternalChildren)
    }

    /// The address of `array`'s storage object, read without retaining it. O(1).
    @inline(__always)
    static func storage<T>(of array: inout [T]) -> UnsafeRawPointer {
        withUnsafeMutablePointer(to: &array) { UnsafeRawPointer($0).load(as: UnsafeRawPointer.self) }
    }

    /// Prefetches the cache lines of `bytes` bytes from `start` (at least one). O(bytes / 64).
    @inline(__always)
    private static func prefetch(_ start: UnsafeRawPointer, bytes: Int) {
        var offset = 0
        repeat {
            lucid_prefetch(start + offset)
            offset &+= 64
        } while offset < bytes
    }
}
