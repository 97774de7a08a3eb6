import CLucidSupport

extension BTree {
    /// The values stored for `keys`, in their order: element `i` is `value(forKey: keys[i])`. The keys need not be
    /// sorted or distinct.
    ///
    /// Same result as looking each key up alone, but the keys descend the tree together, one level at a time:
    /// every node the keys reach at a level is prefetched (its object, then the arrays a search reads, then the
    /// leaf entry a search will compare and return) before any of them is searched. A lookup of a key in a tree
    /// larger than the processor's caches waits for memory at every level; here the waits of all the keys at one
    /// level overlap. For a few dozen keys scattered over a large tree (the records an index query names) that is
    /// several times faster than separate lookups; sorted runs of neighbouring keys are better served by
    /// `values(forSortedKeys:in:)`, which searches each node once per run.
    /// - Complexity: O(m log n) comparisons for m keys, the result's allocation, no reference counting. Keys are
    ///   taken in groups of `BTreeLayout.lookupGroup`.
    func values(forKeys keys: [[UInt8]]) -> [Value?] { values(forKeys: keys) { $0 } }

    /// ``values(forKeys:)`` with each value passed through `transform` (one array, not two).
    func values<T>(forKeys keys: [[UInt8]], _ transform: (Value?) -> T) -> [T] {
        if keys.count < 2 { return keys.map { transform(value(forKey: $0)) } }
        var result: [T] = []
        result.reserveCapacity(keys.count)
        // In groups small enough that what one level prefetches is still in the processor's cache when it is read.
        for start in stride(from: 0, to: keys.count, by: BTreeLayout.lookupGroup) {
            appendValues(forKeys: keys[start ..< min(keys.count, start + BTreeLayout.lookupGroup)], transform,
                         to: &result)
        }
        return result
    }

    private func appendValues<T>(forKeys keys: ArraySlice<[UInt8]>, _ transform: (Value?) -> T,
                                 to result: inout [T]) {
        let m = keys.count
        let first = keys.startIndex
        withUnsafeTemporaryAllocation(of: Unmanaged<Node>.self, capacity: m) { nodes in
            // The tree (and so every node reached) lives as long as `self`; nodes are held unretained.
            _ = nodes.initialize(from: repeatElement(Unmanaged.passUnretained(root), count: m))
            var descending = !root.isLeaf
            // Below the root, `child(for:)` has prefetched each node from its hint.
            var atRoot = true
            while descending {
                descending = false
                for k in 0 ..< m { nodes[k]._withUnsafeGuaranteedRef { $0.prefetchSearch(hinted: !atRoot) } }
                atRoot = false
                for k in 0 ..< m {
                    let child = keys[first + k].withUnsafeBytes { key in
                        nodes[k]._withUnsafeGuaranteedRef { $0.child(for: key) }
                    }
                    guard let child else { continue }   // a leaf (every leaf lies at the same depth)
                    nodes[k] = child
                    lucid_prefetch(child.toOpaque())
                    lucid_prefetch(child.toOpaque() + 64)
                    descending = true
                }
            }
            for k in 0 ..< m { nodes[k]._withUnsafeGuaranteedRef { $0.prefetchSearch(hinted: !atRoot) } }
            for k in 0 ..< m {
                keys[first + k].withUnsafeBytes { key in nodes[k]._withUnsafeGuaranteedRef { $0.prefetchEntry(for: key) } }
            }
            for k in 0 ..< m {
                result.append(transform(keys[first + k].withUnsafeBytes { key in
                    nodes[k]._withUnsafeGuaranteedRef { leaf in
                        let (index, found) = leaf.search(key)
                        return found ? leaf.values[index] : nil
                    }
                }))
            }
        }
    }
}

extension BTreeLayout {
    /// How many keys ``BTree/values(forKeys:)`` looks up together.
    static let lookupGroup = 32
}

extension BTree.Node {
    /// Hints the CPU to load what a search of this leaf for `key` reads last: the bytes of the key whose head
    /// matches (compared in full to confirm it) and that entry's value. Reads the heads (which should be cached
    /// by now: `prefetchSearch` for the root, `child(for:)` from the parent's hint below it); changes nothing.
    /// O(log keyCount).
    @inline(__always)
    func prefetchEntry(for key: UnsafeRawBufferPointer) {
        guard prefixOrder(of: key) == 0 else { return }
        let head = BTreeLayout.head(of: key, from: prefixLength)
        let index = keyHeads.withUnsafeBufferPointer { heads in
            var low = 0
            var high = heads.count
            while low < high {
                let mid = (low &+ high) &>> 1
                if heads[mid] < head { low = mid &+ 1 } else { high = mid }
            }
            return low
        }
        guard index < keyCount else { return }
        // Addresses are computed from the arrays' storage objects (a 32-byte header, then the elements), read without
        // a retain: a retain would write to the storage and so wait for it. The `inout` address reads write nothing;
        // the thread sanitizer's access-race check reports them as modifications (see `prefetchSearch`).
        lucid_prefetch(Self.storage(of: &keyBytes) + 32 + keyStart(index))
        lucid_prefetch(Self.storage(of: &values) + 32 + index &* MemoryLayout<Value>.stride)
    }
}
