extension BTree {
    /// Builds a tree from entries given in strictly increasing key order, in O(n): leaves are filled to about
    /// 7/8 of their capacity left to right, then each internal level is built over the one below. Used to load
    /// checkpoints. The result satisfies every invariant of an incrementally built tree.
    struct Builder {
        private struct Built {
            var node: Node
            var firstKey: [UInt8]
            var lastKey: [UInt8]
        }

        private var leaves: [Built] = []
        private var current = Node(isLeaf: true)
        private var currentFirst: [UInt8] = []
        private var lastKey: [UInt8]? = nil
        private var count = 0

        private static var leafTarget: Int { BTreeLayout.leafCapacity * 7 / 8 }
        private static var internalTarget: Int { BTreeLayout.maxInternalChildren * 7 / 8 }

        init() {}

        /// Appends an entry. Returns false (and ignores it) when `key` is not greater than the previous key.
        mutating func append(_ key: UnsafeRawBufferPointer, _ value: Value) -> Bool {
            if let last = lastKey, BTreeLayout.compare(last.withUnsafeBytes { $0 }, key) >= 0 { return false }
            let cost = BTreeLayout.entryCost(keyLength: key.count)
            if current.keyCount > 0
                && (current.keyCount >= BTreeLayout.maxLeafEntries * 7 / 8 || current.load + cost > Self.leafTarget) {
                sealLeaf()
            }
            if current.keyCount == 0 { currentFirst = Array(key) }
            current.keyBytes.append(contentsOf: key)
            current.keyEnds.append(UInt32(truncatingIfNeeded: current.keyBytes.count))
            current.values.append(value)
            current.load += cost
            lastKey = Array(key)
            count += 1
            return true
        }

        /// ``append(_:_:)`` for an array key.
        mutating func append(_ key: [UInt8], _ value: Value) -> Bool {
            key.withUnsafeBytes { append($0, value) }
        }

        private mutating func sealLeaf() {
            current.rebuildHeads()
            leaves.append(Built(node: current, firstKey: currentFirst, lastKey: lastKey ?? []))
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
            tree.root = level[0].node
            tree.entryCount = count
            tree.checkInvariants()
            return tree
        }

        /// An underfull last leaf is merged with its left neighbour, and the pair split evenly when too big.
        private static func rebalanceLastLeaf(_ level: inout [Built]) {
            guard level.count >= 2, level[level.count - 1].node.load < BTreeLayout.minLeafLoad else { return }
            let last = level.removeLast()
            var previous = level.removeLast()
            let node = previous.node
            node.appendKeys(of: last.node, in: 0..<last.node.keyCount)
            node.values.append(contentsOf: last.node.values)
            node.load += last.node.load
            if node.load > BTreeLayout.leafCapacity || node.keyCount > BTreeLayout.maxLeafEntries {
                let split = node.splitLeaf()
                previous.lastKey = node.key(at: node.keyCount - 1)
                level.append(previous)
                level.append(Built(node: split.node, firstKey: split.node.key(at: 0), lastKey: last.lastKey))
            } else {
                previous.lastKey = last.lastKey
                level.append(previous)
            }
        }

        private static func buildInternalLevel(_ children: [Built]) -> [Built] {
            var parents: [Built] = []
            var index = 0
            while index < children.count {
                var take = min(internalTarget, children.count - index)
                // Never leave a last parent with fewer than the minimum children: share them out.
                let rest = children.count - index - take
                if rest > 0 && rest < BTreeLayout.minInternalChildren { take = (children.count - index + 1) / 2 }
                let node = Node(isLeaf: false)
                for j in index..<(index + take) {
                    if j > index {
                        let separator = children[j - 1].lastKey.withUnsafeBytes { left in
                            children[j].firstKey.withUnsafeBytes { right in
                                BTreeLayout.separator(between: left, and: right)
                            }
                        }
                        node.keyBytes.append(contentsOf: separator)
                        node.keyEnds.append(UInt32(truncatingIfNeeded: node.keyBytes.count))
                    }
                    node.children.append(children[j].node)
                }
                node.rebuildHeads()
                parents.append(Built(node: node, firstKey: children[index].firstKey,
                                     lastKey: children[index + take - 1].lastKey))
                index += take
            }
            return parents
        }
    }
}
