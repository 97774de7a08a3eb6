extension BTree {
    /// An overfull node's new right sibling and the separator that divides it from the left half:
    /// every key left of the split is `< separator`, every key right of it is `>= separator`.
    struct Split {
        var separator: [UInt8]
        var node: Node
    }

    /// A B+tree node. Leaves store entries (`keys[i]` maps to `values[i]`); internal nodes store
    /// `children.count - 1` separator keys, where every key in `children[i]` is `< keys[i]` and
    /// every key in `children[i + 1]` is `>= keys[i]`.
    ///
    /// **Key layout.** Keys are packed into one contiguous `keyBytes` buffer: key `i` occupies
    /// `keyBytes[keyEnds[i - 1] ..< keyEnds[i]]` (starting at 0 for `i == 0`), so a node costs a
    /// handful of allocations whatever its key count. All keys of a node share their first
    /// `prefixLength` bytes, and `keyHeads[i]` caches the next 8 bytes of key `i` as an integer:
    /// binary search compares integers in one small array and reads key bytes only to break
    /// ties, even when every key starts with the same long prefix.
    ///
    /// **Thread safety.** `@unchecked Sendable` is sound because a node is mutated only while it
    /// is uniquely referenced: `BTree`'s mutating methods check `isKnownUniquelyReferenced` on
    /// every node of the mutation path (root first, then each child before descending into it)
    /// and mutate a fresh copy when the node is shared. A node reachable from another `BTree`
    /// value — e.g. a snapshot handed to another thread — is therefore never written again.
    ///
    /// The stored properties are `@exclusivity(unchecked)`: the node's methods never overlap
    /// accesses to them, and the dynamic exclusivity checks Swift otherwise emits for class
    /// properties cost ~10% of a lookup. (Those checks are per-thread, so they never guarded
    /// against data races anyway; copy-on-write does.)
    final class Node: @unchecked Sendable {
        /// The concatenated bytes of all keys (entry keys in a leaf, separators in an internal node).
        @exclusivity(unchecked) var keyBytes: [UInt8]
        /// `keyEnds[i]` is the offset in `keyBytes` just past key `i`; non-decreasing.
        @exclusivity(unchecked) var keyEnds: [UInt32]
        /// `keyHeads[i] == BTreeLayout.head(of: key i, from: prefixLength)`.
        @exclusivity(unchecked) var keyHeads: [UInt64]
        /// Leaf values, parallel to the keys; always empty in internal nodes.
        @exclusivity(unchecked) var values: [Value]
        /// Child nodes of an internal node (`keyCount + 1` of them); always empty in leaves. Set only in this file:
        /// by the methods under "Editing children", which keep `childHints` parallel to it, by
        /// `ensureUniqueChild` (see there for the hints) and by the storage-capacity methods (which keep both
        /// arrays' contents).
        @exclusivity(unchecked) private(set) var children: [Node]
        /// Prefetch hints, parallel to `children`: `childHints[i]` holds the addresses of the storage of
        /// `children[i]`'s arrays that a search reads (``ChildHint``), so that a descent can start loading them
        /// together with the child object instead of after it (`child(for:)`). Never dereferenced: a stale hint
        /// would only make a prefetch useless. Kept current by the methods that change `children` and by
        /// `childChanged(at:)`, which every mutation of a child calls once done; `checkInvariants` checks it.
        @exclusivity(unchecked) private(set) var childHints: [ChildHint]
        /// Sum of `BTreeLayout.entryCost` over a leaf's keys; 0 in internal nodes.
        @exclusivity(unchecked) var load: Int
        /// Every key of the node starts with the first `prefixLength` bytes of key 0 (0 when empty).
        @exclusivity(unchecked) var prefixLength: Int
        /// `BTreeLayout.head` of the first `min(prefixLength, 8)` bytes of the shared prefix.
        @exclusivity(unchecked) var prefixHead: UInt64
        /// Whether this node is a leaf; never changes.
        let isLeaf: Bool

        /// Creates an empty leaf or internal node. O(1).
        init(isLeaf: Bool) {
            keyBytes = []
            keyEnds = []
            keyHeads = []
            values = []
            children = []
            childHints = []
            load = 0
            prefixLength = 0
            prefixHead = 0
            self.isLeaf = isLeaf
        }

        /// Creates a node sharing `other`'s storage; each array is copied on its first write. O(1).
        private init(copying other: Node) {
            keyBytes = other.keyBytes
            keyEnds = other.keyEnds
            keyHeads = other.keyHeads
            values = other.values
            children = other.children
            childHints = other.childHints
            load = other.load
            prefixLength = other.prefixLength
            prefixHead = other.prefixHead
            isLeaf = other.isLeaf
        }

        /// A mutable duplicate of this (shared) node. O(1) now; the first write to each array of
        /// the duplicate copies that array, O(node size).
        func copy() -> Node { Node(copying: self) }

        /// Number of keys (entries in a leaf, separators in an internal node). O(1).
        @inline(__always)
        var keyCount: Int { keyEnds.count }

        /// Offset of key `i` in `keyBytes`. O(1).
        @inline(__always)
        func keyStart(_ i: Int) -> Int { i == 0 ? 0 : Int(truncatingIfNeeded: keyEnds[i &- 1]) }

        /// Length in bytes of key `i`. O(1).
        @inline(__always)
        func keyLength(at i: Int) -> Int { Int(truncatingIfNeeded: keyEnds[i]) &- keyStart(i) }

        /// A copy of key `i`. O(key length).
        func key(at i: Int) -> [UInt8] { Array(keyBytes[keyStart(i) ..< Int(keyEnds[i])]) }

        /// Calls `body` with the bytes of key `i`, valid only during the call. O(1) + `body`.
        @inline(__always)
        func withKey<R>(at i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            let start = keyStart(i), end = Int(truncatingIfNeeded: keyEnds[i])
            return try keyBytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start ..< end])) }
        }

        /// Whether this non-root node has dropped below the minimum fill and must be rebalanced. O(1).
        @inline(__always)
        var isUnderfull: Bool {
            isLeaf ? load < BTreeLayout.minLeafLoad : children.count < BTreeLayout.minInternalChildren
        }

        /// Replaces `children[i]` by a copy when another tree may share it, so it can be mutated. O(1). (The copy
        /// shares the original's storage, so `childHints[i]` stays right until the caller mutates the child and
        /// calls `childChanged(at:)`. The call itself may copy this node's own `children` when this node is a copy
        /// sharing them, which moves what this node's parent's hint records: the parent calls `childChanged` after
        /// every call into this node, whatever it did.)
        @inline(__always)
        func ensureUniqueChild(at i: Int) {
            if !isKnownUniquelyReferenced(&children[i]) { children[i] = children[i].copy() }
        }
    }
}

