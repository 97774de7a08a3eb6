/// Changing many scattered slots of ``PointTable``s at once: the build after open and a commit group's updates
/// (``PointIndex``) go through a ``PrefetchRing``; a growth's copy writes in order and needs none.
extension PointTable {
    /// A copy of this table sized for `keys` keys (at ``grownLoad``), holding the same entries. O(capacity). The
    /// table is only read, so readers may go on using it meanwhile.
    ///
    /// The copy keeps the seed. A key's home is its hash scaled to the capacity, so homes keep their order from one
    /// capacity to the next, and the slots read in order are written nearly in order: one streaming pass over both
    /// tables, not a scattered write per key (with a new seed, the growth of a table of a million keys waited for
    /// memory once per key). Linear probing fills the same slots whatever the order of insertion, so the copy's
    /// probes are as short as a fresh table's.
    func grown(toHold keys: Int) -> PointTable {
        let table = PointTable(reserving: max(keys, count), seed: seed)
        for i in 0..<capacity where !slots[i].isEmpty {
            table.insertNew(slots[i], from: table.home(Key(slot: slots[i])))
        }
        return table
    }

    /// Changes to scattered slots, queued a few at a time: each item's home slot is asked for ``depth`` items
    /// before the item is handled, so that the slots' loads overlap instead of following one another. Items are
    /// handled in the order they were added. Lives only during ``with(_:)`` (its queue is a temporary allocation).
    struct PrefetchRing<Item: BitwiseCopyable> {
        /// How many items ahead a slot is asked for.
        static var depth: Int { 16 }
        private let queue: UnsafeMutableBufferPointer<(item: Item, home: Int)>
        private var filled = 0
        private var oldest = 0

        private init(_ queue: UnsafeMutableBufferPointer<(item: Item, home: Int)>) { self.queue = queue }

        /// Calls `body` with an empty ring. Items still queued when `body` returns are dropped: call ``drain(_:)``.
        static func with<R>(_ body: (inout PrefetchRing) throws -> R) rethrows -> R {
            try withUnsafeTemporaryAllocation(of: (item: Item, home: Int).self, capacity: depth) { queue in
                var ring = PrefetchRing(queue)
                return try body(&ring)
            }
        }

        /// Asks for slot `home` of `table` and queues `item`; once ``depth`` items wait, first hands the oldest to
        /// `handle` with its home. O(1) plus `handle`.
        @inline(__always)
        mutating func add(_ item: Item, home: Int, in table: PointTable, _ handle: (Item, Int) -> Void) {
            table.prefetch(home: home)
            if filled < Self.depth {
                queue[filled] = (item, home)
                filled += 1
                return
            }
            handle(queue[oldest].item, queue[oldest].home)
            queue[oldest] = (item, home)
            oldest = oldest + 1 == Self.depth ? 0 : oldest + 1
        }

        /// Hands every item still queued to `handle`, oldest first, and empties the ring.
        mutating func drain(_ handle: (Item, Int) -> Void) {
            for j in 0 ..< filled {
                let (item, home) = queue[(oldest + j) % filled]
                handle(item, home)
            }
            filled = 0
            oldest = 0
        }
    }
}
