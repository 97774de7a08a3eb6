import CLucidSupport

/// Filling a ``PointTable`` with many keys at once: a growth's copy, and the build after open (``PointIndex``).
extension PointTable {
    /// A copy of this table sized for `keys` keys (at ``grownLoad``), holding the same entries. O(capacity). The
    /// table is only read, so readers may go on using it meanwhile.
    func grown(toHold keys: Int) -> PointTable {
        let table = PointTable(reserving: max(keys, count))
        var loader = Loader(table)
        for i in 0..<capacity where !slots[i].isEmpty { loader.add(slots[i]) }
        loader.finish()
        return table
    }

    /// Fills a table with distinct keys it does not hold yet (a build or a growth), a few at a time: each key's
    /// home slot is asked for ``depth`` keys before the key is put there, so that the scattered slots' loads
    /// overlap instead of following one another.
    struct Loader {
        /// How many keys ahead a key's home slot is asked for.
        static let depth = 16
        private let table: PointTable
        private var pending: [(home: Int, slot: Slot)] = []
        private var next = 0

        init(_ table: PointTable) {
            self.table = table
            pending.reserveCapacity(Self.depth)
        }

        /// Adds `key` at `location`. - Precondition: the key is neither in the table nor added before.
        @inline(__always)
        mutating func add(_ key: Key, _ location: RecordLocation) { add(PointTable.slot(key, location)) }

        /// Adds the key and location `slot` holds. - Precondition: as ``add(_:_:)``.
        @inline(__always)
        mutating func add(_ slot: Slot) {
            let home = table.home(Key(slot: slot))
            lucid_prefetch(UnsafeRawPointer(table.slots + home))
            if pending.count < Self.depth {
                pending.append((home, slot))
                return
            }
            table.insertNew(pending[next].slot, from: pending[next].home)
            pending[next] = (home, slot)
            next = next + 1 == Self.depth ? 0 : next + 1
        }

        /// Puts the keys still pending. Call once, after the last ``add(_:_:)``.
        mutating func finish() {
            for j in 0 ..< pending.count {
                let p = pending[(next + j) % pending.count]
                table.insertNew(p.slot, from: p.home)
            }
            pending.removeAll()
        }
    }
}