// MARK: - Editing children

extension BTree.Node {
    /// Records that `children[i]` was mutated (its arrays may have moved). Every mutation of a child, through
    /// this node, ends with it. Writes only when the hint changed: the node may have just been copied from a
    /// snapshot, and a write would then copy its `childHints` too. O(1).
    @inline(__always)
    func childChanged(at i: Int) {
        let hint = Self.hint(of: children[i])
        if childHints[i] != hint { childHints[i] = hint }
    }

    /// Reserves room for `count` children. O(1) on a node without children.
    func reserveChildren(_ count: Int) {
        children.reserveCapacity(count)
        childHints.reserveCapacity(count)
    }

    /// Inserts `node` as child `i`. O(children).
    func insertChild(_ node: BTree.Node, at i: Int) {
        children.insert(node, at: i)
        childHints.insert(Self.hint(of: node), at: i)
    }

    /// The addresses of the storage of `children` and `childHints`, read without retaining them, for
    /// `prefetchSearch`. O(1).
    @inline(__always)
    var childStorage: (children: UnsafeRawPointer, hints: UnsafeRawPointer) {
        (Self.storage(of: &children), Self.storage(of: &childHints))
    }

    /// Appends `node` as the last child. O(1) amortized.
    func appendChild(_ node: BTree.Node) {
        children.append(node)
        childHints.append(Self.hint(of: node))
    }

