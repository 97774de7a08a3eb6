import Synchronization

/// A bounded cache of verified, decompressed pages, keyed by (segment id, page offset).
///
/// Sharded to keep reader contention low; each shard evicts with the CLOCK algorithm (a reference bit per
/// entry, a hand that sweeps), an LRU approximation with O(1) hits and no list maintenance on reads, with an
/// admission rule from 2Q so that pages read once (a scan, uniformly random gets) do not flush pages read again:
/// - a page missed for the first time (recently) is cached on probation, under the hand: it is the next victim
///   unless read again before the next miss, and its key is then remembered (``PageGhosts``);
/// - a page read again while on probation, or missed again while its key is remembered, is admitted: placed
///   behind the hand, it stays for at least a whole sweep, and for as long as it is read between sweeps;
/// - once its shard is full, a point read's first miss (``afterMiss(_:)``) does not cache the page at all, only
///   remembers its key: the reader decodes the page just far enough for its value, and caches it, admitted, if it
///   misses it again while the key is among those remembered last (the shard's ``AdmissionWindow``, which narrows
///   while admissions do not pay: under uniformly random reads of data larger than the cache).
/// Probation also recycles memory: the buffer freed is the one just filled, still in the processor's caches.
/// Capacity counts payload bytes. - Complexity: O(1) amortized per lookup and insert.
final class PageCache: Sendable {
    struct Key: Hashable, Sendable {
        var segment: UInt64
        var offset: UInt64

        /// The key as one integer for ``PageSlotTable``: segment ids and page offsets both fit 32 bits
        /// (locations store them as `UInt32`).
        @inline(__always) var packed: UInt64 { segment << 32 | offset & 0xFFFF_FFFF }
    }

    struct Entry {
        var key: Key
        var page: PageBuffer
        var referenced: Bool
        /// Cached on a first miss and not read since: evicted unread, its key becomes a ghost.
        var probation: Bool
        /// The shard's ``AdmissionWindow`` stamp of an admitted entry not hit since; 0 otherwise.
        var stamp: UInt32 = 0
    }

    struct Shard {
        var slots = PageSlotTable()
        var entries: [Entry] = []
        var hand = 0
        var bytes = 0
        /// Keys of pages missed once lately (2Q's ghosts), each for one to two generations of `window.keys`.
        var ghosts: PageGhosts
        /// Keys of pages evicted lately after they had been admitted or read again: a miss on one is a regret.
        var victims: EvictedKeys
        var window: AdmissionWindow

        /// Marks the entry at `slot` recently used; its first hit since its admission is a benefit.
        @inline(__always) mutating func noteHit(_ slot: Int) {
            entries[slot].referenced = true
            window.hit(stamp: &entries[slot].stamp)
        }

        /// Counts a regret when `key` was evicted lately after it had been admitted or read again.
        @inline(__always) mutating func noteMiss(_ key: UInt64) {
            if victims.take(key) { window.regret() }
        }

        /// Remembers the key of a page missed once, for one to two generations of the current window.
        @inline(__always) mutating func rememberGhost(_ key: UInt64) {
            ghosts.remember(key, generation: window.keys)
        }
    }

    private static let shardCount = 16
    /// One lock per shard; a class because `Mutex` cannot live in an array.
    final class LockedShard: Sendable {
        let mutex: Mutex<Shard>
        init(window: Int) {
            mutex = Mutex(Shard(ghosts: PageGhosts(capacity: window), victims: EvictedKeys(capacity: window),
                                window: AdmissionWindow(maximum: window)))
        }
    }
    let shards: [LockedShard]
    private let shardCapacity: Int
    let hitCount = Atomic<UInt64>(0)
    private let missCount = Atomic<UInt64>(0)

    /// Payload bytes a miss reads along with the page header, in one `pread`: learnt from the pages read, at
    /// most the writer's page size (see ``ReadAheadEstimator``).
    let readAhead: ReadAheadEstimator

    /// Single decoded values of records read in place from pages whose records are compressed one by one, when
    /// the store reads such pages in place (see ``RecordCache``); nil otherwise.
    let records: RecordCache?

    /// A cache holding at most about `capacityBytes` of page payloads (0 disables it), plus a ``RecordCache`` of
    /// `recordBytes` when that is positive. A miss reads up to `readAhead` payload bytes with the header (see
    /// ``SegmentFile/readPage(at:fileEnd:expectedStoredLength:)``).
    init(capacityBytes: Int, readAhead: Int = Format.defaultPageSize, recordBytes: Int = 0) {
        records = recordBytes > 0 ? RecordCache(capacityBytes: recordBytes) : nil
        self.readAhead = ReadAheadEstimator(maximum: readAhead)
        shardCapacity = capacityBytes / Self.shardCount
        // At its widest, the admission window remembers a first miss for a quarter to a half as many misses as a
        // shard holds pages of the default size (``PageGhosts``' two generations): a working set whose pages come
        // back within that many misses gets in. (Before the window adapted, a fixed half was the compromise with
        // uniformly random reads, which ran 10% slower with as many ghosts as pages.)
        let window = max(16, shardCapacity / Format.defaultPageSize / 4)
        shards = (0..<Self.shardCount).map { _ in LockedShard(window: window) }
    }

    var hits: UInt64 { hitCount.load(ordering: .relaxed) }
    var misses: UInt64 { missCount.load(ordering: .relaxed) }

    @inline(__always) func shardIndex(_ key: Key) -> Int {
        var h = key.offset &* 0x9E37_79B9_7F4A_7C15 ^ key.segment
        h ^= h >> 29
        return Int(truncatingIfNeeded: h) & (Self.shardCount - 1)
    }

    /// The cached page, marking it recently used.
    func page(for key: Key) -> PageBuffer? { withPage(for: key) { $0 } }

