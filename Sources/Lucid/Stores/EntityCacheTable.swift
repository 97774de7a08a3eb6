import Synchronization
import LucidEngine

/// ``EntityCache``'s table: keys, the sequences their entities come from, costs, and the boxed entities.
///
/// - Validity: an entry keeps the range of snapshot sequences at which a lookup found the key holding its
///   record. A read from a snapshot in that range takes the entry without a lookup; any other looks the key up
///   and, when it finds the same record, widens the range (reads between writes all end up in it).
/// - Eviction is CLOCK: a lookup that hits sets the entry's reference bit; the hand clears the bits it passes
///   and frees the first entry whose bit is clear. Entries never move: a new entry takes a slot just freed
///   (behind the hand) or a new one, so it stays a whole turn of the hand.
/// - Admission: while the entries fill less than the bound, every miss is admitted. Once full, a miss is
///   admitted only if its key missed before: a 65,536-bit filter of the keys that missed (a bit per key hash),
///   cleared every 16,384 keys noted at most. Reads spread over many more records than fit then neither pay the
///   insertion and eviction on each miss nor push out entries read again and again. How many keys the filter
///   notes before it is cleared adapts (``LucidEngine/AdmissionWindow``, as the engine's page cache does): it
///   shrinks, down to 512, while entries evicted to admit others are missed again about as often as the admitted
///   ones are hit (uniformly random reads: each admission costs an insertion and an eviction, and gains nothing),
///   and grows back while admitted entries are hit clearly more often. A caller may admit a small batch's misses at
///   once (``admitsAtOnce(_:)``; see ``DiskStore/firstMissRecordLimit``).
final class EntityCacheTable: Sendable {
    /// What an entry costs besides its record and key bytes: the slot, the index entry, the key's header.
    static var entryOverhead: Int { 96 }
    /// Bits in the filter of keys that missed (a power of two), and how many are noted before it is cleared.
    static var filterBits: Int { 1 << 16 }
    static var filterResetCount: Int { 1 << 14 }
    /// The ``LucidEngine/AdmissionWindow``'s widest window, and admissions an entry counts as young; the filter
    /// notes `filterResetCount / victimCount` keys per key of the window. The ``LucidEngine/EvictedKeys`` table of
    /// evicted entries' key hashes is sized for as many (8,192 slots: it keeps about that many).
    static var victimCount: Int { 1 << 12 }

    /// The fields a probe reads come first (the key's head, the reference bit, the sequences and the box: 64
    /// bytes), the key and cost after them.
    struct Slot {
        /// The key's length and first bytes: a probe of a key of up to 16 bytes compares these alone.
        var head: EntityCacheKeyHead
        var referenced: Bool
        var sequence: UInt64
        /// The snapshot sequences (``LucidEngine/Snapshot/sequence``) at which the key was found to hold this
        /// record, lowest and highest. A snapshot between them holds it too: the record can only change by a
        /// commit, which would have given the key a greater sequence than this one for good.
        var seenFrom: UInt64
        var seenTo: UInt64
        /// Nil for a free slot.
        var box: (any AnyObject & Sendable)?
        var key: EntityCacheKey
        var cost: Int
        /// The ``LucidEngine/AdmissionWindow`` stamp of an entry admitted by evicting others and not hit since;
        /// 0 otherwise.
        var stamp: UInt32 = 0

        init(key: EntityCacheKey, sequence: UInt64, seenFrom: UInt64, seenTo: UInt64, cost: Int,
             box: (any AnyObject & Sendable)?, referenced: Bool) {
            head = key.bytes.withUnsafeBytes(EntityCacheKeyHead.init)
            self.referenced = referenced
            self.sequence = sequence
            self.seenFrom = seenFrom
            self.seenTo = seenTo
            self.box = box
            self.key = key
            self.cost = cost
        }
    }

    struct Storage: Sendable {
        var index = EntityCacheIndex()
        var slots: [Slot] = []
        /// Slots whose entries were evicted, for the next entries.
        var free: [Int] = []
        var hand = 0
        var bytes = 0
        /// The filter of keys that missed once the table was full, and how many were noted since it was cleared.
        var missed = [UInt64](repeating: 0, count: EntityCacheTable.filterBits / 64)
        var missedCount = 0
        /// How many keys the filter notes before it is cleared, in units of `filterResetCount / victimCount`.
        var window = AdmissionWindow(maximum: EntityCacheTable.victimCount)
        /// Hashes of the keys of entries evicted lately: a miss on one is a regret of the admission that evicted it.
        var victims = EvictedKeys(capacity: EntityCacheTable.victimCount)
        var hits = 0
        var misses = 0
        /// `hits + misses` and `hits` when ``mostlyMisses`` was last set.
        var sampledFrom = (reads: 0, hits: 0)
        /// The words of an entity that held a reference in one of the first ``layoutSamples`` entities inserted
        /// (``EntityPrefetch/referenceWords(of:_:)``), and how many were looked at.
        var referenceWords: UInt32 = 0
        var layoutSamples = 0

