extension BTree {
    /// Builds a tree from entries given in strictly increasing key order, in O(n): leaves are filled to about
    /// 7/8 of their capacity left to right, then each internal level is built over the one below. Used to load
    /// checkpoints. The result satisfies every invariant of an incrementally built tree.
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
        private static var internalTarget: Int { BTreeLayout.maxInternalChildren * 7 / 8 }

        init() {}

        /// Appends an entry. Returns false (and ignores it) when `key` is not greater than the previous key.
        /// - Complexity: O(key length), amortized; allocates only when a leaf fills.
        mutating func append(_ key: UnsafeRawBufferPointer, _ value: Value) -> Bool {
            // The previous key is the current leaf's last one (a leaf is sealed only when the next key arrives,
            // so the current leaf is empty only before the first entry).
            if current.keyCount > 0 && !current.lastKeyPrecedes(key) { return false }
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
            return true
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
            var tree = BTree()
            guard count > 0 else { return tree }
            sealLeaf()
            var level = leaves
            Self.rebalanceLastLeaf(&level)
            while level.count > 1 {
                level = Self.buildInternalLevel(level)
            }
            tree.root = level[0]
            tree.entryCount = count
            tree.checkInvariants()
            return tree
        }

        /// An underfull last leaf is merged with its left neighbour, and the pair split evenly when too big.
        private static func rebalanceLastLeaf(_ level: inout [Node]) {
            guard level.count >= 2, level[level.count - 1].load < BTreeLayout.minLeafLoad else { return }
            let last = level.removeLast()
            let node = level[level.count - 1]
            node.appendKeys(of: last, in: 0..<last.keyCount)
            node.values.append(contentsOf: last.values)
            node.load += last.load
            if node.load > BTreeLayout.leafCapacity || node.keyCount > BTreeLayout.maxLeafEntries {
                level.append(node.splitLeaf().node)
            }
        }

        /// Calls `body` with the last key under `node` (its rightmost leaf's). O(height).
        private static func withLastKey<R>(_ node: Node, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            var n = node
            while !n.isLeaf { n = n.children[n.children.count - 1] }
            return n.withKey(at: n.keyCount - 1, body)
        }

        /// Calls `body` with the first key under `node` (its leftmost leaf's). O(height).
        private static func withFirstKey<R>(_ node: Node, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            var n = node
            while !n.isLeaf { n = n.children[0] }
            return n.withKey(at: 0, body)
        }

        private static func buildInternalLevel(_ children: [Node]) -> [Node] {
            var parents: [Node] = []
            parents.reserveCapacity(children.count / internalTarget + 1)
            var index = 0
            while index < children.count {
                var take = min(internalTarget, children.count - index)
                // Never leave a last parent with fewer than the minimum children: share them out.
                let rest = children.count - index - take
                if rest > 0 && rest < BTreeLayout.minInternalChildren { take = (children.count - index + 1) / 2 }
                let node = Node(isLeaf: false)
                node.children.reserveCapacity(take)
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
                    node.children.append(children[j])
                }
                node.rebuildHeads()
                parents.append(node)
                index += take
            }
            return parents
        }
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
