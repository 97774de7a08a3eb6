#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Node-size constants and byte-key helpers shared by every `BTree` specialization.
///
/// Generic types cannot have stored static properties, so the constants live in this
/// non-generic namespace.
///
/// **Leaf capacity.** Every leaf entry has a *cost* of `entryCost(keyLength:)` — its key length,
/// clamped to `minEntryCost...maxEntryCost` — and a leaf splits once its *load* (the sum of its
/// entry costs) exceeds `leafCapacity`. A leaf therefore holds at most ~`maxLeafEntries` short
/// keys or ~`maxLeafKeyBytes` key bytes, whichever comes first; clamping the cost of a long key
/// to a quarter of the capacity guarantees that a balanced split (or a merge of two siblings
/// followed by a balanced split) always produces two halves whose load is within
/// `minLeafLoad...leafCapacity`.
enum BTreeLayout {
    /// A leaf of short keys splits once it would hold more than this many entries.
    static let maxLeafEntries = 64
    /// A leaf splits once the (clamped) byte size of its keys exceeds this.
    static let maxLeafKeyBytes = 4096
    /// An internal node splits once it would have more than this many children.
    static let maxInternalChildren = 64
    /// An internal node other than the root is rebalanced when it has fewer children than this.
    static let minInternalChildren = maxInternalChildren / 4
    /// The largest leaf load; see the type's documentation.
    static let leafCapacity = maxLeafKeyBytes
    /// A leaf other than the root is rebalanced when its load drops below this (~1/4 full).
    static let minLeafLoad = leafCapacity / 4
    /// The cost of an entry with a key shorter than this is rounded up to it.
    static let minEntryCost = maxLeafKeyBytes / maxLeafEntries
    /// The cost of an entry with a longer key is capped at this (must not exceed `minLeafLoad`).
    static let maxEntryCost = maxLeafKeyBytes / 4
    /// Longest supported key (keeps the `UInt32` offsets of a node far from overflowing).
    static let maxKeyLength = 1 << 24

    /// The leaf-capacity cost of an entry whose key is `keyLength` bytes long. O(1).
    @inline(__always)
    static func entryCost(keyLength: Int) -> Int {
        Swift.min(Swift.max(keyLength, minEntryCost), maxEntryCost)
    }