        /// Marks the entry at `i` recently used; its first hit since it was admitted is a benefit.
        @inline(__always) mutating func noteHit(_ i: Int) {
            slots[i].referenced = true
            window.hit(stamp: &slots[i].stamp)
        }
    }

    let capacityBytes: Int
    /// Whether fewer than half of the last ``samplePeriod`` reads or so (hits and misses, ``statistics``) were hits,
    /// as of the last one-key probe (``probe(_:hash:at:)``) that ended such a period; true until then, and always
    /// without a bound. Read without the lock (relaxed), set under it when it changes: a get that will most
    /// likely miss starts its engine lookup first (``DiskStore/getNow(_:)``).
    var mostlyMisses: Bool { mostlyMissesFlag.load(ordering: .relaxed) }
    private let mostlyMissesFlag = Atomic<Bool>(true)
    /// Reads per update of ``mostlyMisses``.
    static var samplePeriod: Int { 128 }
    /// The table, under its lock. `Slot`, `Storage` and `storage` are internal, not private, for the batched probe
    /// (`EntityCacheTable+Batch.swift`) alone: nothing else in the module touches them.
    let storage = Mutex(Storage())

    /// Where the entity lies in a box: the batched probe asks for the boxes it finds, and for what their entities
    /// refer to, before it takes any (``EntityPrefetch``).
    let layout: EntityLayout
    /// How many entities inserted teach ``Storage/referenceWords`` which of an entity's words hold references.
    static var layoutSamples: Int { 64 }

    /// A table of at most `capacityBytes` (0: none) of boxes laid out as `layout` says. The default, for tests of a
    /// table alone whose boxes are any objects, is an empty entity: the boxes' headers are asked for, nothing is
    /// read from them.
    init(capacityBytes: Int, layout: EntityLayout = EntityLayout(size: 0, alignment: 1)) {
        self.capacityBytes = max(0, capacityBytes)
        self.layout = layout
    }

    /// What ``probe(_:at:)`` found for a key.
    struct Probe {
        /// The entry's box, if the table has an entry for the key.
        var box: (any AnyObject & Sendable)?
        /// The commit sequence of the entry's record (when `box` is set).
        var sequence: UInt64 = 0
        /// Whether the entry is the record the snapshot holds (its sequence is between the entry's `seenFrom`
        /// and `seenTo`): no lookup is needed.
        var current = false
        /// Whether an entity decoded after a miss should be inserted.
        var admit = false
    }

    /// The entry for `key` as seen from a snapshot at sequence `snapshot`.
    func probe(_ key: EntityCacheKey, at snapshot: UInt64) -> Probe {
        key.bytes.withUnsafeBytes { probe($0, hash: key.hash, at: snapshot) }
    }

    /// ``probe(_:at:)`` of the key `raw`, whose ``EntityCacheKey/hash(_:)`` is `hash`: no key array needed.
    func probe(_ raw: UnsafeRawBufferPointer, hash: UInt64, at snapshot: UInt64) -> Probe {
        guard capacityBytes > 0 else { return Probe() }
        let head = EntityCacheKeyHead(raw)
        return storage.withLock { s in
            let probe = Self.probe(raw, head: head, hash: hash, at: snapshot, in: &s, capacity: capacityBytes)
            if s.hits &+ s.misses &- s.sampledFrom.reads >= Self.samplePeriod { sample(&s) }
            return probe
        }
    }

    /// Sets ``mostlyMisses`` from the reads since it was last set, the lock held. O(1).
    private func sample(_ s: inout Storage) {
        let reads = s.hits &+ s.misses
        let misses = (s.hits &- s.sampledFrom.hits) * 2 < reads &- s.sampledFrom.reads
        if mostlyMissesFlag.load(ordering: .relaxed) != misses { mostlyMissesFlag.store(misses, ordering: .relaxed) }
        s.sampledFrom = (reads, s.hits)
    }

