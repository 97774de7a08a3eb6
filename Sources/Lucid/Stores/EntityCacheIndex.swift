/// ``EntityCacheTable``'s slots by key hash: open addressing with linear probing, buckets holding a slot number
/// and the key's full 64-bit hash (compared before the key bytes), at most half full. Removal shifts the
/// buckets after a hole back (no tombstones). No `Hasher` run per lookup: the key's hash was computed once
/// (``EntityCacheKey``), seeded per process.
struct EntityCacheIndex {
    /// Slot numbers, -1 for an empty bucket.
    private var slots: [Int32]
    private var hashes: [UInt64]
    private var mask: Int
    /// Keys indexed.
    private(set) var count = 0

    init() {
        slots = [Int32](repeating: -1, count: 16)
        hashes = [UInt64](repeating: 0, count: 16)
        mask = 15
    }

    /// The slot whose key has `hash` and for which `matches` is true, or nil. - Complexity: O(1) expected.
    @inline(__always)
    func find(_ hash: UInt64, where matches: (Int) -> Bool) -> Int? {
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[i]
            if slot < 0 { return nil }
            if hashes[i] == hash && matches(Int(slot)) { return Int(slot) }
            i = (i + 1) & mask
        }
    }

    /// Indexes `slot` under `hash` (the key must not be indexed yet). - Complexity: O(1) amortized.
    mutating func insert(_ hash: UInt64, slot: Int) {
        if (count + 1) * 2 > slots.count { grow() }
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i] >= 0 { i = (i + 1) & mask }
        slots[i] = Int32(slot)
        hashes[i] = hash
        count += 1
    }

    /// Removes `slot`, indexed under `hash`. - Complexity: O(1) expected.
    mutating func remove(_ hash: UInt64, slot: Int) {
        var i = Int(truncatingIfNeeded: hash) & mask
        while slots[i] != Int32(slot) {
            precondition(slots[i] >= 0, "entity cache index: removing a slot that is not indexed")
            i = (i + 1) & mask
        }
        // Backward shift: each later bucket of the run moves into the hole if its home is not between the hole
        // and itself (cyclically).
        var j = i
        while true {
            j = (j + 1) & mask
            if slots[j] < 0 { break }
            let home = Int(truncatingIfNeeded: hashes[j]) & mask
            let homeInRange = i <= j ? (i < home && home <= j) : (i < home || home <= j)
            if !homeInRange {
                slots[i] = slots[j]
                hashes[i] = hashes[j]
                i = j
            }
        }
        slots[i] = -1
        count -= 1
    }

    private mutating func grow() {
        let oldSlots = slots, oldHashes = hashes
        slots = [Int32](repeating: -1, count: oldSlots.count * 2)
        hashes = [UInt64](repeating: 0, count: oldSlots.count * 2)
        mask = slots.count - 1
        count = 0
        for b in oldSlots.indices where oldSlots[b] >= 0 { insert(oldHashes[b], slot: Int(oldSlots[b])) }
    }
}