    /// Three-way comparison of two byte strings in `memcmp` order (a prefix sorts first):
    /// negative, zero or positive. O(min(lhs.count, rhs.count)).
    @inline(__always)
    static func compare(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Int {
        let common = Swift.min(lhs.count, rhs.count)
        if common != 0 {
            // Both buffers are non-empty here, so both base addresses exist.
            let order = memcmp(lhs.baseAddress.unsafelyUnwrapped, rhs.baseAddress.unsafelyUnwrapped, common)
            if order != 0 { return Int(order) }
        }
        return lhs.count &- rhs.count
    }

    /// The first 8 bytes of `key` as a big-endian integer, zero-padded: comparing the heads
    /// of two keys orders them like `compare` unless the heads are equal. O(1).
    @inline(__always)
    static func head(of key: UnsafeRawBufferPointer) -> UInt64 {
        if key.count >= 8 { return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)) }
        var head: UInt64 = 0
        var shift: UInt64 = 56
        for byte in key {
            head |= UInt64(byte) &<< shift
            shift &-= 8
        }
        return head
    }

    /// The shortest prefix of `right` that sorts after `left` (suffix truncation of B+tree
    /// separators). Requires `left < right`; the result `s` satisfies `left < s <= right`. O(key length).
    static func separator(between left: UnsafeRawBufferPointer, and right: UnsafeRawBufferPointer) -> [UInt8] {
        let common = Swift.min(left.count, right.count)
        var shared = 0
        while shared < common && left[shared] == right[shared] { shared += 1 }
        precondition(shared < right.count, "BTree: separator requested for keys out of order")
        return [UInt8](UnsafeRawBufferPointer(rebasing: right[0...shared]))
    }
}

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
    /// Keys are packed into one contiguous `keyBytes` buffer: key `i` occupies
    /// `keyBytes[keyEnds[i - 1] ..< keyEnds[i]]` (starting at 0 for `i == 0`), so a node costs a
    /// handful of allocations whatever its key count. `keyHeads[i]` caches the first 8 bytes of
    /// key `i` as an integer so that binary search mostly compares integers in one small array
    /// and reads the key bytes only to break ties.
    ///
    /// The arrays are `@exclusivity(unchecked)`: the node's methods never overlap accesses to
    /// them, and the dynamic exclusivity checks Swift otherwise emits for class properties
    /// cost ~10% of a lookup. (Those checks are per-thread, so they never guarded against
    /// data races anyway; copy-on-write does, see below.)
    ///
    /// `@unchecked Sendable` is sound because a node is mutated only while it is uniquely
    /// referenced: `BTree`'s mutating methods check `isKnownUniquelyReferenced` on every node of
    /// the mutation path (root first, then each child before descending into it) and mutate a
    /// fresh copy when the node is shared. A node reachable from another `BTree` value — e.g. a
    /// snapshot handed to another thread — is therefore never written again.
    final class Node: @unchecked Sendable {
        /// The concatenated bytes of all keys (entry keys in a leaf, separators in an internal node).
        @exclusivity(unchecked) var keyBytes: [UInt8]
        /// `keyEnds[i]` is the offset in `keyBytes` just past key `i`; non-decreasing.
        @exclusivity(unchecked) var keyEnds: [UInt32]
        /// `keyHeads[i] == BTreeLayout.head(of: key i)`.
        @exclusivity(unchecked) var keyHeads: [UInt64]
        /// Leaf values, parallel to the keys; always empty in internal nodes.
        @exclusivity(unchecked) var values: [Value]
        /// Child nodes of an internal node (`keyCount + 1` of them); always empty in leaves.
        @exclusivity(unchecked) var children: [Node]
        /// Sum of `BTreeLayout.entryCost` over a leaf's keys; 0 in internal nodes.
        var load: Int
        /// Whether this node is a leaf; never changes.
        let isLeaf: Bool

        /// Creates an empty leaf or internal node. O(1).
        init(isLeaf: Bool) {
            keyBytes = []
            keyEnds = []
            keyHeads = []
            values = []
            children = []
            load = 0
            self.isLeaf = isLeaf
        }

        /// Creates a node sharing `other`'s storage; each array is copied on its first write. O(1).
        private init(copying other: Node) {
            keyBytes = other.keyBytes
            keyEnds = other.keyEnds
            keyHeads = other.keyHeads
            values = other.values
            children = other.children
            load = other.load
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

        /// Replaces `children[i]` by a copy when another tree may share it, so it can be mutated. O(1).
        @inline(__always)
        func ensureUniqueChild(at i: Int) {
            if !isKnownUniquelyReferenced(&children[i]) { children[i] = children[i].copy() }
        }
    }
}

// MARK: - Searching

extension BTree.Node {
    /// The bytes of key `i` inside already-borrowed key storage. O(1).
    @inline(__always)
    private static func key(
        _ i: Int, _ ends: UnsafeBufferPointer<UInt32>, _ bytes: UnsafeRawBufferPointer
    ) -> UnsafeRawBufferPointer {
        let start = i == 0 ? 0 : Int(truncatingIfNeeded: ends[i &- 1])
        let end = Int(truncatingIfNeeded: ends[i])
        return UnsafeRawBufferPointer(start: bytes.baseAddress.map { $0 + start }, count: end &- start)
    }

    /// Three-way comparison of key `i` with `key` (the slow path of binary search, taken
    /// when their heads are equal). O(key length).
    @inline(__always)
    func compareKey(at i: Int, with key: UnsafeRawBufferPointer) -> Int {
        keyEnds.withUnsafeBufferPointer { ends in
            keyBytes.withUnsafeBytes { bytes in BTreeLayout.compare(Self.key(i, ends, bytes), key) }
        }
    }

