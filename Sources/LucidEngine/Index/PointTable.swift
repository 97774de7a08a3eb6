import CLucidSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A hash table from a keyspace's short primary keys (at most ``maxKeyLength`` bytes) to their records'
/// locations: the primary tree's point lookups of the current state, answered with one probe of memory instead of
/// a descent through the tree (``PointIndex``).
///
/// At a million keys the primary tree's nodes are far larger than the processor's caches, and its point lookup
/// waits for memory at every level: about 700 ns on this project's machines (`btree-lookup-timing`), against one
/// or two cache lines here. The key is held in the slot, so a probe that finds the slot needs nothing else to be
/// sure of it: no page, no tree.
///
/// **Layout.** Open addressing with linear probing over `capacity` slots of 40 bytes: the key's bytes as two
/// words (zero past its end), its length, and the ``RecordLocation``. A key's home slot is its hash scaled to the
/// capacity (any capacity, not only powers of two); the table grows by half again before its load passes
/// ``maxLoad``, so probes stay short, and a removal shifts the slots after it back (no tombstones).
///
/// **Cost.** 40 bytes per slot, about 60 per key on average between growths; O(1) expected per operation;
/// a growth is O(capacity), done by ``grown(toHold:)`` before the writer takes the lock that readers wait on.
///
/// The table's memory, its growth and its checks are in `PointTable+Memory.swift`, `PointTable+PrefetchRing.swift`
/// and `PointTable+Invariants.swift`.
///
/// **Thread safety.** None of its own: ``PointIndex`` reads it under the engine state's read lock and changes it
/// under its write lock (this is one of the engine's few audited unsafe places: the slots are one raw
/// allocation that only this type touches).
final class PointTable: @unchecked Sendable {
    /// The longest key the table holds; longer keys are found in the primary tree.
    static let maxKeyLength = 16

    /// Whether the table holds keys of `length` bytes (at most ``maxKeyLength``).
    @inline(__always)
    static func holds(keyLength length: Int) -> Bool { length <= maxKeyLength }
    /// The most slots in use per slot allocated before the table grows.
    static let maxLoad = 0.8
    /// The load the table grows to.
    static let grownLoad = 0.55

    /// One slot: a key and its record's location, or empty (`lengths`' key-length bits 0).
    struct Slot {
        var key0: UInt64
        var key1: UInt64
        var segment: UInt32
        var pageOffset: UInt32
        var valueOffset: UInt32
        /// Bits 0 ..< 23: the value's length (at most 4 MiB); 23 ..< 28: the key's length + 1, 0 for an empty
        /// slot; bit 31: the record carries index terms.
        var lengths: UInt32
        var sequence: UInt64

        /// A slot holding no key: all zero bytes (fresh zeroed memory is a table of empty slots).
        static let empty = Slot(key0: 0, key1: 0, segment: 0, pageOffset: 0, valueOffset: 0, lengths: 0, sequence: 0)

        /// The key's length + 1 (``Key/tag``), 0 for an empty slot.
        @inline(__always) var keyTag: UInt32 { (lengths >> 23) & 0x1F }
        /// Whether the slot holds no key.
        @inline(__always) var isEmpty: Bool { keyTag == 0 }

        /// The record location the slot holds.
        @inline(__always)
        var location: RecordLocation {
            RecordLocation(segment: segment, pageOffset: pageOffset, valueOffset: valueOffset,
                           valueLength: lengths & 0x7F_FFFF, hasTerms: lengths & (1 << 31) != 0, sequence: sequence)
        }
    }

    /// A key as the table compares it: its bytes as two words, zero past its end, and its length + 1.
    struct Key: Equatable {
        /// The key's bytes 0 ..< 8 and 8 ..< 16, loaded in memory order, zero past its end.
        var word0: UInt64
        var word1: UInt64
        /// The key's length + 1 (never 0, which marks an empty slot).
        var tag: UInt32

