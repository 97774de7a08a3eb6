import LucidEngine
import Synchronization

/// The disk store: entities of one type in one keyspace of a ``LucidEngine/Engine``, with one secondary index
/// per ``EntityIndexName`` (named by its raw value) and a reserved `__lid` index of local identifiers.
///
/// - Records are keyed by ``EntityIdentifier/storageKey`` (`r` + remote value once known, else `l` + local
///   value), so primary-key order is identifier order. An entity that gains its remote id moves from its `l`
///   key to its `r` key in the same atomic batch; `__lid` still finds it by the local id.
/// - Each index term is written with the record in one atomic batch; an array property gives one term per
///   element, an absent value a `null` term (so ordering by the index sees every record, absent values first).
/// - Queries are answered from the indexes: `==`, `<`, `<=`, `>`, `>=` (bounded to the value's type), `>>`,
///   identifier lookups, and `&&` / `||` / `!` of those as key-set operations. Ordering by the identifier reads
///   keys in order; ordering by an index walks it in order until the window is full. What no index answers
///   (`~=`, comparisons of identifiers by order) is evaluated on the candidates the rest of the filter leaves,
///   or on a full scan of the keyspace when nothing narrows it: that fallback decodes every entity. Ordered by an
///   index with a window of at most a sixteenth of the keyspace, such a filter first walks the order index,
///   reading and filtering the records it meets until the window is full; it falls back to the scan after reading
///   an eighth of the keyspace (at least 4 × the window + 256 records). A negation is held as the keys it excludes
///   (no set of every key is built).
/// - Writes are prepared one at a time (under a lock, never across a suspension), each merging with the values
///   the writes before it leave, published or still queued (``DiskQueuedBatches``); they then wait for the
///   engine's commit outside the lock, so concurrent durable writes share its syncs (group commit). A write is
///   visible to reads once it is durable, when `set` or `remove` returns.
public final class DiskStore<E: LocalEntity>: SynchronousSearchStore {
    /// The engine holding the data.
    public let engine: Engine
    /// The keyspace (default: the entity's ``EntityTypeIdentifying/identifierTypeID``).
    public let keyspace: String
    /// Held while a write prepares and queues its batch; holds the last batch generation given out.
    private let writeLock = Mutex<UInt64>(0)
    /// The write batches queued on the engine and not yet published.
    let queued = Mutex(DiskQueuedBatches())
    /// Entities decoded from this store's records, by key and commit sequence (see ``EntityCache``).
    let cache: EntityCache<E>

    /// The reserved index of local identifiers.
    static var localIndex: String { "__lid" }

    /// The default bound of the decoded-entity cache: 8 MiB of records.
    public static var defaultEntityCacheBytes: Int { 8 << 20 }

    /// The most records a query may read for the entity cache to admit the ones it misses at once, when they take
    /// at most an eighth of its bound (by the entries' average cost). Other reads are admitted on their second miss
    /// once the cache is full (see ``EntityCache``), so that reads spread over far more records than fit do not
    /// churn it. A small query is usually run again (a continuous query re-runs on every change, a list screen
    /// asks for its page again): its records are kept at once, not decoded a second time first. The trade: a
    /// reader paging through a whole keyspace in small queries churns the cache as reads of single records would
    /// without the rule.
    static var firstMissRecordLimit: Int { 64 }

    public var level: StoreLevel { .disk }

    /// A disk store of `E` in `engine`. - Complexity: O(1); nothing is read until used.
    ///
    /// - Parameter entityCacheBytes: the bound of the cache of decoded entities that reads by key go through
    ///   (gets, the records a query selects, the reads a write merges with): a read that finds a record the
    ///   cache holds, written by the same commit, takes the decoded entity and neither reads nor decodes the
    ///   record. Each entry counts its record's length, its key's and 96 bytes; a decoded entity usually takes
    ///   one to two times its record's size in memory. 0 turns the cache off. Scans (`all()`, queries that no
    ///   index narrows) read past it.
    public init(engine: Engine, keyspace: String? = nil, entityCacheBytes: Int = DiskStore.defaultEntityCacheBytes) {
        self.engine = engine
        self.keyspace = keyspace ?? E.identifierTypeID
        self.cache = EntityCache(capacityBytes: entityCacheBytes)
    }

    /// The decoded-entity cache's entries, the bytes they count, and its hits and misses since the store was made.
    public var entityCacheStatistics: (entries: Int, bytes: Int, hits: Int, misses: Int) { cache.statistics }

