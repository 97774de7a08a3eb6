import LucidEngine

/// The disk store's reads of records by key: through the decoded-entity cache (``EntityCache``), then the
/// engine. A read that the cache knows to be current for its snapshot takes the cached entity; one whose entry
/// may be stale looks the key up and compares the record's commit sequence; the rest read and decode the record.
extension DiskStore {
    /// The entity under `key` in `snapshot`: from the cache when it holds this record, else read, decoded and
    /// offered to the cache.
    func fetch(_ key: [UInt8], in snapshot: Snapshot) throws(StoreError) -> E? {
        let cacheKey = EntityCacheKey(key)
        let probe = cache.probe(cacheKey, at: snapshot.sequence)
        if probe.current, let box = probe.box { return try cached(box) }
        guard let handle = try recordHandle(key, in: snapshot) else { return nil }
        return try entity(at: handle, key: key, cacheKey: cacheKey, probe: probe, in: snapshot)
    }

    /// ``fetch(_:in:)``, handing the entity to `found` too (the rare path of ``getNow(_:found:)``: its own `E?`,
    /// apart, so that its metadata lookup stays on this path).
    @inline(never)
    func fetch(_ key: [UInt8], in snapshot: Snapshot, found: (E) -> Void) throws(StoreError) -> E? {
        guard let entity = try fetch(key, in: snapshot) else { return nil }
        found(entity)
        return entity
    }

    /// The entities under `keys` in `snapshot`, in order (keys without a record are skipped), as ``fetch(_:in:)``
    /// reads them, except that the keys the cache does not know to be current are looked up together and their
    /// records read together (``LucidEngine/Snapshot/handles(forKeys:in:)``, ``LucidEngine/Snapshot/values(of:)``):
    /// scattered records, read one by one, would each wait for memory in turn. Errors: with 4 or more records to
    /// read, the engine's first (lookups, then reads), then the first record in order that does not decode; with
    /// fewer, each key's in order, as one-key fetches meet them. Probes all come first, so a key repeated in one
    /// call is read (and decoded) once per occurrence (no caller repeats one). A ``FetchBatch`` filled with
    /// `keys` and read by ``entities(of:in:)``; `query` as ``FetchBatch/query``.
    func fetch(_ keys: [[UInt8]], in snapshot: Snapshot, query: Bool = false) throws(StoreError) -> [E] {
        var batch = FetchBatch(capacity: keys.count, at: snapshot.sequence, query: query)
        for key in keys { key.withUnsafeBytes { add($0, copy: key, to: &batch) } }
        return try entities(of: &batch, in: snapshot)
    }

    /// Adds the key `raw` to `batch`, probing the cache for it now: the bytes are copied (or `copy` kept) only
    /// when the cache does not hold its entity current, so a fetch the cache answers makes no key array.
    @inline(__always)
    func add(_ raw: UnsafeRawBufferPointer, copy: [UInt8]? = nil, to batch: inout FetchBatch) {
        if !batch.staged.isEmpty { probeStaged(&batch) }
        batch.record(cache.probe(raw, hash: EntityCacheKey.hash(raw), at: batch.sequence)) { copy ?? Array(raw) }
    }

    /// Adds the key `raw` to `batch` as ``add(_:copy:to:)`` does, but probes the cache for it later, together
    /// with the keys staged after it (``EntityCacheTable/probe(_:at:into:)``): the bytes are copied into the
    /// batch's staging buffer now, and into an array of their own only if the cache does not hold the entity
    /// current. For a walk that meets many keys before it reads any.
    @inline(__always)
    func stage(_ raw: UnsafeRawBufferPointer, to batch: inout FetchBatch) {
        if batch.staged.isEmpty { batch.staged.reserve(batch.room) }
        batch.staged.append(raw)
        if batch.staged.count >= FetchBatch.stagedLimit { probeStaged(&batch) }
    }

    /// Probes the cache for the keys staged in `batch`, all together, and records the results in order.
    func probeStaged(_ batch: inout FetchBatch) {
        let count = batch.staged.count
        guard count > 0 else { return }
        withUnsafeTemporaryAllocation(of: EntityCacheTable.Probe.self, capacity: count) { probes in
            cache.probe(batch.staged, at: batch.sequence, into: probes)
            let staged = batch.staged
            for i in 0..<count { batch.record((probes.baseAddress! + i).move()) { staged.key(i) } }
        }
        batch.staged.removeAll()
    }