        /// The key's words, or nil when it is longer than ``maxKeyLength``. O(1).
        @inline(__always)
        init?(_ key: UnsafeRawBufferPointer) {
            let n = key.count
            guard PointTable.holds(keyLength: n) else { return nil }
            tag = UInt32(truncatingIfNeeded: n &+ 1)
            guard n > 0, let base = key.baseAddress else {
                word0 = 0
                word1 = 0
                return
            }
            if n == 16 {
                word0 = base.loadUnaligned(as: UInt64.self)
                word1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            } else if n >= 8 {
                word0 = base.loadUnaligned(as: UInt64.self)
                word1 = Self.partialWord(base + 8, count: n &- 8)
            } else {
                word0 = Self.partialWord(base, count: n)
                word1 = 0
            }
        }

        /// The key a (non-empty) slot holds.
        init(slot: Slot) {
            word0 = slot.key0
            word1 = slot.key1
            tag = slot.keyTag
        }

        /// `count` (< 8) bytes at `base` in the low bytes of a word, the rest zero (in memory order, as a full
        /// word is loaded). O(count).
        @inline(__always)
        private static func partialWord(_ base: UnsafeRawPointer, count: Int) -> UInt64 {
            var word: UInt64 = 0
            withUnsafeMutableBytes(of: &word) { word in
                word.baseAddress.unsafelyUnwrapped.copyMemory(from: base, byteCount: count)
            }
            return word
        }
    }

    /// Keys held.
    private(set) var count = 0
    /// Slots allocated; fixed for the table's life (a growth makes a new table).
    let capacity: Int
    let slots: UnsafeMutablePointer<Slot>
    /// Whether `slots` is a mapping of its own (else a `calloc` block).
    let isMapped: Bool
    /// Mixed into every hash, chosen at random for a new table (and kept by its growths, ``grown(toHold:)``): keys
    /// cannot be picked to collide.
    let seed: UInt64

    /// An empty table with room for `keys` keys before it grows. O(capacity).
    convenience init(reserving keys: Int = 0) { self.init(reserving: keys, seed: UInt64.random(in: 1 ... .max)) }

    /// An empty table with room for `keys` keys before it grows, hashing with `seed`. O(capacity).
    init(reserving keys: Int, seed: UInt64) {
        self.seed = seed
        capacity = Self.capacity(toHold: keys)
        (slots, isMapped) = Self.allocateSlots(capacity)
    }

    /// A copy of `other`: the same seed, capacity and slots. O(capacity), one copy of memory.
    init(copying other: PointTable) {
        seed = other.seed
        capacity = other.capacity
        count = other.count
        (slots, isMapped) = Self.allocateSlots(capacity)
        slots.update(from: other.slots, count: capacity)
    }

    deinit {
        if isMapped {
            munmap(UnsafeMutableRawPointer(slots), Self.mappedLength(capacity))
        } else {
            free(slots)
        }
    }

    /// The capacity a table holding `keys` keys is built with.
    static func capacity(toHold keys: Int) -> Int { max(16, Int((Double(keys) / grownLoad).rounded(.up))) }

    /// Bytes of memory the slots take.
    var bytes: Int { capacity * MemoryLayout<Slot>.stride }

    // MARK: Hashing

    @inline(__always)
    private func hash(_ key: Key) -> UInt64 {
        var h = (key.word0 ^ seed) &* 0x9E37_79B9_7F4A_7C15
        h = (h ^ (h >> 32) ^ key.word1 ^ (UInt64(key.tag) << 59)) &* 0xBF58_476D_1CE4_E5B9
        h = (h ^ (h >> 29)) &* 0x94D0_49BB_1331_11EB
        return h ^ (h >> 32)
    }

    /// The slot where `key`'s probe starts: its hash scaled to the capacity. O(1).
    @inline(__always)
    func home(_ key: Key) -> Int {
        Int(truncatingIfNeeded: hash(key).multipliedFullWidth(by: UInt64(capacity)).high)
    }

    /// The slot after `i`, wrapping past the last to the first.
    @inline(__always)
    private func next(_ i: Int) -> Int { i &+ 1 == capacity ? 0 : i &+ 1 }