    /// Whether the decoded-entity cache has mostly missed lately (``EntityCache/mostlyMisses``), which decides how a
    /// get starts. For tests.
    var mostlyMissesForTesting: Bool { cache.mostlyMisses }

    /// How many records the writes begun and not yet durable hold together (queued on the engine, not yet
    /// published; a key two of them write counts twice). O(1).
    public var queuedRecordCount: Int { queued.withLock { $0.recordCount } }

    // MARK: Reads

    public func get(byID identifier: E.Identifier) async throws(StoreError) -> E? {
        try getNow(identifier)
    }

    /// Synchronous ``get(byID:)``: one engine lookup (``LucidEngine/Engine/lookUp(_:in:)``: a point-index probe or
    /// a B-tree descent; two for a local-only id of a synced entity) and a decode;
    /// none of them when the decoded-entity cache knows the record to be the snapshot's, the lookup alone when it
    /// holds the record but must check it is still the key's (see ``EntityCacheTable``).
    ///
    /// (No `E?` passes between functions on the usual paths: in generic code each one looks `Optional<E>`'s
    /// metadata up at run time, about 300 instructions.)
    public func getNow(_ identifier: E.Identifier) throws(StoreError) -> E? {
        let (key, cacheKey) = try startGet(identifier)
        let probe: EntityCacheTable.Probe
        let lookup: RecordLookup
        if cache.mostlyMisses {
            let (probed, looked) = try probeWhileLookingUp(key, cacheKey)
            guard let looked else { return try cached(probed.box!) }
            (probe, lookup) = (probed, looked)
        } else {
            probe = cache.probe(cacheKey, at: engine.currentSequence)
            if probe.current, let box = probe.box { return try cached(box) }
            lookup = try lookUp(key)
        }
        if let handle = lookup.handle {
            return try entity(at: handle, key: key, cacheKey: cacheKey, probe: probe, in: lookup)
        }
        return try getByLocalValue(identifier, storageKey: key) { _ in }
    }

    /// ``getNow(_:)``, handing the entity it found to `found` before returning it: a caller that keeps it (a cache
    /// store's memory) needs no `E?` of its own. (Apart from ``getNow(_:)``, whose returns need no copy of the
    /// entity.)
    func getNow(_ identifier: E.Identifier, found: (E) -> Void) throws(StoreError) -> E? {
        let (key, cacheKey) = try startGet(identifier)
        let probe: EntityCacheTable.Probe
        let lookup: RecordLookup?
        if cache.mostlyMisses {
            (probe, lookup) = try probeWhileLookingUp(key, cacheKey)
        } else {
            probe = cache.probe(cacheKey, at: engine.currentSequence)
            lookup = probe.current && probe.box != nil ? nil : try lookUp(key)
        }
        let entity: E
        if let lookup {
            guard let handle = lookup.handle else { return try getByLocalValue(identifier, storageKey: key, found: found) }
            entity = try self.entity(at: handle, key: key, cacheKey: cacheKey, probe: probe, in: lookup)
        } else {
            entity = try cached(probe.box!)
        }
        found(entity)
        return entity
    }

    /// A get's first step: the identifier's storage key, raw and hashed. Then either the cache is probed at the
    /// engine's current sequence, and on a miss the key looked up (``lookUp(_:)``) in a state at that sequence or
    /// later; or, when most gets have missed the cache lately (``EntityCache/mostlyMisses``), the cache is probed
    /// while the engine loads the key's point-index slot (``probeWhileLookingUp(_:_:)``), so that the two waits for
    /// memory overlap: a 1M-record store read at random gives 6-8% more gets per second; a hit pays about 400
    /// instructions more that way. - Throws: ``StoreError/closed`` once the engine is closed.
    @inline(__always)
    private func startGet(_ identifier: E.Identifier) throws(StoreError) -> ([UInt8], EntityCacheKey) {
        if engine.isClosed { throw .closed }
        let key = E._storageKey(of: identifier)
        return (key, EntityCacheKey(key))
    }