    /// The entities of the keys added to `batch`, in order, as ``fetch(_:in:)`` reads them (`snapshot` must be
    /// the one whose sequence the batch was made with). The batch is used up (its staged keys probed, its slots
    /// resolved in place, which `inout` keeps from copying its arrays): read it once.
    ///
    /// The array is filled in place: in generic code each `append` would look `Array<E>`'s metadata up at run
    /// time, and no `E?` passes per key (entities wait in their cache boxes meanwhile).
    func entities(of batch: inout FetchBatch, in snapshot: Snapshot) throws(StoreError) -> [E] {
        assert(batch.sequence == snapshot.sequence, "a fetch batch read from another snapshot than its probes'")
        probeStaged(&batch)
        guard !batch.slots.isEmpty else { return [] }
        if batch.hits && engine.isClosed { throw .closed }   // a cached entity is taken as the engine read would be
        if batch.pending > 0 {
            let keys = batch.keys
            let pending = batch.pending
            // A small query's misses are admitted at once (see `firstMissRecordLimit`), when they fit easily.
            let firstMiss = batch.query && batch.count <= Self.firstMissRecordLimit && cache.admitsAtOnce(pending)
            var failure: StoreError?
            batch.slots.withUnsafeMutableBufferPointer { slots in
                do throws(StoreError) {
                    try resolve(keys, slots, pending: pending, firstMiss: firstMiss, in: snapshot)
                } catch { failure = error }
            }
            if let failure { throw failure }
        }
        let slots = batch.slots
        return [E](unsafeUninitializedCapacity: slots.count) { buffer, count in
            for slot in slots {
                guard case .entity(let box) = slot else { continue }
                (buffer.baseAddress! + count).initialize(to: EntityBox<E>.unbox(box))
                count += 1
            }
        }
    }

    /// How many keys the cache does not know to be current make ``fetch(_:in:)`` look them up together: a batch
    /// costs a few allocations of its own, which one or two lookups do not repay.
    static var batchedLookups: Int { 4 }

    /// The entity `bytes` holds (the record `handle` of `key`), in a box, offered to the cache when `admit`: its
    /// probe was made before the batch's other inserts, so with `recheckAdmission` the cache checks admission
    /// again as it is then (a large query must not flush the working set on the strength of the room one probe
    /// saw; a small query's misses, admitted at once, are not rechecked).
    private func boxedEntity(_ bytes: [UInt8], key: [UInt8], handle: RecordHandle, admit: Bool, recheckAdmission: Bool,
                             in snapshot: Snapshot) throws(StoreError) -> any AnyObject & Sendable {
        boxed(try decode(bytes, key: key), recordLength: bytes.count, key: key, handle: handle, admit: admit,
              recheckAdmission: recheckAdmission, in: snapshot)
    }

    /// ``boxedEntity(_:key:handle:admit:recheckAdmission:in:)`` of an entity decoded already.
    private func boxed(_ entity: E, recordLength: Int, key: [UInt8], handle: RecordHandle, admit: Bool,
                       recheckAdmission: Bool, in snapshot: Snapshot) -> any AnyObject & Sendable {
        let box = cache.box(entity)
        if admit {
            cache.insert(box, forKey: EntityCacheKey(key), sequence: handle.sequence, at: snapshot.sequence,
                         recordLength: recordLength, recheckAdmission: recheckAdmission)
        }
        return box
    }

