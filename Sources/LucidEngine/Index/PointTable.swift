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
/// a growth is O(count), done by ``grow(toHold:)`` before the writer takes the lock that readers wait on.
///
/// **Thread safety.** None of its own: ``PointIndex`` reads it under the engine state's read lock and changes it
/// under its write lock (this is one of the engine's few audited unsafe places: the slots are one raw
/// allocation that only this type touches).
final class PointTable: @unchecked Sendable {
    /// The longest key the table holds; longer keys are found in the primary tree.
    static let maxKeyLength = 16
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

        static let empty = Slot(key0: 0, key1: 0, segment: 0, pageOffset: 0, valueOffset: 0, lengths: 0, sequence: 0)

        @inline(__always) var keyTag: UInt32 { (lengths >> 23) & 0x1F }
        @inline(__always) var isEmpty: Bool { keyTag == 0 }

        @inline(__always)
        var location: RecordLocation {
            RecordLocation(segment: segment, pageOffset: pageOffset, valueOffset: valueOffset,
                           valueLength: lengths & 0x7F_FFFF, hasTerms: lengths & (1 << 31) != 0, sequence: sequence)
        }
    }

    /// A key as the table compares it: its bytes as two words, zero past its end, and its length + 1.
    struct Key: Equatable {
        var word0: UInt64
        var word1: UInt64
        var tag: UInt32

        /// The key's words, or nil when it is longer than ``maxKeyLength``. O(1).
        @inline(__always)
        init?(_ key: UnsafeRawBufferPointer) {
            let n = key.count
            guard n <= PointTable.maxKeyLength else { return nil }
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
            withUnsafeMutableBytes(of: &word) { $0.baseAddress.unsafelyUnwrapped.copyMemory(from: base, byteCount: count) }
            return word
        }
    }

    private(set) var count = 0
    let capacity: Int
    fileprivate let slots: UnsafeMutablePointer<Slot>
    /// Whether `slots` is a mapping of its own (else a `calloc` block).
    private let isMapped: Bool
    /// Mixed into every hash, chosen at random per table: keys cannot be picked to collide.
    private let seed: UInt64

    /// An empty table with room for `keys` keys before it grows. O(capacity).
    init(reserving keys: Int = 0) {
        seed = UInt64.random(in: 1 ... .max)
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
            munmap(UnsafeMutableRawPointer(slots), capacity * MemoryLayout<Slot>.stride)
        } else {
            free(slots)
        }
    }

    /// Tables of at least this many bytes are mapped on their own, in huge pages where the system gives them.
    static let mappedBytes = 4 << 20
    private static let hugePageBytes = 2 << 20

    /// `capacity` empty slots. An empty slot is all zero bytes, so the memory is fresh pages the kernel zeroes as
    /// they are first touched, not a pass of stores over all of them: `calloc` for a small table; for a large one
    /// an anonymous mapping aligned to 2 MiB and advised to use transparent huge pages (`MADV_HUGEPAGE`), so that
    /// its scattered probes do not each miss the TLB as well (a table of a million keys spans 18,000 4-KiB pages).
    private static func allocateSlots(_ capacity: Int) -> (slots: UnsafeMutablePointer<Slot>, mapped: Bool) {
        let bytes = capacity * MemoryLayout<Slot>.stride
        if bytes >= mappedBytes {
            let length = bytes + hugePageBytes
            if let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
               mapped != MAP_FAILED {
                // Keep the 2 MiB-aligned part; unmap the slack before and after it.
                let start = (UInt(bitPattern: mapped) + UInt(hugePageBytes - 1)) & ~UInt(hugePageBytes - 1)
                let head = Int(start - UInt(bitPattern: mapped))
                if head > 0 { munmap(mapped, head) }
                let tail = length - head - bytes
                let aligned = UnsafeMutableRawPointer(bitPattern: start).unsafelyUnwrapped
                if tail > 0 { munmap(aligned + bytes, tail) }
                #if os(Linux)
                _ = madvise(aligned, bytes, MADV_HUGEPAGE)
                #endif
                return (aligned.bindMemory(to: Slot.self, capacity: capacity), true)
            }
        }
        guard let raw = calloc(capacity, MemoryLayout<Slot>.stride) else {
            fatalError("PointTable: cannot allocate \(capacity) slots")
        }
        return (raw.bindMemory(to: Slot.self, capacity: capacity), false)
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

    @inline(__always)
    private func next(_ i: Int) -> Int { i &+ 1 == capacity ? 0 : i &+ 1 }

    /// The slot holding `key`, whose home is `home`, or nil. O(1) expected.
    @inline(__always)
    private func find(_ key: Key, from home: Int) -> Int? {
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
    func location(forKey key: Key) -> RecordLocation? {
        guard let i = find(key, from: home(key)) else { return nil }
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

    /// Calls `body` with every key and location, in slot order. O(capacity).
    func forEach(_ body: (Key, RecordLocation) -> Void) {
        for i in 0..<capacity where !slots[i].isEmpty { body(Key(slot: slots[i]), slots[i].location) }
    }

    // MARK: Changing

    /// Whether adding `keys` more keys would take the load past ``maxLoad``.
    func needsGrowth(adding keys: Int) -> Bool { Double(count + keys) > Double(capacity) * Self.maxLoad }

    /// A copy of this table sized for `keys` keys (at ``grownLoad``), holding the same entries. O(count). The
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
    private func insertNew(_ slot: Slot, from home: Int) {
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
    fileprivate static func slot(_ key: Key, _ location: RecordLocation) -> Slot {
        Slot(key0: key.word0, key1: key.word1, segment: location.segment, pageOffset: location.pageOffset,
             valueOffset: location.valueOffset,
             lengths: location.valueLength | key.tag << 23 | (location.hasTerms ? 1 << 31 : 0),
             sequence: location.sequence)
    }

    // MARK: Checks

    /// The ways the table is unsound (empty when sound): `count` must be the slots in use, each key must be found
    /// from its home without crossing an empty slot, and no key may be held twice. O(capacity); for tests and debug
    /// checks.
    func checkInvariants() -> [String] {
        var problems: [String] = []
        var used = 0
        for i in 0..<capacity where !slots[i].isEmpty {
            used += 1
            let key = Key(slot: slots[i])
            guard let found = find(key, from: home(key)) else {
                problems.append("slot \(i): its key is not found from its home")
                continue
            }
            if found != i { problems.append("slot \(i): its key is also in slot \(found)") }
            if problems.count >= 20 { break }
        }
        if used != count { problems.append("count \(count), slots in use \(used)") }
        if Double(used) > Double(capacity) * Self.maxLoad + 1 { problems.append("\(used) keys in \(capacity) slots") }
        return problems
    }
}
