#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One end of a key range for `BTree.forEach(from:to:reverse:_:)`.
enum BTreeBound: Sendable, Hashable {
    /// The range includes this key.
    case included([UInt8])
    /// The range stops just short of this key.
    case excluded([UInt8])

    /// The bound's key.
    var key: [UInt8] {
        switch self {
        case .included(let key), .excluded(let key): key
        }
    }

    /// Whether the bound's key itself belongs to the range.
    var isIncluded: Bool {
        if case .included = self { return true }
        return false
    }
}

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

    /// The 8 bytes of `key` starting at `offset`, as a big-endian integer zero-padded past the
    /// end of the key. For two keys sharing their first `offset` bytes, comparing heads orders
    /// them like `compare` unless the heads are equal. Requires `offset <= key.count`. O(1).
    @inline(__always)
    static func head(of key: UnsafeRawBufferPointer, from offset: Int = 0) -> UInt64 {
        if key.count &- offset >= 8 {
            return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        var head: UInt64 = 0
        var shift: UInt64 = 56
        var index = offset
        while index < key.count {
            head |= UInt64(key[index]) &<< shift
            shift &-= 8
            index &+= 1
        }
        return head
    }

    /// Length of the longest common prefix of `a` and `b`. O(result).
    static func commonPrefixLength(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let limit = Swift.min(a.count, b.count)
        var length = 0
        while length < limit && a[length] == b[length] { length += 1 }
        return length
    }

    /// The shortest prefix of `right` that sorts after `left` (suffix truncation of B+tree
    /// separators). Requires `left < right`; the result `s` satisfies `left < s <= right`. O(key length).
    static func separator(between left: UnsafeRawBufferPointer, and right: UnsafeRawBufferPointer) -> [UInt8] {
        let shared = commonPrefixLength(left, right)
        precondition(shared < right.count, "BTree: separator requested for keys out of order")
        return [UInt8](UnsafeRawBufferPointer(rebasing: right[0...shared]))
    }
}

/// An in-memory ordered map from byte-string keys to values: a B+tree with per-node
/// copy-on-write.
///
/// Keys compare lexicographically as unsigned bytes (`memcmp` order; a prefix sorts before any
/// longer key; the empty key is the smallest). Values live only in leaves; internal nodes hold
/// suffix-truncated separator keys. Each node packs its keys into one byte buffer, so the tree
/// allocates a few objects per node rather than one per key.
///
/// **Snapshots.** `BTree` has value semantics: copying it is O(1) and the copy is an immutable
/// snapshot. A mutation first checks, node by node along its path, whether the node is uniquely
/// referenced and copies it otherwise (O(node size) per shared node), so a copy held by another
/// thread is never affected. Copies may be mutated and read concurrently from different threads
/// as long as each individual `BTree` variable has a single writer (ordinary Swift exclusivity).
///
/// Complexities below use *n* for the entry count; node sizes are bounded by `BTreeLayout`.
struct BTree<Value: Sendable>: Sendable {
    /// The root node: a leaf (possibly empty) or an internal node with at least two children.
    var root: Node
    /// Number of entries; maintained by the mutating methods (read it through `count`).
    var entryCount: Int

    /// Creates an empty tree. O(1).
    init() {
        root = Node(isLeaf: true)
        entryCount = 0
    }

    /// Number of entries. O(1).
    var count: Int { entryCount }

    /// Whether the tree has no entries. O(1).
    var isEmpty: Bool { count == 0 }

    /// The value stored for `key`, if any. O(log n).
    func value(forKey key: [UInt8]) -> Value? {
        key.withUnsafeBytes { value(forKey: $0) }
    }

    /// The value stored for the key whose bytes are `key`, if any. O(log n), allocation-free,
    /// and free of reference-count traffic (see `Node.value(forKey:)`).
    func value(forKey key: UnsafeRawBufferPointer) -> Value? {
        root.value(forKey: key)
    }

    /// Whether the tree has an entry for `key`. O(log n).
    func contains(_ key: [UInt8]) -> Bool {
        value(forKey: key) != nil
    }

    /// The entry with the smallest key, or `nil` when the tree is empty. O(log n).
    var first: (key: [UInt8], value: Value)? {
        var node = root
        while !node.isLeaf { node = node.children[0] }
        guard node.keyCount > 0 else { return nil }
        return (node.key(at: 0), node.values[0])
    }

    /// The entry with the largest key, or `nil` when the tree is empty. O(log n).
    var last: (key: [UInt8], value: Value)? {
        var node = root
        while !node.isLeaf { node = node.children[node.children.count - 1] }
        guard node.keyCount > 0 else { return nil }
        let index = node.keyCount - 1
        return (node.key(at: index), node.values[index])
    }

    /// Number of levels (1 for a lone leaf). O(log n). Diagnostics and tests.
    var height: Int {
        var node = root
        var levels = 1
        while !node.isLeaf {
            node = node.children[0]
            levels += 1
        }
        return levels
    }
}
