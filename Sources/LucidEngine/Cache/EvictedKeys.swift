/// Keys of entries a cache evicted lately, for ``AdmissionWindow``'s regrets (a miss on one of them): a
/// direct-mapped table of 16-bit fingerprints, two slots per key of `capacity`, a later key taking the slot of an
/// earlier one. The page cache's shards keep their victims' page keys here, the data layer's entity cache its key
/// hashes.
///
/// Near-exact where ``PageGhosts``' bitmap is not: a regret narrows the window by twice what a benefit widens it,
/// and misses of keys never evicted (a stream of records read once, beside a working set) far outnumber the
/// benefits, which only admissions bring; a bitmap's false positives (a few percent of those misses) kept the
/// window at its narrowest under a working set. Here a key never remembered is taken for one at most once in
/// 32,768 lookups (15 bits of fingerprint). A key stays until a later one takes its slot (after about `2 × capacity`
/// evictions on average), or until it is taken; so it keeps about as many keys as it has slots.
///
/// - Complexity: O(1) per operation, a single slot of 2 bytes touched; fewer than `4 × capacity` slots (the
///   power of two at or above `2 × capacity`), so under `8 × capacity` bytes.
package struct EvictedKeys {
    /// 0 marks an empty slot; a fingerprint is never 0.
    private var fingerprints: [UInt16]
    /// 64 minus log2 of the slots.
    private let shift: UInt64

    /// A table for about `capacity` keys (at least one).
    package init(capacity: Int) {
        var bits = 1
        while 1 << bits < 2 * capacity { bits += 1 }
        fingerprints = [UInt16](repeating: 0, count: 1 << bits)
        shift = UInt64(64 - bits)
    }

    /// The slot (top bits) and the fingerprint (16 bits below the slot's, never 0) of `key`, after a multiplication
    /// by an odd constant.
    @inline(__always) private func place(_ key: UInt64) -> (slot: Int, fingerprint: UInt16) {
        let h = key &* 0xD6E8_FEB8_6659_FD93
        let fingerprint = UInt16(truncatingIfNeeded: h >> (shift &- 16)) | 1
        return (Int(truncatingIfNeeded: h >> shift), fingerprint)
    }

    /// Whether `key` is remembered (up to a fingerprint collision); forgets it when it is.
    @inline(__always) package mutating func take(_ key: UInt64) -> Bool {
        let (slot, fingerprint) = place(key)
        guard fingerprints[slot] == fingerprint else { return false }
        fingerprints[slot] = 0
        return true
    }

    /// Remembers `key`, forgetting the key whose slot it takes.
    @inline(__always) package mutating func remember(_ key: UInt64) {
        let (slot, fingerprint) = place(key)
        fingerprints[slot] = fingerprint
    }
}
