import Synchronization

/// Decoded entities of a ``DiskStore``, each kept with the commit sequence of the record it was decoded from,
/// so that a read that finds the same record (same key, same sequence: see ``LucidEngine/RecordHandle``) takes
/// the entity instead of reading and decoding the record again, and a read from a snapshot known to hold that
/// record takes it without even looking the key up (see ``EntityCacheTable``). A write needs no invalidation:
/// it gives the key a greater sequence, and the old entry stops matching.
///
/// Bounded by the bytes of the records cached (each entry counts its record's length, its key's and a fixed
/// overhead), with CLOCK eviction; once full, a record is admitted on its second miss within a while (see
/// ``EntityCacheTable``), so that reads spread over far more records than fit do not churn it, or on its first
/// when a small query reads it (``DiskStore/firstMissRecordLimit``). One lock; a lookup holds it for one hash
/// probe, a query's walk for the probes of up to ``FetchBatch/stagedLimit`` keys
/// (``EntityCacheTable/probe(_:at:into:)``).
///
/// The table is not generic: the library's generic code is not specialized for the app's entity types, and
/// each use of a generic type there looks its metadata up at run time. Only boxing and unboxing are generic.
final class EntityCache<E: LocalEntity>: Sendable {
    private let table: EntityCacheTable

    init(capacityBytes: Int) {
        table = EntityCacheTable(capacityBytes: capacityBytes, layout: EntityLayout(of: E.self))
    }

    /// The entry for `key` as seen from a snapshot at sequence `snapshot` (see ``EntityCacheTable/probe(_:at:)``;
    /// the box is an `EntityBox<E>`). - Complexity: O(1) expected.
    func probe(_ key: EntityCacheKey, at snapshot: UInt64) -> EntityCacheTable.Probe {
        table.probe(key, at: snapshot)
    }

    /// ``probe(_:at:)`` of the key `raw`, whose ``EntityCacheKey/hash(_:)`` is `hash`, without a key array.
    func probe(_ raw: UnsafeRawBufferPointer, hash: UInt64, at snapshot: UInt64) -> EntityCacheTable.Probe {
        table.probe(raw, hash: hash, at: snapshot)
    }

    /// ``probe(_:hash:at:)`` of every key of `keys` together (``EntityCacheTable/probe(_:at:into:)``).
    func probe(_ keys: borrowing StagedKeys, at snapshot: UInt64,
               into probes: UnsafeMutableBufferPointer<EntityCacheTable.Probe>) {
        table.probe(keys, at: snapshot, into: probes)
    }

    /// Whether most one-key probes missed lately (``EntityCacheTable/mostlyMisses``). O(1), no lock.
    var mostlyMisses: Bool { table.mostlyMisses }

    /// Whether a batch of `count` misses may be admitted at once (``EntityCacheTable/admitsAtOnce(_:)``).
    func admitsAtOnce(_ count: Int) -> Bool { table.admitsAtOnce(count) }

    /// Records that a lookup in the snapshot at `snapshot` found the probed entry's record (``probe(_:at:)``).
    func confirm(_ key: EntityCacheKey, sequence: UInt64, at snapshot: UInt64) {
        table.confirm(key, sequence: sequence, at: snapshot)
    }

    /// Keeps `entity`, decoded from `key`'s record written by commit `sequence` (`recordLength` bytes) and found in
    /// the snapshot at `snapshot`, unless the entry for `key` comes from a later commit already (a reader on an
    /// older snapshot). - Complexity: O(1) amortized.
    func insert(_ entity: E, forKey key: EntityCacheKey, sequence: UInt64, at snapshot: UInt64, recordLength: Int) {
        insert(box(entity), forKey: key, sequence: sequence, at: snapshot, recordLength: recordLength)
    }

    /// ``insert(_:forKey:sequence:at:recordLength:)`` of an entity already boxed (``box(_:)``); with
    /// `recheckAdmission`, admitted again by the cache as it is now (see ``EntityCacheTable/insert``).
    func insert(_ box: any AnyObject & Sendable, forKey key: EntityCacheKey, sequence: UInt64, at snapshot: UInt64,
                recordLength: Int, recheckAdmission: Bool = false) {
        let cost = recordLength + key.bytes.count + EntityCacheTable.entryOverhead
        table.insert(box, forKey: key, sequence: sequence, at: snapshot, cost: cost, recheckAdmission: recheckAdmission)
    }

