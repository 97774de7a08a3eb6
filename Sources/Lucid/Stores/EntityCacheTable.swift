import Synchronization

/// ``EntityCache``'s table: keys, the sequences their entities come from, costs, and the boxed entities.
///
/// - Eviction is CLOCK: a lookup that hits sets the entry's reference bit; the hand clears the bits it passes
///   and frees the first entry whose bit is clear. Entries never move: a new entry takes a slot just freed
///   (behind the hand) or a new one, so it stays a whole turn of the hand.
/// - Admission: while the entries fill less than the bound, every miss is admitted. Once full, a miss is
///   admitted only if its key missed before: a 65,536-bit filter of the keys that missed (a bit per key hash),
///   cleared every 16,384 keys noted. Reads spread over many more records than fit then neither pay the
///   insertion and eviction on each miss nor push out entries read again and again.
final class EntityCacheTable: Sendable {
    /// What an entry costs besides its record and key bytes: the slot, the index entry, the key's header.
    static var entryOverhead: Int { 96 }
    /// Bits in the filter of keys that missed (a power of two), and how many are noted before it is cleared.
    static var filterBits: Int { 1 << 16 }
    static var filterResetCount: Int { 1 << 14 }

    private struct Slot {
        var key: EntityCacheKey
        var sequence: UInt64
        var cost: Int
        /// Nil for a free slot.
        var box: AnyObject?
        var referenced: Bool
    }

    private struct Storage: @unchecked Sendable {   // the boxes are immutable and Sendable
        var index: [EntityCacheKey: Int] = [:]
        var slots: [Slot] = []
        /// Slots whose entries were evicted, for the next entries.
        var free: [Int] = []
        var hand = 0
        var bytes = 0
        /// The filter of keys that missed once the table was full, and how many were noted since it was cleared.
        var missed = [UInt64](repeating: 0, count: EntityCacheTable.filterBits / 64)
        var missedCount = 0
        var hits = 0
        var misses = 0
    }

    let capacityBytes: Int
    private let storage = Mutex(Storage())

    init(capacityBytes: Int) {
        self.capacityBytes = max(0, capacityBytes)
    }

    /// The box for `key` if it was decoded from commit `sequence`, else nil with `admit` telling whether to
    /// insert it once decoded.
    func box(forKey key: EntityCacheKey, sequence: UInt64, admit: inout Bool) -> AnyObject? {
        guard capacityBytes > 0 else {
            admit = false
            return nil
        }
        return storage.withLock { s in
            if let i = s.index[key], s.slots[i].sequence == sequence {
                s.hits += 1
                s.slots[i].referenced = true
                return s.slots[i].box
            }
            s.misses += 1
            admit = Self.admits(key, &s, capacity: capacityBytes)
            return nil
        }
    }

    /// Whether a miss of `key` is admitted (see the type's documentation); notes it in the filter if not.
    private static func admits(_ key: EntityCacheKey, _ s: inout Storage, capacity: Int) -> Bool {
        // Room for one more entry of the average cost: admitted.
        if s.index.isEmpty || s.bytes + s.bytes / s.index.count <= capacity { return true }
        let bit = Int(truncatingIfNeeded: key.hash >> 32) & (filterBits - 1)
        let mask: UInt64 = 1 << UInt64(bit & 63)
        if s.missed[bit >> 6] & mask != 0 { return true }
        s.missed[bit >> 6] |= mask
        s.missedCount += 1
        if s.missedCount >= filterResetCount {
            for w in s.missed.indices { s.missed[w] = 0 }
            s.missedCount = 0
        }
        return false
    }

    /// Keeps `box` for `key` (decoded from commit `sequence`, counting `cost` bytes), unless the entry for `key`
    /// comes from a later commit; evicts until it fits.
    func insert(_ box: AnyObject, forKey key: EntityCacheKey, sequence: UInt64, cost: Int) {
        // What leaves the cache is released after the lock (an entity's deinitialization can be long): usually one
        // entry, more when a larger one comes in.
        var released: AnyObject?
        var releasedMore: [AnyObject] = []
        storage.withLock { s in
            let existing = s.index[key]
            if let i = existing {
                guard s.slots[i].sequence < sequence else { return }
                s.bytes -= s.slots[i].cost
                released = s.slots[i].box
            }
            while s.bytes + cost > capacityBytes {
                guard let evicted = Self.evictOne(&s, sparing: existing) else { continue }
                if released == nil { released = evicted } else { releasedMore.append(evicted) }
            }
            let slot = Slot(key: key, sequence: sequence, cost: cost, box: box, referenced: false)
            s.bytes += cost
            if let i = existing {
                s.slots[i] = slot
            } else if let i = s.free.popLast() {
                s.slots[i] = slot
                s.index[key] = i
            } else {
                s.index[key] = s.slots.count
                s.slots.append(slot)
            }
        }
        _ = (released, releasedMore)
    }

    /// Moves the hand one slot: frees the entry there if its reference bit is clear (and returns its box), else
    /// clears the bit. Never frees the slot `sparing`. The caller stops once the entries fit; one more entry
    /// than `sparing` is held whenever they do not (every cost is at most the bound), so the hand finds one
    /// within two turns.
    private static func evictOne(_ s: inout Storage, sparing: Int?) -> AnyObject? {
        if s.hand >= s.slots.count { s.hand = 0 }
        let i = s.hand
        s.hand += 1
        guard i != sparing, let box = s.slots[i].box else { return nil }
        if s.slots[i].referenced {
            s.slots[i].referenced = false
            return nil
        }
        s.bytes -= s.slots[i].cost
        s.index[s.slots[i].key] = nil
        s.slots[i] = Slot(key: EntityCacheKey([]), sequence: 0, cost: 0, box: nil, referenced: false)
        s.free.append(i)
        return box
    }

    /// Drops every entry (released after the lock).
    func removeAll() {
        let old = storage.withLock { s in
            let old = s
            s = Storage()
            return old
        }
        _ = old
    }

    /// Entries, bytes counted, hits and misses since the table was made.
    var statistics: (entries: Int, bytes: Int, hits: Int, misses: Int) {
        storage.withLock { ($0.index.count, $0.bytes, $0.hits, $0.misses) }
    }
}
