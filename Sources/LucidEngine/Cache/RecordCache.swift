import Synchronization

/// Decoded values of records read in place from pages whose records are compressed one by one
/// (``EngineOptions/PageCompression/lz4Records`` with mapped reads), so that a record read again and again is not
/// decoded each time.
///
/// ``PageCache`` keeps whole decoded pages. For a page of records compressed one by one, a read that misses decodes
/// only its record (about 0.3 µs for 200 bytes), while decoding the whole page to cache it costs about one such
/// decode per record on it: measured at 1M records, caching those pages on the page cache's admission rule halved
/// uniformly random gets. This cache keeps single values instead, so admitting one costs a reference to the value
/// the miss has just decoded.
///
/// Set-associative with one way: a key has one slot (by its hash), in one of 16 shards, each behind its own lock.
/// Admission is 2Q's rule applied per slot: a miss remembers the key's hash in its slot (the candidate) and caches
/// nothing; a second miss while the key is still its slot's candidate caches the value, unless the slot holds a
/// value read since it came in (its referenced bit, then cleared: a second chance). So uniformly random reads,
/// whose candidates are soon replaced by other keys', rarely admit anything, and records read twice within a
/// slot's next misses get in. Capacity counts value bytes (a full shard admits only over values it replaces);
/// values longer than ``maximumValueLength`` are never cached.
/// - Complexity: O(1) per lookup and insert; ``removeAll(segment:)`` is O(slots).
final class RecordCache: Sendable {
    /// A record's place: its page and its range in the page's raw payload. The log never changes a byte below a
    /// segment's published end, so a key names the same bytes for as long as its segment exists.
    struct Key: Equatable {
        var segment: UInt32
        var pageOffset: UInt32
        var valueOffset: UInt32
        var valueLength: UInt32

        /// Never 0 (0 marks a slot without a candidate).
        @inline(__always) var hash: UInt64 {
            let a = UInt64(segment) << 32 | UInt64(pageOffset)
            let b = UInt64(valueOffset) << 32 | UInt64(valueLength)
            let h = (a &* 0x9E37_79B9_7F4A_7C15) ^ (b &* 0xD6E8_FEB8_6659_FD93)
            return (h ^ h >> 31) | 1
        }
    }

    /// What ``lookup(_:)`` found.
    enum Lookup {
        case hit([UInt8])
        /// Not cached; when `admit`, the caller hands the value it decodes to ``insert(_:for:)``.
        case miss(admit: Bool)
    }

    struct Slot {
        var key = Key(segment: 0, pageOffset: 0, valueOffset: 0, valueLength: 0)
        var value: [UInt8]?
        /// The hash of the key that last missed here without being admitted, or 0.
        var candidate: UInt64 = 0
        /// Read since it came in, or since a competing key's second miss last passed it over.
        var referenced = false
    }

    struct Shard {
        var slots: [Slot]
        var bytes = 0
        var hits: UInt64 = 0
        var misses: UInt64 = 0
    }

    final class LockedShard: Sendable {
        let mutex: Mutex<Shard>
        init(slots: Int) { mutex = Mutex(Shard(slots: [Slot](repeating: Slot(), count: slots))) }
    }

    /// The longest value cached: longer ones cost more to keep than to decode again, relative to their share of
    /// the capacity.
    static let maximumValueLength = 8 << 10
    /// Slots per byte of capacity: one per 256 bytes, room for values of ~200 bytes and their slots' overhead.
    static let bytesPerSlot = 256
    private static let shardCount = 16

    private let shards: [LockedShard]
    private let shardCapacity: Int
    private let slotMask: Int

    /// A cache holding at most about `capacityBytes` of values (at least 16 slots per shard).
    init(capacityBytes: Int) {
        shardCapacity = max(0, capacityBytes) / Self.shardCount
        var slots = 16
        while slots < shardCapacity / Self.bytesPerSlot { slots <<= 1 }
        slotMask = slots - 1
        shards = (0..<Self.shardCount).map { _ in LockedShard(slots: slots) }
    }