    /// The cache's entry for `key`, probed while the engine looks the key up in the same state
    /// (``LucidEngine/Engine/lookUp(_:in:meanwhile:)``), and the key's record, unless that entry is current (nil:
    /// the entry's box is the get's answer).
    @inline(__always)
    private func probeWhileLookingUp(_ key: [UInt8], _ cacheKey: EntityCacheKey) throws(StoreError)
        -> (EntityCacheTable.Probe, RecordLookup?) {
        var probe = EntityCacheTable.Probe()
        do {
            let lookup = try engine.lookUp(key, in: keyspace) { sequence in
                probe = cache.probe(cacheKey, at: sequence)
                return !(probe.current && probe.box != nil)
            }
            return (probe, lookup)
        } catch { throw .wrap(error) }
    }

    /// The record under `key` in the engine's current state. - Throws: ``StoreError/engine(_:)`` (closed) once
    /// the engine is closed.
    private func lookUp(_ key: [UInt8]) throws(StoreError) -> RecordLookup {
        do { return try engine.lookUp(key, in: keyspace) } catch { throw .wrap(error) }
    }

    /// The rest of a get that found no record under the identifier's storage key: for an identifier with a local
    /// value, the record the `__lid` index names (a snapshot's work: two lookups that must agree). The snapshot is
    /// later than the first lookup: a write in between may have filed the entity under the storage key (a local
    /// entity that got its remote id), which the snapshot then reads.
    private func getByLocalValue(_ identifier: E.Identifier, storageKey key: [UInt8],
                                 found: (E) -> Void) throws(StoreError) -> E? {
        guard identifier.localValue != nil else { return nil }
        let snapshot = try openSnapshot()
        guard let located = locateKey(identifier, storageKey: key, in: snapshot) else { return nil }
        return try fetch(located, in: snapshot, found: found)
    }

    public func search(_ query: Query<E>) async throws(StoreError) -> QueryResult<E> {
        try searchNow(query)
    }

    /// Synchronous ``search(_:)``.
    public func searchNow(_ query: Query<E>) throws(StoreError) -> QueryResult<E> {
        let evaluator: QueryEvaluator<E>
        do { evaluator = try QueryEvaluator(query) } catch { throw .invalidQuery(error) }
        return try DiskQueryPlanner(store: self, snapshot: openSnapshot(), evaluator: evaluator).run()
    }

    /// A snapshot of the engine. - Throws: ``StoreError/closed`` once the engine is closed (a closed engine's
    /// snapshot is empty, which must not read as "no entity").
    func openSnapshot() throws(StoreError) -> Snapshot {
        if engine.isClosed { throw .closed }
        return engine.snapshot()
    }

    /// The primary key of the record for `identifier`, without reading it: its storage key, else (for an id with
    /// a local value) the record the `__lid` index names, unless that record has another remote id.
    func locateKey(_ identifier: E.Identifier, storageKey: [UInt8]? = nil, in snapshot: Snapshot) -> [UInt8]? {
        let key = storageKey ?? identifier.storageKey
        if snapshot.contains(key, in: keyspace) { return key }
        return localRecordKey(identifier, storageKey: key, in: snapshot)
    }

    /// The key of a record other than the one under `storageKey` (that of `identifier`) that `identifier`
    /// matches by its local value: a record the `__lid` index names, unless it has another remote id. Keys for
    /// which `skipping` is true are passed over (a batch skips the keys it has already written).
    func localRecordKey(_ identifier: E.Identifier, storageKey: [UInt8], in snapshot: Snapshot,
                        skipping: ([UInt8]) -> Bool = { _ in false }) -> [UInt8]? {
        guard let local = identifier.localValue else { return nil }
        // Every record carrying the local value (normally one), so that none the predicates pass over hides another.
        let query = IndexQuery(keyspace: keyspace, index: Self.localIndex, condition: .equals(.string(local)))
        return snapshot.keys(matching: query).first { Self.mayMatchByLocal($0, storageKey: storageKey) && !skipping($0) }
    }

    /// Whether the record under `key`, which carries an identifier's local value, may be that identifier's record
    /// when the identifier's own storage key is `storageKey`: not when both are remote keys that differ (two
    /// remote ids), nor the storage key itself (looked up directly).
    static func mayMatchByLocal(_ key: [UInt8], storageKey: [UInt8]) -> Bool {
        key != storageKey && !(storageKey.first == 0x72 && key.first == 0x72)
    }

    /// Every record equal to each of `identifiers` under the identifier rule (see
    /// ``DualHashDictionary/values(matching:)``): the one under its storage key, and for an id with both halves
    /// also a record still filed under its local value alone (``DiskBatchOverlay/locateKeys(_:)`` over `snapshot`
    /// alone).
    func locateKeys(_ identifiers: [E.Identifier], in snapshot: Snapshot) -> [[UInt8]] {
        let overlay = DiskBatchOverlay(store: self, snapshot: snapshot, inFlight: nil, capacity: 0)
        return identifiers.flatMap { overlay.locateKeys($0) }
    }