    /// Inserts `nodes` as children `i ..< i + nodes.count`. O(children).
    func insertChildren(_ nodes: [BTree.Node], at i: Int) {
        children.insert(contentsOf: nodes, at: i)
        childHints.insert(contentsOf: nodes.map(Self.hint(of:)), at: i)
    }

    /// Appends children `range` of `other` (with their hints) after the last child. O(range.count).
    func appendChildren(of other: BTree.Node, in range: Range<Int>) {
        children.append(contentsOf: other.children[range])
        childHints.append(contentsOf: other.childHints[range])
    }

    /// Replaces child `i` by `node`. O(1).
    func replaceChild(at i: Int, with node: BTree.Node) {
        children[i] = node
        childHints[i] = Self.hint(of: node)
    }

    /// Removes child `i`. O(children).
    func removeChild(at i: Int) {
        children.remove(at: i)
        childHints.remove(at: i)
    }

    /// Removes every child from index `i` on. O(removed children).
    func removeChildren(from i: Int) {
        children.removeSubrange(i...)
        childHints.removeSubrange(i...)
    }
}

// MARK: - Searching

extension BTree.Node {
    /// The bytes of key `i` inside already-borrowed key storage. O(1).
    @inline(__always)
    static func key(
        _ i: Int, _ ends: UnsafeBufferPointer<UInt32>, _ bytes: UnsafeRawBufferPointer
    ) -> UnsafeRawBufferPointer {
        let start = i == 0 ? 0 : Int(truncatingIfNeeded: ends[i &- 1])
        let end = Int(truncatingIfNeeded: ends[i])
        return UnsafeRawBufferPointer(start: bytes.baseAddress.map { $0 + start }, count: end &- start)
    }

    /// Three-way comparison of key `i` with `key` (the tie-breaking slow path of binary
    /// search). O(key length).
    @inline(__always)
    func compareKey(at i: Int, with key: UnsafeRawBufferPointer) -> Int {
        keyEnds.withUnsafeBufferPointer { ends in
            keyBytes.withUnsafeBytes { bytes in BTreeLayout.compare(Self.key(i, ends, bytes), key) }
        }
    }

    /// Where `key` falls relative to the node's shared prefix: negative if it sorts before every
    /// key that has the prefix, positive if after, zero if `key` starts with the prefix.
    /// O(1) for prefixes of up to 8 bytes, O(prefixLength) beyond.
    @inline(__always)
    func prefixOrder(of key: UnsafeRawBufferPointer) -> Int {
        let length = prefixLength
        guard length != 0 else { return 0 }
        let headBytes = Swift.min(length, 8)
        let masked = BTreeLayout.head(of: key) & (UInt64.max &<< UInt64(truncatingIfNeeded: 64 &- 8 &* headBytes))
        if masked != prefixHead { return masked < prefixHead ? -1 : 1 }
        if length > 8 && key.count > 8 {
            let end = Swift.min(key.count, length)
            let order = withKey(at: 0) { first in
                BTreeLayout.compare(UnsafeRawBufferPointer(rebasing: key[8 ..< end]),
                                    UnsafeRawBufferPointer(rebasing: first[8 ..< end]))
            }
            if order != 0 { return order }
        }
        return key.count < length ? -1 : 0
    }