    /// Binary search for `key`: the index of the first key `>= key` and whether that key equals
    /// `key`. O(log keyCount) integer comparisons plus a key comparison per equal head;
    /// allocation-free.
    @inline(__always)
    func search(_ key: UnsafeRawBufferPointer) -> (index: Int, found: Bool) {
        let head = BTreeLayout.head(of: key)
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
        let head = BTreeLayout.head(of: key)
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

    /// The child of an internal node whose key range contains `key`: the number of separators
    /// `<= key`. O(log keyCount) comparisons.
    @inline(__always)
    func childIndex(for key: UnsafeRawBufferPointer) -> Int {
        firstIndex(after: key, orEqual: false)
    }
}

extension BTree.Node {
    /// For an internal node, the unretained child whose range contains `key`; `nil` for a leaf.
    /// The caller must keep this node alive while using the result. O(log keyCount).
    @inline(__always)
    func child(for key: UnsafeRawBufferPointer) -> Unmanaged<BTree.Node>? {
        guard !isLeaf else { return nil }
        let index = childIndex(for: key)
        return children.withUnsafeBufferPointer { Unmanaged.passUnretained($0[index]) }
    }
}

// MARK: - Editing packed keys

extension BTree.Node {
    /// Inserts `key` so that it becomes key `i`. O(node key bytes + keyCount).
    func insertKey(_ key: UnsafeRawBufferPointer, at i: Int) {
        let start = keyStart(i)
        let length = key.count
        keyBytes.insert(contentsOf: key, at: start)
        keyEnds.insert(UInt32(truncatingIfNeeded: start &+ length), at: i)
        keyHeads.insert(BTreeLayout.head(of: key), at: i)
        guard length != 0 else { return }
        let delta = UInt32(truncatingIfNeeded: length)
        keyEnds.withUnsafeMutableBufferPointer { ends in
            for j in (i &+ 1) ..< ends.count { ends[j] &+= delta }
        }
    }

    /// Appends `key` after the last key. O(key length) amortized.
    func appendKey(_ key: UnsafeRawBufferPointer) {
        keyBytes.append(contentsOf: key)
        keyEnds.append(UInt32(truncatingIfNeeded: keyBytes.count))
        keyHeads.append(BTreeLayout.head(of: key))
    }

    /// Removes key `i`. O(node key bytes + keyCount).
    func removeKey(at i: Int) {
        let start = keyStart(i)
        let end = Int(truncatingIfNeeded: keyEnds[i])
        keyBytes.removeSubrange(start ..< end)
        keyEnds.remove(at: i)
        keyHeads.remove(at: i)
        guard end != start else { return }
        let delta = UInt32(truncatingIfNeeded: end &- start)
        keyEnds.withUnsafeMutableBufferPointer { ends in
            for j in i ..< ends.count { ends[j] &-= delta }
        }
    }

    /// Replaces key `i` by `key`. O(node key bytes + keyCount).
    func replaceKey(at i: Int, with key: [UInt8]) {
        removeKey(at: i)
        key.withUnsafeBytes { insertKey($0, at: i) }
    }

    /// Appends keys `range` of `other` after the last key. O(copied bytes + range.count).
    func appendKeys(of other: BTree.Node, in range: Range<Int>) {
        guard !range.isEmpty else { return }
        let sourceStart = other.keyStart(range.lowerBound)
        let sourceEnd = Int(truncatingIfNeeded: other.keyEnds[range.upperBound &- 1])
        let shift = keyBytes.count &- sourceStart
        keyBytes.append(contentsOf: other.keyBytes[sourceStart ..< sourceEnd])
        keyEnds.reserveCapacity(keyEnds.count &+ range.count)
        for j in range {
            keyEnds.append(UInt32(truncatingIfNeeded: Int(truncatingIfNeeded: other.keyEnds[j]) &+ shift))
        }
        keyHeads.append(contentsOf: other.keyHeads[range])
    }

    /// Removes every key from index `i` on. O(1) plus deinitialization.
    func removeKeys(from i: Int) {
        keyBytes.removeSubrange(keyStart(i)...)
        keyEnds.removeSubrange(i...)
        keyHeads.removeSubrange(i...)
    }
}