    /// ``probe(_:hash:at:)`` with the lock held.
    @inline(__always)
    private static func probe(_ raw: UnsafeRawBufferPointer, head: EntityCacheKeyHead, hash: UInt64,
                              at snapshot: UInt64, in s: inout Storage, capacity: Int) -> Probe {
        probe(slot: find(raw, head: head, hash: hash, in: s), hash: hash, at: snapshot, in: &s, capacity: capacity)
    }

    /// The probe of the key whose hash is `hash` and whose entry is in slot `slot` (nil: no entry), the lock held.
    @inline(__always)
    static func probe(slot: Int?, hash: UInt64, at snapshot: UInt64, in s: inout Storage, capacity: Int) -> Probe {
        guard let i = slot else {
            s.misses += 1
            return Probe(admit: admits(hash, &s, capacity: capacity))
        }
        let current = s.slots[i].seenFrom <= snapshot && snapshot <= s.slots[i].seenTo
        if current {
            s.hits += 1
            s.noteHit(i)
        }
        // An entry of another record is replaced by the one decoded: admitted (it takes no more room).
        return Probe(box: s.slots[i].box, sequence: s.slots[i].sequence, current: current, admit: true)
    }

    /// Whether `count` entries of the average cost take at most an eighth of the bound: a batch that small may
    /// have its misses admitted at once, without the second-miss rule, and still cannot flush the cache.
    /// - Complexity: O(1), one hold of the lock.
    func admitsAtOnce(_ count: Int) -> Bool {
        guard capacityBytes > 0 else { return false }
        return storage.withLock { s in
            let average = s.index.count == 0 ? 0 : s.bytes / s.index.count
            let (total, overflow) = count.multipliedReportingOverflow(by: average)
            return !overflow && total <= capacityBytes / 8
        }
    }

    /// Records that a lookup in the snapshot at sequence `snapshot` found `key` holding the entry's record
    /// (`sequence`, as probed): a hit, and that snapshot is now within the entry's.
    func confirm(_ key: EntityCacheKey, sequence: UInt64, at snapshot: UInt64) {
        storage.withLock { s in
            guard let i = Self.find(key, in: s), s.slots[i].sequence == sequence else { return }
            s.hits += 1
            s.noteHit(i)
            s.slots[i].seenFrom = min(s.slots[i].seenFrom, snapshot)
            s.slots[i].seenTo = max(s.slots[i].seenTo, snapshot)
        }
    }

    /// The slot holding `key`, or nil.
    @inline(__always)
    private static func find(_ key: EntityCacheKey, in s: borrowing Storage) -> Int? {
        key.bytes.withUnsafeBytes { find($0, head: EntityCacheKeyHead($0), hash: key.hash, in: s) }
    }

    /// The slot holding the key `raw`, whose head is `head` and hash `hash`, or nil. A key of up to 16 bytes is
    /// compared by its head alone, in the slot; a longer one also byte by byte, in its array.
    @inline(__always)
    static func find(_ raw: UnsafeRawBufferPointer, head: EntityCacheKeyHead, hash: UInt64,
                     in s: borrowing Storage) -> Int? {
        s.index.find(hash) { slot in
            s.slots[slot].head == head && (head.isWhole || equal(s.slots[slot].key.bytes, raw))
        }
    }

    /// Whether `key` holds the bytes `raw`. O(key length).
    @inline(__always)
    static func equal(_ key: [UInt8], _ raw: UnsafeRawBufferPointer) -> Bool {
        key.withUnsafeBytes { k in
            k.count == raw.count && (k.isEmpty || bytesEqual(k.baseAddress!, raw.baseAddress!, count: k.count))
        }
    }

    /// Whether a miss of the key whose hash is `hash` is admitted (see the type's documentation); notes it in the
    /// filter if not.
    private static func admits(_ hash: UInt64, _ s: inout Storage, capacity: Int) -> Bool {
        // Room for one more entry of the average cost: admitted.
        if s.index.count == 0 || s.bytes + s.bytes / s.index.count <= capacity { return true }
        if s.victims.take(hash) { s.window.regret() }
        let bit = Int(truncatingIfNeeded: hash >> 32) & (filterBits - 1)
        let mask: UInt64 = 1 << UInt64(bit & 63)
        if s.missed[bit >> 6] & mask != 0 { return true }
        s.missed[bit >> 6] |= mask
        s.missedCount += 1
        if s.missedCount >= s.window.keys * filterResetCount / victimCount {
            for w in s.missed.indices { s.missed[w] = 0 }
            s.missedCount = 0
        }
        return false
    }

