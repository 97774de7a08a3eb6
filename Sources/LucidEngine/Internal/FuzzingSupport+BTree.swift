@_spi(Fuzzing) extension FuzzingSupport {
    /// The engine's primary index, `BTree<RecordLocation>` (the tree each keyspace's records are found through),
    /// behind the few calls the micro-benchmarks of its insert, removal and lookup need (`Benchmarks/Micro`,
    /// workloads `btree-insert-remove-random` and `btree-lookup-random`), so that those measure the tree alone rather
    /// than through a commit or a get. Each key's location carries only a sequence number. Not API.
    ///
    /// A value type with the tree's semantics: copying it is O(1) and the copy is a snapshot.
    public struct PrimaryTree: Sendable {
        private var tree = BTree<RecordLocation>()

        /// An empty tree. O(1).
        public init() {}

        /// The number of keys. O(1).
        public var count: Int { tree.count }

        /// Stores `sequence` (in a location) for `key`; returns whether the key was new. O(log n); a node split or a
        /// copy of nodes a snapshot shares costs O(node size) each. Traps for a key longer than 16 MiB (the tree's
        /// limit; the engine refuses keys over 1 KiB before they reach it).
        @discardableResult
        public mutating func insert(_ key: [UInt8], sequence: UInt64) -> Bool {
            let location = RecordLocation(segment: 1, pageOffset: 0, valueOffset: 0, valueLength: 0, hasTerms: false,
                                          sequence: sequence)
            return tree.updateValue(location, forKey: key) == nil
        }

        /// Removes `key`; returns whether it was there. O(log n), as ``insert(_:sequence:)``, plus the merge or
        /// rebalancing of a node left underfull.
        @discardableResult
        public mutating func remove(_ key: [UInt8]) -> Bool {
            tree.removeValue(forKey: key) != nil
        }

        /// The sequence stored for `key`, if any: the point lookup every get starts with. O(log n), allocation-free.
        public func sequence(forKey key: [UInt8]) -> UInt64? {
            tree.value(forKey: key)?.sequence
        }

        /// Traps if the tree breaks one of its invariants, in builds with `LUCID_INTERNAL_CHECKS` (debug builds); does
        /// nothing otherwise. O(n).
        public func checkInvariants() {
            tree.checkInvariants()
        }
    }
}