    /// The slot holding `key`, whose home is `home`, or nil. O(1) expected.
    @inline(__always)
    func find(_ key: Key, from home: Int) -> Int? {
        var i = home
        while true {
            let tag = slots[i].keyTag
            if tag == 0 { return nil }
            if tag == key.tag && slots[i].key0 == key.word0 && slots[i].key1 == key.word1 { return i }
            i = next(i)
        }
    }

    // MARK: Reading

    /// The location stored for `key`, or nil. O(1) expected: the probe reads one or two cache lines.
    @inline(__always)
    func location(forKey key: Key) -> RecordLocation? { location(forKey: key, from: home(key)) }

    /// ``location(forKey:)`` of a key whose ``home(_:)`` is `home`, computed (and its slot prefetched) earlier.
    @inline(__always)
    func location(forKey key: Key, from home: Int) -> RecordLocation? {
        guard let i = find(key, from: home) else { return nil }
        return slots[i].location
    }

    /// Hints the processor to start loading the slot `home` (a key's ``home(_:)``), whose probe starts there.
    /// Changes nothing. O(1).
    @inline(__always)
    func prefetch(home: Int) {
        let slot = UnsafeRawPointer(slots + home)
        lucid_prefetch(slot)
        lucid_prefetch(slot + MemoryLayout<Slot>.stride - 1)
    }

    // MARK: Changing

    /// Whether adding `keys` more keys would take the load past ``maxLoad``.
    func needsGrowth(adding keys: Int) -> Bool { Double(count + keys) > Double(capacity) * Self.maxLoad }

    /// Stores `location` for `key`, replacing what it held. O(1) expected.
    /// - Precondition: the key is present or the table has a free slot besides the one it takes; callers keep
    ///   the load under ``maxLoad`` (``needsGrowth(adding:)``, ``grown(toHold:)``).
    @inline(__always)
    func update(_ location: RecordLocation, forKey key: Key) { update(location, forKey: key, home: home(key)) }

    /// ``update(_:forKey:)`` of a key whose ``home(_:)`` is `home`.
    @inline(__always)
    func update(_ location: RecordLocation, forKey key: Key, home: Int) {
        var i = home
        while true {
            let tag = slots[i].keyTag
            if tag == 0 { break }
            if tag == key.tag && slots[i].key0 == key.word0 && slots[i].key1 == key.word1 {
                slots[i] = Self.slot(key, location)
                return
            }
            i = next(i)
        }
        // Never full, so that every probe ends at an empty slot; the load is kept lower by the callers.
        precondition(count + 1 < capacity, "PointTable: an insert into a full table")
        slots[i] = Self.slot(key, location)
        count += 1
    }

    /// Puts a slot whose key the table does not hold, probing from `home`, its key's home. O(1) expected.
    @inline(__always)
    func insertNew(_ slot: Slot, from home: Int) {
        precondition(count + 1 < capacity, "PointTable: an insert into a full table")
        var i = home
        while !slots[i].isEmpty { i = next(i) }
        slots[i] = slot
        count += 1
    }

    /// Removes `key`; nothing when absent. Shifts the slots of the probe run after it back so that every key
    /// stays reachable from its home without tombstones (Knuth's algorithm R). O(1) expected.
    func remove(_ key: Key) { remove(key, home: home(key)) }

    /// ``remove(_:)`` of a key whose ``home(_:)`` is `home`.
    func remove(_ key: Key, home: Int) {
        guard var hole = find(key, from: home) else { return }
        var j = hole
        while true {
            j = next(j)
            if slots[j].isEmpty { break }
            let h = self.home(Key(slot: slots[j]))
            // The slot at j may move back to the hole unless its home lies cyclically in (hole, j].
            let stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j)
            if stays { continue }
            slots[hole] = slots[j]
            hole = j
        }
        slots[hole] = .empty
        count -= 1
    }

    @inline(__always)
    static func slot(_ key: Key, _ location: RecordLocation) -> Slot {
        Slot(key0: key.word0, key1: key.word1, segment: location.segment, pageOffset: location.pageOffset,
             valueOffset: location.valueOffset,
             lengths: location.valueLength | key.tag << 23 | (location.hasTerms ? 1 << 31 : 0),
             sequence: location.sequence)
    }


}