    /// The shard and slot of a key's hash.
    @inline(__always) func place(_ hash: UInt64) -> (shard: Int, slot: Int) {
        (Int(truncatingIfNeeded: hash >> 60), Int(truncatingIfNeeded: hash >> 8) & slotMask)
    }

    /// The value cached for `key`, marked read; or a miss, saying whether the value should be cached
    /// (``insert(_:for:)``) once decoded. One lock acquisition; a hit returns the cached array (no copy).
    func lookup(_ key: Key) -> Lookup {
        let hash = key.hash
        let (s, i) = place(hash)
        return shards[s].mutex.withLock { shard in
            if let value = shard.slots[i].value, shard.slots[i].key == key {
                shard.slots[i].referenced = true
                shard.hits += 1
                return .hit(value)
            }
            shard.misses += 1
            guard shard.slots[i].candidate == hash, Int(key.valueLength) <= Self.maximumValueLength else {
                shard.slots[i].candidate = hash
                return .miss(admit: false)
            }
            if shard.slots[i].value != nil && shard.slots[i].referenced {
                shard.slots[i].referenced = false
                return .miss(admit: false)
            }
            return .miss(admit: true)
        }
    }

    /// Caches `value` for `key` in its slot, replacing what the slot held, when the shard's capacity allows.
    /// - Precondition: `value.count == key.valueLength`.
    func insert(_ value: [UInt8], for key: Key) {
        let hash = key.hash
        let (s, i) = place(hash)
        shards[s].mutex.withLock { shard in
            let replaced = shard.slots[i].value?.count ?? 0
            guard value.count <= Self.maximumValueLength,
                  shard.bytes - replaced + value.count <= shardCapacity else { return }
            shard.slots[i] = Slot(key: key, value: value, candidate: 0, referenced: false)
            shard.bytes += value.count - replaced
        }
    }

    /// Drops every value of a segment, when its file goes away, to free their space. Soundness does not rest on
    /// it: segment ids are never reused, so a value a racing read inserts just after (from a snapshot that still
    /// reads the segment) is never asked for; it only takes space until its slot is reused.
    func removeAll(segment: UInt64) {
        for shard in shards {
            shard.mutex.withLock { shard in
                for i in shard.slots.indices where shard.slots[i].value != nil
                    && UInt64(shard.slots[i].key.segment) == segment {
                    shard.bytes -= shard.slots[i].value!.count
                    shard.slots[i] = Slot()
                }
            }
        }
    }

    /// Lookups that found their value, and those that did not (for statistics and tests).
    var hits: UInt64 { shards.reduce(0) { sum, s in sum + s.mutex.withLock { $0.hits } } }
    var misses: UInt64 { shards.reduce(0) { sum, s in sum + s.mutex.withLock { $0.misses } } }

    /// Value bytes held.
    var bytes: Int { shards.reduce(0) { sum, s in sum + s.mutex.withLock { $0.bytes } } }

    /// Checks that each value sits in its key's slot and has its key's length, and that each shard's byte count
    /// is the sum of its values' lengths, within its capacity. Returns the violations found (empty when sound).
    /// O(slots); for tests and debug checks.
    func checkInvariants() -> [String] {
        var problems: [String] = []
        for (s, shard) in shards.enumerated() {
            shard.mutex.withLock { shard in
                var bytes = 0
                for (i, slot) in shard.slots.enumerated() {
                    guard let value = slot.value else { continue }
                    bytes += value.count
                    let home = place(slot.key.hash)
                    if home.shard != s || home.slot != i { problems.append("shard \(s) slot \(i): key belongs elsewhere") }
                    if value.count != Int(slot.key.valueLength) {
                        problems.append("shard \(s) slot \(i): \(value.count) bytes for a \(slot.key.valueLength)-byte key")
                    }
                }
                if bytes != shard.bytes { problems.append("shard \(s): counts \(shard.bytes) bytes, holds \(bytes)") }
                if bytes > shardCapacity { problems.append("shard \(s): \(bytes) bytes over its \(shardCapacity)") }
            }
        }
        return problems
    }
}