    /// Binary search for `key`: the index of the first key `>= key` and whether that key equals
    /// `key`. O(log keyCount) integer comparisons plus a key comparison per equal head;
    /// allocation-free.
    @inline(__always)
    func search(_ key: UnsafeRawBufferPointer) -> (index: Int, found: Bool) {
        let outside = prefixOrder(of: key)
        if outside != 0 { return (outside < 0 ? 0 : keyCount, false) }
        let head = BTreeLayout.head(of: key, from: prefixLength)
        return keyHeads.withUnsafeBufferPointer { heads in
            var low = 0
            var high = heads.count
            while low < high {
                let mid = (low &+ high) &>> 1
                let candidate = heads[mid]
                if candidate < head {
                    low = mid &+ 1
                } else if candidate > head {
                    high = mid
                } else {
                    let order = compareKey(at: mid, with: key)
                    if order < 0 {
                        low = mid &+ 1
                    } else if order > 0 {
                        high = mid
                    } else {
                        return (mid, true)
                    }
                }
            }
            return (low, false)
        }
    }

    /// The index of the first key `> key` (`orEqual == false`) or `>= key` (`orEqual == true`).
    /// O(log keyCount) integer comparisons plus a key comparison per equal head.
    @inline(__always)
    func firstIndex(after key: UnsafeRawBufferPointer, orEqual: Bool) -> Int {
        let outside = prefixOrder(of: key)
        if outside != 0 { return outside < 0 ? 0 : keyCount }
        let head = BTreeLayout.head(of: key, from: prefixLength)
        return keyHeads.withUnsafeBufferPointer { heads in
            var low = 0
            var high = heads.count
            while low < high {
                let mid = (low &+ high) &>> 1
                let candidate = heads[mid]
                let before: Bool
                if candidate != head {
                    before = candidate < head
                } else {
                    let order = compareKey(at: mid, with: key)
                    before = order < 0 || (order == 0 && !orEqual)
                }
                if before {
                    low = mid &+ 1
                } else {
                    high = mid
                }
            }
            return low
        }
    }

    /// The value stored for `key` in the subtree rooted at this node, if any.
    /// O(height · log fanout) integer comparisons plus one key comparison per level at most.
    ///
    /// The descent uses unretained references: the caller holds this node (a `BTree` borrowed
    /// for the call holds its root), so every node below stays alive, and no other code runs
    /// during the call. Skipping the reference counting also keeps concurrent readers of one
    /// snapshot from contending on the refcounts of the upper nodes.
    ///
    /// Memory: a node object refers to its arrays (each an allocation of its own), so in a
    /// descent through nodes that are not in the CPU cache each array would wait for the object.
    /// Going down, `child(for:)` starts loading the child's heads, key offsets and values or
    /// children from the parent's hint (`childHints`) as the child object is loaded, so they
    /// arrive together; what is left waiting for the object is an internal node's hints (its
    /// own prefetch, `prefetchSearch`) and, past the binary search, the bytes of the key it
    /// compares.
    func value(forKey key: UnsafeRawBufferPointer) -> Value? {
        var node = Unmanaged.passUnretained(self)
        var hinted = false   // below the top, `child(for:)` has prefetched each node from its hint
        while let child = node._withUnsafeGuaranteedRef({ node in
            node.prefetchSearch(hinted: hinted)
            return node.child(for: key)
        }) {
            node = child
            hinted = true
        }
        return node._withUnsafeGuaranteedRef { leaf in
            let (index, found) = leaf.search(key)
            return found ? leaf.values[index] : nil
        }
    }

    /// For an internal node, the unretained child whose range contains `key`, whose arrays it
    /// starts loading (`prefetchChild(hintedBy:)`); `nil` for a leaf. The caller must keep this
    /// node alive while using the result. O(log keyCount).
    @inline(__always)
    func child(for key: UnsafeRawBufferPointer) -> Unmanaged<BTree.Node>? {
        guard !isLeaf else { return nil }
        let index = childIndex(for: key)
        prefetchChild(hintedBy: index)
        return children.withUnsafeBufferPointer { Unmanaged.passUnretained($0[index]) }
    }

