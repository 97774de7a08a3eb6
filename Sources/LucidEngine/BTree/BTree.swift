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

    /// The value stored for the key whose bytes are `key`, if any. O(log n), allocation-free.
    ///
    /// The descent uses unretained references: `self` is borrowed for the whole call and owns
    /// every node on the path, and no other code runs during the call, so skipping the
    /// reference-count traffic is safe (and keeps concurrent readers of one snapshot from
    /// contending on the refcounts of the upper nodes).
    func value(forKey key: UnsafeRawBufferPointer) -> Value? {
        var node = Unmanaged.passUnretained(root)
        while let child = node._withUnsafeGuaranteedRef({ $0.child(for: key) }) {
            node = child
        }
        return node._withUnsafeGuaranteedRef { leaf in
            let (index, found) = leaf.search(key)
            return found ? leaf.values[index] : nil
        }
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
