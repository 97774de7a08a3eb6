extension BTree {
    /// Builds a tree from entries given in strictly increasing key order, in O(n): leaves are filled to about
    /// 7/8 of their capacity left to right, then each internal level is built over the one below. Used to load
    /// checkpoints. The result satisfies every invariant of an incrementally built tree.
    ///
    /// Several builders can fill consecutive key ranges on separate threads: each hands its leaves over as a
    /// ``LeafRun`` and ``BTree/assemble(_:)`` joins the runs into one tree (a checkpoint's chunks).
    struct Builder {
        /// Sealed leaves, left to right. A level's boundary keys are read from its nodes (the leftmost and
        /// rightmost leaf below each), never copied out.
        private var leaves: [Node] = []
        private var current = Node(isLeaf: true)
        private var count = 0
        /// Bytes of keys in the last sealed leaf: the next leaf reserves about as many, so that filling it
        /// reallocates nothing (a checkpoint's keys have similar lengths throughout).
        private var lastLeafKeyBytes = 0

        private static var leafTarget: Int { BTreeLayout.leafCapacity * 7 / 8 }
        private static var leafEntryTarget: Int { BTreeLayout.maxLeafEntries * 7 / 8 }
        fileprivate static var internalTarget: Int { BTreeLayout.maxInternalChildren * 7 / 8 }

        init() {}

        /// Appends an entry. Returns false (and ignores it) when `key` is not greater than the previous key.
        /// - Complexity: O(key length), amortized; allocates only when a leaf fills.
        mutating func append(_ key: UnsafeRawBufferPointer, _ value: Value) -> Bool {
            // The previous key is the current leaf's last one (a leaf is sealed only when the next key arrives,
            // so the current leaf is empty only before the first entry).
            if current.keyCount > 0 && !current.lastKeyPrecedes(key) { return false }
            appendAscending(key, value)
            return true
        }

        /// Appends an entry whose key the caller knows to be greater than the previous key (a checkpoint's
        /// prefix decoder tells from the shared length alone, see `PrefixDecoder.next`). Checked in debug builds
        /// only. - Complexity: O(key length), amortized; allocates only when a leaf fills.
        mutating func appendAscending(_ key: UnsafeRawBufferPointer, _ value: Value) {
            assert(current.keyCount == 0 || current.lastKeyPrecedes(key), "BTree.Builder: keys out of order")
            let cost = BTreeLayout.entryCost(keyLength: key.count)
            if current.keyCount > 0
                && (current.keyCount >= Self.leafEntryTarget || current.load + cost > Self.leafTarget) {
                sealLeaf()
            }
            if current.keyCount == 0 {
                current.keyEnds.reserveCapacity(Self.leafEntryTarget)
                current.values.reserveCapacity(Self.leafEntryTarget)
                current.keyBytes.reserveCapacity(Swift.max(lastLeafKeyBytes + lastLeafKeyBytes / 16, key.count))
            }
            // Typed, so that the copy is one memcpy rather than a byte-by-byte loop.
            current.keyBytes.append(contentsOf: key.assumingMemoryBound(to: UInt8.self))
            current.keyEnds.append(UInt32(truncatingIfNeeded: current.keyBytes.count))
            current.values.append(value)
            current.load += cost
            count += 1
        }

        /// ``append(_:_:)`` for an array key.
        mutating func append(_ key: [UInt8], _ value: Value) -> Bool {
            key.withUnsafeBytes { append($0, value) }
        }

        private mutating func sealLeaf() {
            current.rebuildHeads()
            lastLeafKeyBytes = current.keyBytes.count
            leaves.append(current)
            current = Node(isLeaf: true)
        }

        /// The finished tree. - Complexity: O(n).
        consuming func build() -> BTree {
            // A single run is in order by construction.
            BTree.assemble([leafRun()]).unsafelyUnwrapped
        }

        /// The leaves built so far, left to right, for ``BTree/assemble(_:)``. Every leaf but the last is at
        /// least minimally full. - Complexity: O(1) after sealing the current leaf.
        consuming func leafRun() -> LeafRun {
            if current.keyCount > 0 { sealLeaf() }
            return LeafRun(leaves: leaves, count: count)
        }

        /// An underfull last leaf is merged with its left neighbour, and the pair split evenly when too big.
        fileprivate static func rebalanceLastLeaf(_ level: inout [Node]) {
            guard level.count >= 2, level[level.count - 1].load < BTreeLayout.minLeafLoad else { return }
            appendToLastLeaf(level.removeLast(), in: &level)
        }

        /// Moves every entry of `leaf` (which must follow them all) into the last leaf of `level`, and splits that
        /// leaf evenly when it is then too big. O(size of the two leaves).
        fileprivate static func appendToLastLeaf(_ leaf: Node, in level: inout [Node]) {
            let node = level[level.count - 1]
            node.appendKeys(of: leaf, in: 0..<leaf.keyCount)
            node.values.append(contentsOf: leaf.values)
            node.load += leaf.load
            if node.load > BTreeLayout.leafCapacity || node.keyCount > BTreeLayout.maxLeafEntries {
                level.append(node.splitLeaf().node)
            }
        }

        /// Calls `body` with the last key under `node` (its rightmost leaf's). O(height).
        fileprivate static func withLastKey<R>(_ node: Node, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            var n = node
            while !n.isLeaf { n = n.children[n.children.count - 1] }
            return n.withKey(at: n.keyCount - 1, body)
        }

        /// Calls `body` with the first key under `node` (its leftmost leaf's). O(height).
        fileprivate static func withFirstKey<R>(_ node: Node, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            var n = node
            while !n.isLeaf { n = n.children[0] }
            return n.withKey(at: 0, body)
        }

        fileprivate static func buildInternalLevel(_ children: [Node]) -> [Node] {
            var parents: [Node] = []
            parents.reserveCapacity(children.count / internalTarget + 1)
            var index = 0
            while index < children.count {
                var take = min(internalTarget, children.count - index)
                // Never leave a last parent with fewer than the minimum children: share them out.
                let rest = children.count - index - take
                if rest > 0 && rest < BTreeLayout.minInternalChildren { take = (children.count - index + 1) / 2 }
                let node = Node(isLeaf: false)
                node.reserveChildren(take)
                node.keyEnds.reserveCapacity(take - 1)
                for j in index..<(index + take) {
                    if j > index {
                        // BTreeLayout.separator, appended in place.
                        withLastKey(children[j - 1]) { left in
                            withFirstKey(children[j]) { right in
                                let shared = BTreeLayout.commonPrefixLength(left, right)
                                precondition(shared < right.count, "BTree: separator requested for keys out of order")
                                node.keyBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: right[0...shared]))
                            }
                        }
                        node.keyEnds.append(UInt32(truncatingIfNeeded: node.keyBytes.count))
                    }
                    node.appendChild(children[j])
                }
                node.rebuildHeads()
                parents.append(node)
                index += take
            }
            return parents
        }
    }

    /// Consecutive leaves of a tree being built (``Builder/leafRun()``), with their entry count.
    struct LeafRun: @unchecked Sendable {
        // `@unchecked`: the leaves are fresh nodes that only the run's holder reaches (see `Node`'s thread safety).
        fileprivate var leaves: [Node]
        /// Number of entries in the run's leaves.
        var count: Int
    }

    /// Joins leaf runs covering consecutive key ranges, in order, into one tree, or returns nil when a run's first
    /// key is not greater than the previous run's last key. An underfull last leaf of a run is merged with its left
    /// neighbour, or, when it is the only leaf so far, with the next run's first leaf (split evenly when the pair
    /// is too big), so the result satisfies every invariant of a tree built in one run, whatever the runs' sizes.
    /// - Complexity: O(number of leaves + separator bytes), plus O(node size) per joined leaf.
    static func assemble(_ runs: [LeafRun]) -> BTree? {
        var tree = BTree()
        var level: [Node] = []
        level.reserveCapacity(runs.reduce(0) { $0 + $1.leaves.count })
        var count = 0
        for run in runs where !run.leaves.isEmpty {
            if let last = level.last {
                let ordered = Builder.withLastKey(last) { previous in
                    Builder.withFirstKey(run.leaves[0]) { BTreeLayout.compare(previous, $0) < 0 }
                }
                guard ordered else { return nil }
            }
            var leaves = run.leaves[...]
            // A lone underfull leaf so far (the first run was one small leaf) has no left neighbour to merge
            // into: the next run's first leaf joins it instead.
            if level.count == 1 && level[0].load < BTreeLayout.minLeafLoad {
                Builder.appendToLastLeaf(leaves.removeFirst(), in: &level)
            }
            level.append(contentsOf: leaves)
            // Only a run's last leaf can be underfull: fix it before the next run comes after it.
            Builder.rebalanceLastLeaf(&level)
            count += run.count
        }
        guard count > 0 else { return tree }
        while level.count > 1 {
            level = Builder.buildInternalLevel(level)
        }
        tree.root = level[0]
        tree.entryCount = count
        tree.checkInvariants()
        return tree
    }
}

extension BTree.Node {
    /// Whether the node's last key sorts strictly before `key`: their first 8 bytes compared as integers, the
    /// rest (when those are equal) with `memcmp`. Requires a non-empty node. O(key length).
    @inline(__always)
    fileprivate func lastKeyPrecedes(_ key: UnsafeRawBufferPointer) -> Bool {
        withKey(at: keyCount - 1) { last in
            if last.count >= 8 && key.count >= 8 {
                let a = BTreeLayout.head(of: last), b = BTreeLayout.head(of: key)
                if a != b { return a < b }
            }
            return BTreeLayout.compare(last, key) < 0
        }
    }
}