    /// The child of an internal node whose key range contains `key`: the number of separators
    /// `<= key`. O(log keyCount) comparisons.
    @inline(__always)
    func childIndex(for key: UnsafeRawBufferPointer) -> Int {
        firstIndex(after: key, orEqual: false)
    }
}

// MARK: - Storage capacity

extension BTree.Node {
    /// Makes `array` able to hold `count` elements. When it must grow, it grows to a quarter more than `count`
    /// rather than doubling as the standard library would: with leaf splits and sorted runs trimming what they
    /// leave unused (`releaseSpareCapacity`), a leaf filled by insertions keeps its storage within about a quarter
    /// of its entries (doubling left a leaf's four arrays up to twice their size, most of a loaded tree's memory),
    /// at the price of one copy per quarter of growth. (Internal nodes and leaves merged by deletions still grow
    /// as the standard library grows them: they are few, or shrinking.) O(count) when it grows, O(1) otherwise.
    @inline(__always)
    static func makeRoom<T>(in array: inout [T], for count: Int) {
        if count > array.capacity { array.reserveCapacity(Self.roomyCapacity(count)) }
    }

    /// The capacity `makeRoom` gives storage that must hold `count` elements: a quarter more.
    @inline(__always)
    static func roomyCapacity(_ count: Int) -> Int { count &+ Swift.max(count &>> 2, 2) }

    /// Makes room, as `makeRoom(in:for:)` does, for `keys` more keys of `bytes` bytes in all, and their values
    /// (a leaf) or children (an internal node). O(node size) when storage grows, O(1) otherwise.
    func makeRoom(forKeys keys: Int, bytes: Int) {
        Self.makeRoom(in: &keyBytes, for: keyBytes.count &+ bytes)
        Self.makeRoom(in: &keyEnds, for: keyCount &+ keys)
        Self.makeRoom(in: &keyHeads, for: keyCount &+ keys)
        if isLeaf { Self.makeRoom(in: &values, for: keyCount &+ keys) } else {
            Self.makeRoom(in: &children, for: children.count &+ keys)
            Self.makeRoom(in: &childHints, for: childHints.count &+ keys)
        }
    }

    /// A copy of `array` with room for a quarter more elements. O(count).
    static func trimmedCopy<T>(of array: [T]) -> [T] {
        [T](unsafeUninitializedCapacity: roomyCapacity(array.count)) { buffer, initialized in
            array.withUnsafeBufferPointer { source in _ = buffer.initialize(fromContentsOf: source) }
            initialized = array.count
        }
    }

    /// Shrinks the node's arrays to a quarter more than their size when a split or a run of replaced keys left
    /// them with half again as much room or more (well past what `makeRoom` and the allocator's rounding give, so
    /// storage just grown is never copied again). O(node size) when it shrinks, O(1) otherwise.
    func releaseSpareCapacity() {
        func spacious(_ capacity: Int, _ count: Int) -> Bool { capacity > count + count / 2 + 16 }
        guard spacious(keyEnds.capacity, keyCount) || spacious(keyBytes.capacity, keyBytes.count) else { return }
        keyBytes = Self.trimmedCopy(of: keyBytes)
        keyEnds = Self.trimmedCopy(of: keyEnds)
        keyHeads = Self.trimmedCopy(of: keyHeads)
        if isLeaf { values = Self.trimmedCopy(of: values) } else {
            children = Self.trimmedCopy(of: children)
            childHints = Self.trimmedCopy(of: childHints)
        }
    }

    /// Reserves room for `keys` keys of `keyBytes` bytes in total (and their values or children). O(1) on an
    /// empty node.
    func reserveCapacity(keys: Int, keyBytes byteCount: Int) {
        keyBytes.reserveCapacity(byteCount)
        keyEnds.reserveCapacity(keys)
        keyHeads.reserveCapacity(keys)
        if isLeaf { values.reserveCapacity(keys) } else {
            children.reserveCapacity(keys + 1)
            childHints.reserveCapacity(keys + 1)
        }
    }
}