    // MARK: Writes

    public func set(_ entities: [E]) async throws(StoreError) -> [E] {
        try await beginSetNow(entities).finish()
    }

    /// Prepares and queues the write of `entities` (see ``Store/beginSet(_:)``) without waiting for it to be
    /// durable: a write begun after this returns merges over it.
    public func beginSet(_ entities: [E]) async throws(StoreError) -> StoreWrite<E> {
        try beginSetNow(entities)
    }

    /// Synchronous ``beginSet(_:)``: O(entities) lookups, merges and encodings, under the write lock.
    public func beginSetNow(_ entities: [E]) throws(StoreError) -> StoreWrite<E> {
        try beginSetNow(entities, whenDone: nil)
    }

    /// ``beginSetNow(_:)``; `whenDone` runs once the write is published (true, with the stored entities) or has
    /// failed (false), on the engine's writer thread, in the order writes were begun, before `finish` returns;
    /// it does not run when this throws.
    func beginSetNow(_ entities: [E], whenDone: WhenDone?) throws(StoreError) -> StoreWrite<E> {
        try writeLock.withLock { generation throws(StoreError) -> StoreWrite<E> in
            let (writes, stored) = try prepareSet(entities)
            return try queue(writes, stored: stored, generation: &generation, whenDone: whenDone)
        }
    }

    /// Called when a begun write is published (true) or failed (false), with its stored entities.
    typealias WhenDone = @Sendable (_ published: Bool, _ stored: [E]) -> Void

    /// A batch overlay over the current snapshot and the writes queued before it, taken together (a batch
    /// retired after the snapshot was taken is still in the copy of the list, with what the snapshot holds).
    private func openOverlay(capacity: Int) throws(StoreError) -> DiskBatchOverlay<E> {
        let (snapshot, batches) = try queued.withLock { q throws(StoreError) in (try openSnapshot(), q.batches) }
        return DiskBatchOverlay(store: self, snapshot: snapshot,
                                inFlight: batches.isEmpty ? nil : DiskInFlightWrites(batches), capacity: capacity)
    }

    /// The records that write `entities`, each merged over what is stored, and the stored entities. The
    /// snapshot it reads is released when it returns, before the batch is queued: a live snapshot makes the
    /// writer copy every B-tree node the batch touches.
    private func prepareSet(_ entities: [E]) throws(StoreError) -> ([(key: [UInt8], entity: E?)], [E]) {
        // Each entity merges with what the batch's earlier entities left (see `DiskBatchOverlay`).
        var overlay = try openOverlay(capacity: entities.count)
        var stored: [E] = []
        stored.reserveCapacity(entities.count)
        for entity in entities {
            let writtenKey = entity.identifier.storageKey
            let existing = try overlay.locate(entity.identifier, storageKey: writtenKey)
            let merged = EntityMerging.merge(stored: existing?.entity, written: entity)
            // With nothing stored, the merge is the written entity itself, under the key computed above.
            let key = existing == nil ? writtenKey : merged.identifier.storageKey
            if let old = existing?.key, old != key { overlay.write(nil, forKey: old) }
            // The same entity may still be filed under its local value alone: the write folds it in.
            if key.first == 0x72, let local = merged.identifier.localValue {
                let localKey = [0x6C] + Array(local.utf8)
                if localKey != existing?.key, overlay.contains(localKey) { overlay.write(nil, forKey: localKey) }
            }
            overlay.write(merged, forKey: key)
            stored.append(merged)
        }
        return (overlay.writes, stored)
    }