    /// Turns every pending slot of `slots` (the cache did not know `keys[i]` to be current) into an entity or
    /// `.absent`. From ``batchedLookups`` pending keys on: one lookup of all their keys, one read of the records the
    /// cache does not hold, then each decoded (and offered to the cache) in order. Fewer: each key looked up, read
    /// and decoded in turn, as a one-key fetch does (a batch's arrays cost more than it saves there).
    /// With `firstMiss`, every record read is offered to the cache and admitted as it is, not rechecked.
    private func resolve(_ keys: [[UInt8]], _ slots: UnsafeMutableBufferPointer<FetchSlot>, pending: Int,
                         firstMiss: Bool, in snapshot: Snapshot) throws(StoreError) {
        let batched = pending >= Self.batchedLookups
        var handles: [RecordHandle?] = []
        if batched {
            var lookups: [[UInt8]] = []
            lookups.reserveCapacity(pending)
            for (i, slot) in slots.enumerated() { if case .pending = slot { lookups.append(keys[i]) } }
            do { handles = try snapshot.handles(forKeys: lookups, in: keyspace) } catch { throw .wrap(error) }
        }
        var reads = 0
        var h = 0
        for i in slots.indices {
            guard case .pending(let probe) = slots[i] else { continue }
            defer { h += 1 }
            guard let handle = batched ? handles[h] : try recordHandle(keys[i], in: snapshot) else {
                slots[i] = .absent
                continue
            }
            if let box = probe.box, probe.sequence == handle.sequence {
                cache.confirm(EntityCacheKey(keys[i]), sequence: handle.sequence, at: snapshot.sequence)
                slots[i] = .entity(box)
            } else if !batched {
                let bytes: [UInt8]
                do { bytes = try snapshot.value(of: handle) } catch { throw .wrap(error) }
                slots[i] = .entity(try boxedEntity(bytes, key: keys[i], handle: handle, admit: probe.admit || firstMiss,
                                                   recheckAdmission: !firstMiss, in: snapshot))
            } else {
                slots[i] = .read(admit: probe.admit || firstMiss, handle: h)
                reads += 1
            }
        }
        guard reads > 0 else { return }
        // A few records are read alone (typically most keys were confirmed: a write changed a few since the cache
        // last saw them); more are read together.
        var values: [[UInt8]] = []
        if reads >= Self.batchedLookups {
            var batch: [RecordHandle] = []
            batch.reserveCapacity(reads)
            for slot in slots { if case .read(_, let h) = slot, let handle = handles[h] { batch.append(handle) } }
            do { values = try snapshot.values(of: batch) } catch { throw .wrap(error) }
        }
        // Many records are decoded on every processor first (each decodes alone, see ``ParallelDecode``), then
        // boxed and offered to the cache in order, on this thread.
        var decoded: [E] = []
        if ParallelDecode.runsInParallel(count: values.count) {
            var readKeys: [[UInt8]] = []
            readKeys.reserveCapacity(values.count)
            for i in slots.indices {
                if case .read(_, let h) = slots[i], handles[h] != nil { readKeys.append(keys[i]) }
            }
            let values = values, keys = readKeys
            decoded = try ParallelDecode.compactMap(count: values.count) { r throws(StoreError) in
                try self.decode(values[r], key: keys[r])
            }
        }
        var r = 0
        for i in slots.indices {
            guard case .read(let admit, let h) = slots[i], let handle = handles[h] else { continue }
            if !decoded.isEmpty {
                slots[i] = .entity(boxed(decoded[r], recordLength: values[r].count, key: keys[i], handle: handle,
                                         admit: admit, recheckAdmission: !firstMiss, in: snapshot))
                r += 1
                continue
            }
            let bytes: [UInt8]
            if values.isEmpty {
                do { bytes = try snapshot.value(of: handle) } catch { throw .wrap(error) }
            } else {
                bytes = values[r]
                r += 1
            }
            slots[i] = .entity(try boxedEntity(bytes, key: keys[i], handle: handle, admit: admit,
                                               recheckAdmission: !firstMiss, in: snapshot))
        }
    }

    /// The entity in a box of the cache, taken without reading the engine: unless the engine was closed since
    /// the read's snapshot was taken (a read then fails as the engine read would).
    @inline(__always)
    func cached(_ box: any AnyObject & Sendable) throws(StoreError) -> E {
        if engine.isClosed { throw .closed }
        return EntityBox<E>.unbox(box)
    }

    /// The record under `key` in `snapshot`, not read yet. - Throws: ``StoreError/engine(_:)`` once closed.
    func recordHandle(_ key: [UInt8], in snapshot: Snapshot) throws(StoreError) -> RecordHandle? {
        do { return try snapshot.handle(forKey: key, in: keyspace) } catch { throw .wrap(error) }
    }

    /// The entity of the record `handle` names (found under `key` in `snapshot`, after `probe` of the cache did
    /// not find it current): the cached one when the cache holds that record, else the record read and decoded
    /// (and cached, when admitted).
    func entity(at handle: RecordHandle, key: [UInt8], cacheKey: EntityCacheKey, probe: EntityCacheTable.Probe,
                in snapshot: Snapshot) throws(StoreError) -> E {
        try entity(at: handle, key: key, cacheKey: cacheKey, probe: probe, sequence: snapshot.sequence) {
            try snapshot.value(of: handle)
        }
    }

