import CLucidSupport

/// ``EntityCacheTable``'s slots by key hash: open addressing with linear probing, buckets holding a slot number
/// and the key's full 64-bit hash (compared before the key bytes) side by side (one cache line read per bucket
/// probed, not one in an array of slots and another in an array of hashes), at most half full. Removal shifts the
/// buckets after a hole back (no tombstones). No `Hasher` run per lookup: the key's hash was computed once
/// (``EntityCacheKey``), seeded per process.
struct EntityCacheIndex {
    private struct Bucket {
        var hash: UInt64
        /// The slot number, -1 for an empty bucket.
        var slot: Int32
    }

    private var buckets: [Bucket]
    private var mask: Int
    /// Keys indexed.
    private(set) var count = 0

    init() {
        buckets = [Bucket](repeating: Bucket(hash: 0, slot: -1), count: 16)
        mask = 15
    }

    /// The slot whose key has `hash` and for which `matches` is true, or nil. - Complexity: O(1) expected.
    @inline(__always)
    func find(_ hash: UInt64, where matches: (Int) -> Bool) -> Int? {
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let bucket = buckets[i]
            if bucket.slot < 0 { return nil }
            if bucket.hash == hash && matches(Int(bucket.slot)) { return Int(bucket.slot) }
            i = (i + 1) & mask
        }
    }

    /// Asks the processor to start loading the bucket where a search for `hash` starts (a hint, for a probe of
    /// many keys: each key's bucket is asked for before any is read). - Complexity: O(1).
    @inline(__always)
    func prefetch(_ hash: UInt64) {
        buckets.withUnsafeBufferPointer { lucid_prefetch($0.baseAddress! + (Int(truncatingIfNeeded: hash) & mask)) }
    }

    /// The slot of the first bucket holding `hash` in the search's order, or nil when none does before an empty
    /// one: the slot ``find(_:where:)`` returns unless another key has the same 64-bit hash. - Complexity: O(1)
    /// expected.
    @inline(__always)
    func firstSlot(_ hash: UInt64) -> Int? { find(hash) { _ in true } }

    /// Indexes `slot` under `hash` (the key must not be indexed yet). - Complexity: O(1) amortized.
    mutating func insert(_ hash: UInt64, slot: Int) {
        if (count + 1) * 2 > buckets.count { grow() }
        var i = Int(truncatingIfNeeded: hash) & mask
        while buckets[i].slot >= 0 { i = (i + 1) & mask }
        buckets[i] = Bucket(hash: hash, slot: Int32(slot))
        count += 1
    }

    /// Removes `slot`, indexed under `hash`. - Complexity: O(1) expected.
    mutating func remove(_ hash: UInt64, slot: Int) {
        var i = Int(truncatingIfNeeded: hash) & mask
        while buckets[i].slot != Int32(slot) {
            precondition(buckets[i].slot >= 0, "entity cache index: removing a slot that is not indexed")
            i = (i + 1) & mask
        }
        // Backward shift: each later bucket of the run moves into the hole if its home is not between the hole
        // and itself (cyclically).
        var j = i
        while true {
            j = (j + 1) & mask
            if buckets[j].slot < 0 { break }
            let home = Int(truncatingIfNeeded: buckets[j].hash) & mask
            let homeInRange = i <= j ? (i < home && home <= j) : (i < home || home <= j)
            if !homeInRange {
                buckets[i] = buckets[j]
                i = j
            }
        }
        buckets[i].slot = -1
        count -= 1
    }

    private mutating func grow() {
        let old = buckets
        buckets = [Bucket](repeating: Bucket(hash: 0, slot: -1), count: old.count * 2)
        mask = buckets.count - 1
        count = 0
        for bucket in old where bucket.slot >= 0 { insert(bucket.hash, slot: Int(bucket.slot)) }
    }
}