    /// Keeps `box` for `key` (decoded from commit `sequence`, found in the snapshot at sequence `snapshot`,
    /// counting `cost` bytes), unless the entry for `key` comes from a later commit; evicts until it fits. With
    /// `recheckAdmission`, a key without an entry is admitted again by the cache as it is now (for a probe made
    /// before other inserts: a batch probes all its keys first, and the room one probe saw is not there for all).
    func insert(_ box: any AnyObject & Sendable, forKey key: EntityCacheKey, sequence: UInt64, at snapshot: UInt64,
                cost: Int, recheckAdmission: Bool = false) {
        // The eviction below ends only if the new entry fits once every other entry is gone.
        guard cost <= capacityBytes else { return }
        // What leaves the cache is released after the lock (an entity's deinitialization can be long): usually one
        // entry, more when a larger one comes in.
        var released: (any AnyObject & Sendable)?
        var releasedMore: [any AnyObject & Sendable] = []
        storage.withLock { s in
            let existing = Self.find(key, in: s)
            if recheckAdmission && existing == nil && !Self.admits(key.hash, &s, capacity: capacityBytes) { return }
            if let i = existing {
                guard s.slots[i].sequence < sequence else {
                    if s.slots[i].sequence == sequence {   // decoded twice (readers racing): the same record
                        s.slots[i].seenFrom = min(s.slots[i].seenFrom, snapshot)
                        s.slots[i].seenTo = max(s.slots[i].seenTo, snapshot)
                    }
                    return
                }
                s.bytes -= s.slots[i].cost
                s.misses += 1   // a stale entry: its probe counted neither a hit nor a miss
                released = s.slots[i].box
            }
            // A new entry that evicts others is an admission the window learns from.
            let admission = existing == nil && s.bytes + cost > capacityBytes
            while s.bytes + cost > capacityBytes {
                guard let evicted = Self.evictOne(&s, sparing: existing) else { continue }
                if released == nil { released = evicted } else { releasedMore.append(evicted) }
            }
            if s.layoutSamples < Self.layoutSamples {
                s.layoutSamples += 1
                s.referenceWords |= EntityPrefetch.referenceWords(of: box, layout)
            }
            var slot = Slot(key: key, sequence: sequence, seenFrom: snapshot, seenTo: snapshot, cost: cost, box: box,
                            referenced: false)
            if admission { slot.stamp = s.window.admit() }
            s.bytes += cost
            if let i = existing {
                s.slots[i] = slot
            } else if let i = s.free.popLast() {
                s.slots[i] = slot
                s.index.insert(key.hash, slot: i)
            } else {
                s.index.insert(key.hash, slot: s.slots.count)
                s.slots.append(slot)
            }
        }
        _ = (released, releasedMore)
    }

    /// Moves the hand one slot: frees the entry there if its reference bit is clear (and returns its box), else
    /// clears the bit. Never frees the slot `sparing`. The caller stops once the entries fit; one more entry
    /// than `sparing` is held whenever they do not (every cost is at most the bound), so the hand finds one
    /// within two turns.
    private static func evictOne(_ s: inout Storage, sparing: Int?) -> (any AnyObject & Sendable)? {
        if s.hand >= s.slots.count { s.hand = 0 }
        let i = s.hand
        s.hand += 1
        guard i != sparing, let box = s.slots[i].box else { return nil }
        if s.slots[i].referenced {
            s.slots[i].referenced = false
            return nil
        }
        s.bytes -= s.slots[i].cost
        s.victims.remember(s.slots[i].key.hash)
        s.index.remove(s.slots[i].key.hash, slot: i)
        s.slots[i] = Slot(key: EntityCacheKey([]), sequence: 0, seenFrom: 1, seenTo: 0, cost: 0, box: nil,
                          referenced: false)
        s.free.append(i)
        return box
    }

    /// The admission window and its bounds (``LucidEngine/AdmissionWindow``), for tests and statistics.
    var admissionWindow: (keys: Int, minimum: Int, maximum: Int) {
        storage.withLock { ($0.window.keys, $0.window.minimum, $0.window.maximum) }
    }

    /// Entries, bytes counted, hits and misses since the table was made: a hit is a read that took an entry
    /// (with or without a lookup); a miss, a read that found no entry (also for a key with no record) or an
    /// entry of an older record of the key.
    var statistics: (entries: Int, bytes: Int, hits: Int, misses: Int) {
        storage.withLock { ($0.index.count, $0.bytes, $0.hits, $0.misses) }
    }
}