    /// ``entity(at:key:cacheKey:probe:in:)`` of the record a ``LucidEngine/RecordLookup`` found.
    func entity(at handle: RecordHandle, key: [UInt8], cacheKey: EntityCacheKey, probe: EntityCacheTable.Probe,
                in lookup: RecordLookup) throws(StoreError) -> E {
        try entity(at: handle, key: key, cacheKey: cacheKey, probe: probe, sequence: lookup.sequence) {
            try engine.value(of: lookup) ?? []
        }
    }

    /// The entity of the record `handle` names, found in a state at `sequence`; `read` reads its value.
    @inline(__always)
    private func entity(at handle: RecordHandle, key: [UInt8], cacheKey: EntityCacheKey,
                        probe: EntityCacheTable.Probe, sequence: UInt64,
                        read: () throws -> [UInt8]) throws(StoreError) -> E {
        if let box = probe.box, probe.sequence == handle.sequence {
            cache.confirm(cacheKey, sequence: handle.sequence, at: sequence)
            return EntityBox<E>.unbox(box)
        }
        let bytes: [UInt8]
        do { bytes = try read() } catch { throw .wrap(error) }
        let entity = try decode(bytes, key: key)
        if probe.admit {
            cache.insert(entity, forKey: cacheKey, sequence: handle.sequence, at: sequence, recordLength: bytes.count)
        }
        return entity
    }

    /// The entity `bytes` holds; `key` (its record's key, for the error) is only built when it does not decode.
    func decode(_ bytes: [UInt8], key: @autoclosure () -> [UInt8]) throws(StoreError) -> E {
        do { return try E.decodeRecord(bytes) } catch {
            throw .undecodableEntity(keyspace: keyspace, key: key(), detail: "\(error)")
        }
    }
}

/// Keys gathered for one batched fetch of a ``DiskStore`` (``DiskStore/add(_:copy:to:)``, then
/// ``DiskStore/entities(of:in:)``), each probed in the entity cache as it comes: a query walking an index hands
/// its keys' bytes straight from the index, and only those the cache cannot answer are copied. Not generic.
struct FetchBatch {
    fileprivate var slots: [FetchSlot] = []
    /// The slots' keys; an empty array (no allocation) for a key the cache answered.
    fileprivate var keys: [[UInt8]] = []
    fileprivate var pending = 0
    fileprivate var hits = false
    /// Keys added by ``DiskStore/stage(_:to:)`` and not probed yet (they follow the slots' keys).
    fileprivate var staged: StagedKeys
    /// How many keys are staged at most before they are probed: the cache's lock is held for that many probes.
    static var stagedLimit: Int { 64 }
    /// How many keys the batch expects to stage at once (its capacity, at most ``stagedLimit``).
    fileprivate let room: Int
    /// The sequence of the snapshot the batch is read from.
    let sequence: UInt64
    /// Whether the batch is a query's read: when it holds at most ``DiskStore/firstMissRecordLimit`` keys and its
    /// misses take at most an eighth of the cache, the cache admits them on their first miss, even when full;
    /// otherwise on their second, as single reads.
    let query: Bool

    /// An empty batch for about `capacity` keys, read from the snapshot at `sequence`; `query` as the property.
    init(capacity: Int, at sequence: UInt64, query: Bool = false) {
        self.query = query
        // A query's limit is the caller's: room for a large one is made as keys come.
        let room = min(capacity, 1024)
        slots.reserveCapacity(room)
        keys.reserveCapacity(room)
        staged = StagedKeys()
        self.room = min(room, Self.stagedLimit)
        self.sequence = sequence
    }

    /// Keys added (probed or staged).
    var count: Int { slots.count + staged.count }

    /// Records the probe of the next key: its entity when current (no key array made), else pending, with the
    /// key array `key` makes.
    @inline(__always)
    fileprivate mutating func record(_ probe: EntityCacheTable.Probe, key: () -> [UInt8]) {
        if probe.current, let box = probe.box {
            slots.append(.entity(box))
            keys.append([])
            hits = true
        } else {
            slots.append(.pending(probe))
            keys.append(key())
            pending += 1
        }
    }
}

/// Where a batched fetch stands with one key (not generic, so that the slots cost no metadata lookups).
private enum FetchSlot {
    /// The entity, in its cache box.
    case entity(any AnyObject & Sendable)
    /// Not known to be current in the cache (the probe's result): to look up.
    case pending(EntityCacheTable.Probe)
    /// Looked up (`handle` indexes the lookup's results): a record the cache does not hold, to read, decode and
    /// offer to the cache when `admit`.
    case read(admit: Bool, handle: Int)
    /// No record under the key.
    case absent
}