    /// Queues the batch of `writes` on the engine, first appended to the queued batches (so that the engine's
    /// retiring it, on the writer thread, always comes after; a batch the engine refuses is retired at once, under
    /// the write lock, before any other write sees it). - Throws: ``StoreError/engine(_:)`` when the engine
    /// refuses the batch (its limits, closed, failed); nothing is queued then.
    private func queue(_ writes: [(key: [UInt8], entity: E?)], stored: [E], generation: inout UInt64,
                       whenDone: WhenDone?) throws(StoreError) -> StoreWrite<E> {
        let batch = try Self.batch(of: writes, in: keyspace)
        guard !batch.isEmpty else {
            whenDone?(true, stored)
            return StoreWrite(stored: stored)
        }
        generation += 1
        let batchGeneration = generation
        let records = DiskQueuedRecords(writes)
        queued.withLock { $0.append(records, count: writes.count, generation: batchGeneration) }
        do {
            let ticket = try engine.enqueue(batch) { [self] result in
                queued.withLock { $0.retire(generation: batchGeneration) }
                if let whenDone {
                    if case .success = result { whenDone(true, stored) } else { whenDone(false, stored) }
                }
            }
            return StoreWrite(stored: stored, ticket: ticket)
        } catch {
            queued.withLock { $0.retire(generation: batchGeneration) }
            throw .wrap(error)
        }
    }

    /// The engine batch of an overlay's writes: each entity encoded with its index terms, each nil a delete.
    private static func batch(of writes: [(key: [UInt8], entity: E?)],
                              in keyspace: String) throws(StoreError) -> WriteBatch {
        var batch = WriteBatch()
        let indexNames = E.IndexName.allCases
        for (key, write) in writes {
            if let entity = write {
                let bytes: [UInt8]
                do { bytes = try entity.encodeRecord() } catch { throw .unencodableEntity("\(error)") }
                batch.put(bytes, forKey: key, in: keyspace, indexTerms: terms(of: entity, indexNames: indexNames))
            } else {
                batch.delete(key, in: keyspace)
            }
        }
        return batch
    }

    public func remove(_ identifiers: [E.Identifier]) async throws(StoreError) {
        _ = try await beginRemoveNow(identifiers).finish()
    }

    /// Prepares and queues the removal of `identifiers` (see ``Store/beginRemove(_:)``) without waiting for it to
    /// be durable.
    public func beginRemove(_ identifiers: [E.Identifier]) async throws(StoreError) -> StoreWrite<E> {
        try beginRemoveNow(identifiers)
    }

    /// Synchronous ``beginRemove(_:)``: deletes every record equal to each identifier (also a copy still filed
    /// under its local value alone), as the writes before it leave them.
    public func beginRemoveNow(_ identifiers: [E.Identifier]) throws(StoreError) -> StoreWrite<E> {
        try beginRemoveNow(identifiers, whenDone: nil)
    }

    /// ``beginRemoveNow(_:)`` with a `whenDone` as ``beginSetNow(_:whenDone:)``'s.
    func beginRemoveNow(_ identifiers: [E.Identifier], whenDone: WhenDone?) throws(StoreError) -> StoreWrite<E> {
        try writeLock.withLock { generation throws(StoreError) -> StoreWrite<E> in
            try queue(try prepareRemove(identifiers), stored: [], generation: &generation, whenDone: whenDone)
        }
    }

    /// The deletes that remove `identifiers`, their snapshot released on return (as ``prepareSet(_:)``'s).
    private func prepareRemove(_ identifiers: [E.Identifier]) throws(StoreError) -> [(key: [UInt8], entity: E?)] {
        var overlay = try openOverlay(capacity: identifiers.count)
        for identifier in identifiers {
            for key in overlay.locateKeys(identifier) { overlay.write(nil, forKey: key) }
        }
        return overlay.writes
    }

    public func removeAll(_ query: Query<E>) async throws(StoreError) -> [E.Identifier] {
        let ids = try await search(query).entities.map(\.identifier)
        try await remove(ids)
        return ids
    }

    /// The index terms stored with an entity: every index name's terms and its local identifier.
    /// `indexNames` is `E.IndexName.allCases` (a new array per call, so a batch asks once).
    static func terms(of entity: E, indexNames: E.IndexName.AllCases = E.IndexName.allCases) -> [IndexTerm] {
        var terms: [IndexTerm] = []
        terms.reserveCapacity(indexNames.count + 1)
        for name in indexNames {
            let indexValue = entity.entityIndexValue(for: name)
            if case .array = indexValue {} else {
                // A scalar (or `.none`, whose term is `null`) has exactly one term: no arrays to build.
                terms.append(IndexTerm(index: name.rawValue, value: indexValue.indexValue))
                continue
            }
            let values = indexValue.indexTerms
            for (i, value) in values.enumerated() where i == 0 || !values[..<i].contains(value) {
                terms.append(IndexTerm(index: name.rawValue, value: value))
            }
        }
        if let local = entity.identifier.localValue { terms.append(IndexTerm(index: localIndex, value: .string(local))) }
        return terms
    }
}