    /// Calls `body` with the cached page, marking it recently used, and returns its result; `nil` on a miss.
    /// `body` runs under the page's shard lock and borrows the page: a reader that only copies a value out pays
    /// no reference count on the page's storage (an atomic write to memory the other readers share). Keep
    /// `body` short, and never call the cache from it.
    func withPage<R>(for key: Key, _ body: (PageBuffer) -> R) -> R? {
        let result: R? = shards[shardIndex(key)].mutex.withLock { shard in
            guard let slot = shard.slots.value(for: key.packed) else { return nil }
            shard.noteHit(slot)
            return body(shard.entries[slot].page)
        }
        if result != nil { hitCount.add(1, ordering: .relaxed) } else { missCount.add(1, ordering: .relaxed) }
        return result
    }

    /// Inserts a page, evicting others as needed. Pages larger than a shard's capacity are not cached. The page
    /// is admitted (placed behind the hand) when `admitted` is true or its key is remembered as a ghost within the
    /// shard's ``AdmissionWindow``; otherwise it goes on probation.
    func insert(_ page: PageBuffer, for key: Key, admitted: Bool = false) {
        let size = page.bytes.count
        guard size <= shardCapacity else { return }
        shards[shardIndex(key)].mutex.withLock { shard in
            if let slot = shard.slots.value(for: key.packed) {
                // Another reader cached it first: recently used, but no read of the cache (no benefit).
                shard.entries[slot].referenced = true
                return
            }
            shard.noteMiss(key.packed)
            let admitted = shard.ghosts.take(key.packed) || admitted
            while shard.bytes + size > shardCapacity && !shard.entries.isEmpty {
                Self.evictOne(&shard)
            }
            shard.slots.set(shard.entries.count, for: key.packed)
            shard.entries.append(Entry(key: key, page: page, referenced: false, probation: !admitted,
                                       stamp: admitted ? shard.window.admit() : 0))
            shard.bytes += size
        }
    }

    /// What a point read does with a page it just missed (``afterMiss(_:)``).
    enum MissPolicy: Equatable {
        /// Decode only as far as the wanted value ends; do not cache the page.
        case readValueOnly
        /// Read the page whole and cache it (``insert(_:for:admitted:)``), admitted or on probation.
        case cache(admitted: Bool)
    }

    /// For a point read that just missed `key`: cache the page, admitted, when its key is remembered as a ghost
    /// (it was missed recently, within the shard's ``AdmissionWindow``); cache it on probation when its shard has
    /// room for a page of the writer's size (caching then evicts nothing, unless the page is larger: a single large
    /// record); otherwise remember its key and read only the value, without caching the page. So once a shard is
    /// full, a page read once by a point read is not cached: uniformly random reads neither pay to cache pages nor
    /// flush the ones read again (2Q's rule, with the first miss remembered instead of cached on probation). A
    /// cache whose shards cannot hold a page of the writer's size (0 bytes included) always reads values only.
    /// O(1).
    func afterMiss(_ key: Key) -> MissPolicy {
        guard shardCapacity > 0, shardCapacity >= readAhead.maximum else { return .readValueOnly }
        return shards[shardIndex(key)].mutex.withLock { shard in
            shard.noteMiss(key.packed)
            if shard.ghosts.take(key.packed) { return .cache(admitted: true) }
            if shard.bytes + readAhead.maximum <= shardCapacity { return .cache(admitted: false) }
            shard.rememberGhost(key.packed)
            return .readValueOnly
        }
    }

    /// Drops every page of a segment, and its records' values (when its file goes away).
    func removeAll(segment: UInt64) {
        records?.removeAll(segment: segment)
        for shard in shards {
            shard.mutex.withLock { shard in
                var kept: [Entry] = []
                for e in shard.entries where e.key.segment != segment { kept.append(e) }
                shard.entries = kept
                shard.slots = PageSlotTable(capacity: kept.count)
                for (i, e) in kept.enumerated() { shard.slots.set(i, for: e.key.packed) }
                shard.bytes = kept.reduce(0) { $0 + $1.page.bytes.count }
                shard.hand = 0
            }
        }
    }

    private static func evictOne(_ shard: inout Shard) {
        while true {
            if shard.hand >= shard.entries.count { shard.hand = 0 }
            if shard.entries[shard.hand].referenced {
                // Read since the hand last passed (or since it came in on probation): kept, admitted.
                shard.entries[shard.hand].referenced = false
                shard.entries[shard.hand].probation = false
                shard.hand += 1
                continue
            }
            let victim = shard.entries[shard.hand]
            if victim.probation {
                shard.rememberGhost(victim.key.packed)
            } else {
                shard.victims.remember(victim.key.packed)
            }
            shard.bytes -= victim.page.bytes.count
            shard.slots.remove(victim.key.packed)
            // Remove by moving the last entry (the newest: pages are appended) into the victim's slot. An admitted
            // page then goes behind the hand (examined last, a whole sweep from now); a page on probation stays
            // under it (the next victim, unless read before the next miss).
            let last = shard.entries.count - 1
            if shard.hand != last {
                shard.entries[shard.hand] = shard.entries[last]
                shard.slots.set(shard.hand, for: shard.entries[shard.hand].key.packed)
                if !shard.entries[shard.hand].probation { shard.hand += 1 }
            } else {
                // The victim was last: the hand wraps (left past the end, it would stay on the slot every new
                // page is appended to, and take each as the next victim).
                shard.hand = 0
            }
            shard.entries.removeLast()
            return
        }
    }
}

extension PageCache.Key {
    /// The key of the page holding the record at `location`.
    init(_ location: RecordLocation) {
        self.init(segment: UInt64(location.segment), offset: UInt64(location.pageOffset))
    }
}