    /// `entity` in a box of the cache's kind (an `EntityBox<E>`), made without a metadata lookup. O(1).
    func box(_ entity: E) -> any AnyObject & Sendable { E._box(entity) }

    /// Entries, bytes counted, hits and misses since the cache was made.
    var statistics: (entries: Int, bytes: Int, hits: Int, misses: Int) { table.statistics }
}

/// A record key with its hash (``ByteHash``) computed once: a read hashes its key once for the lookup and, on a
/// miss, for the insert.
struct EntityCacheKey: Hashable, Sendable {
    let bytes: [UInt8]
    let hash: UInt64

    init(_ bytes: [UInt8]) {
        self.init(bytes, hash: bytes.withUnsafeBytes(Self.hash))
    }

    /// The key `bytes`, whose ``hash(_:)`` is `hash`.
    init(_ bytes: [UInt8], hash: UInt64) {
        self.bytes = bytes
        self.hash = hash
    }

    /// The hash of the key `raw`, as ``hash`` holds it: a lookup by raw bytes needs no key array. O(key length).
    static func hash(_ raw: UnsafeRawBufferPointer) -> UInt64 { ByteHash.hash(raw) }

    static func == (a: Self, b: Self) -> Bool { a.hash == b.hash && a.bytes == b.bytes }
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

/// A key's length and first 16 bytes (zero-padded), kept in ``EntityCacheTable``'s slot beside its entry: a probe
/// compares a key of up to 16 bytes (an identifier's storage key: a tag byte and an 8-byte remote value) without
/// reading the key's array, a separate allocation that a probe of a large cache mostly misses in the processor's
/// caches (a third of the probe's samples in a `perf` profile of lucid-compare's index_range at 1M records).
struct EntityCacheKeyHead: Equatable {
    var first: UInt64 = 0
    var second: UInt64 = 0
    var count = 0

    init() {}

    /// The head of the key `raw`: its first 16 bytes as two little-endian words, zero-padded. O(1).
    init(_ raw: UnsafeRawBufferPointer) {
        count = raw.count
        if raw.count >= 16 {
            first = raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            second = raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        } else if raw.count >= 8 {
            first = raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            // The last 8 bytes, shifted so that bytes 8..<count are the low ones (the others were in `first`).
            let last = raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self)
            second = raw.count == 8 ? 0 : last >> UInt64(8 * (16 - raw.count))
        } else {
            for i in 0..<raw.count { first |= UInt64(raw[i]) << UInt64(8 * i) }
        }
    }

    /// Whether the head decides equality alone: keys of at most 16 bytes are whole in it.
    var isWhole: Bool { count <= 16 }
}

extension EntityCacheKeyHead {
    /// The key a whole head holds (``isWhole``): its `count` bytes, the first 8 from `first`, the rest from
    /// `second`, as ``init(_:)`` placed them. - Complexity: O(count).
    var bytes: [UInt8] {
        precondition(isWhole, "the bytes of a key longer than its head")
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            for j in 0 ..< count {
                let word = j < 8 ? first : second
                buffer[j] = UInt8(truncatingIfNeeded: word >> UInt64(8 * (j & 7)))
            }
            initialized = count
        }
    }
}

/// One decoded entity, shared by the cache and the readers it hands copies to. Made by ``LocalEntity/_box(_:)``
/// (inlinable, hence `@usableFromInline`).
@usableFromInline
final class EntityBox<E: Sendable>: Sendable {
    let entity: E
    @usableFromInline
    init(_ entity: E) { self.entity = entity }

    /// The entity in `box`, which must be an `EntityBox<E>` (unchecked). O(1): a copy of the entity.
    @inline(__always)
    static func unbox(_ box: any AnyObject & Sendable) -> E { unsafeDowncast(box, to: EntityBox<E>.self).entity }
}
