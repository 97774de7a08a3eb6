import LucidEngine

/// The records a ``DiskStore`` write batch is building, over the store's queued writes and the snapshot it
/// started from: what the store will hold once the batch commits, as far as the batch's own entities can see.
///
/// A `set` of several entities must leave exactly what setting them one at a time leaves. Each entity therefore
/// looks for its stored record in this overlay, never in the snapshot alone: a record the batch already
/// replaced, moved or deleted is stale in the snapshot, and merging with it would resurrect or delete the wrong
/// thing (a plain entity rewritten by its remote half, then written by its local half in the same batch, must
/// not match the record's old local half). Between the batch and the snapshot come the writes queued before
/// it and not yet published (``DiskInFlightWrites``), for the same reason.
///
/// - Complexity: each lookup is O(1) dictionary probes plus at most one snapshot read and one `__lid` walk over
///   the records carrying a local value (normally one).
struct DiskBatchOverlay<E: LocalEntity> {
    private let store: DiskStore<E>
    private let snapshot: Snapshot
    /// The records of the store's writes queued before this batch and not yet in `snapshot`, if there were any.
    private let inFlight: DiskInFlightWrites<E>?
    /// Whether `inFlight` is there (tested first: in generic code each look at an optional costs a type lookup).
    private let hasInFlight: Bool
    /// The batch's records in the order their keys were first written (nil: a delete).
    private(set) var writes: [(key: [UInt8], entity: E?)] = []
    /// Where each key the batch wrote is in `writes`.
    private var position: [ByteKey: Int] = [:]
    /// The keys of the batch's live records that carry a local value, by that value (compared by its bytes, as
    /// everywhere in identifiers: `"e\u{301}"` and `"\u{e9}"` are two ids).
    private var localKeys: [ByteString: [[UInt8]]] = [:]

    init(store: DiskStore<E>, snapshot: Snapshot, inFlight: DiskInFlightWrites<E>?, capacity: Int) {
        self.store = store
        self.snapshot = snapshot
        self.hasInFlight = inFlight != nil
        self.inFlight = inFlight
        writes.reserveCapacity(capacity)
        position.reserveCapacity(capacity)
    }

    /// Writes `entity` (nil: deletes the record) under `key`.
    mutating func write(_ entity: E?, forKey key: [UInt8]) {
        if let i = position[ByteKey(key)] {
            if let local = writes[i].entity.flatMap({ Self.localKey($0.identifier) }) { forget(local, key) }
            writes[i].entity = entity
        } else {
            position[ByteKey(key)] = writes.count
            writes.append((key, entity))
        }
        if let local = entity.flatMap({ Self.localKey($0.identifier) }) { localKeys[local, default: []].append(key) }
    }

    private static func localKey(_ identifier: E.Identifier) -> ByteString? { identifier.localValue.map(ByteString.init) }

    private mutating func forget(_ local: ByteString, _ key: [UInt8]) {
        guard var keys = localKeys[local], let i = keys.firstIndex(of: key) else { return }
        keys.remove(at: i)
        localKeys[local] = keys.isEmpty ? nil : keys
    }

    /// Whether a record is under `key` now.
    func contains(_ key: [UInt8]) -> Bool {
        if let i = position[ByteKey(key)] { return writes[i].entity != nil }
        if hasInFlight, let queued = inFlight?.record(key), queued.written { return queued.entity != nil }
        return snapshot.contains(key, in: store.keyspace)
    }

    /// The entity under `key` now: the batch's, else a queued write's, else the snapshot's.
    func entity(at key: [UInt8]) throws(StoreError) -> E? {
        if let i = position[ByteKey(key)] { return writes[i].entity }
        if hasInFlight, let queued = inFlight?.record(key), queued.written { return queued.entity }
        return try store.fetch(key, in: snapshot)
    }

    /// The record `identifier` matches now, by the rule of ``DiskStore/locateKey(_:storageKey:in:)``:
    /// the one under its storage key `storageKey`, else (for an id with a local value) one carrying that local
    /// value, unless it has another remote id. The batch's own records come first, then the queued writes'; the
    /// snapshot's only under keys neither has touched.
    func locate(_ identifier: E.Identifier, storageKey: [UInt8]) throws(StoreError) -> (key: [UInt8], entity: E)? {
        if let entity = try entity(at: storageKey) { return (storageKey, entity) }
        guard let key = localRecordKey(identifier, storageKey: storageKey) else { return nil }
        return try entity(at: key).map { (key, $0) }
    }

    /// The key of a live record other than the one under `storageKey` that `identifier` matches by its local
    /// value (see ``DiskStore/localRecordKey(_:storageKey:in:skipping:)``): of all of them, in the batch, the
    /// queued writes and the snapshot, the smallest key, as the `__lid` index (in key order) gives it when the
    /// writes are made one at a time. (Two records carry the same local value when two remote ids were paired
    /// with it.)
    private func localRecordKey(_ identifier: E.Identifier, storageKey: [UInt8]) -> [UInt8]? {
        guard let local = identifier.localValue.map(ByteString.init) else { return nil }
        var best: [UInt8]?
        func consider(_ key: [UInt8]) {
            if best.map({ key.lexicographicallyPrecedes($0) }) ?? true { best = key }
        }
        for key in localKeys[local] ?? [] where DiskStore<E>.mayMatchByLocal(key, storageKey: storageKey) {
            consider(key)
        }
        if hasInFlight, let inFlight {
            for key in inFlight.keys(carrying: local)
            where position[ByteKey(key)] == nil && DiskStore<E>.mayMatchByLocal(key, storageKey: storageKey) {
                consider(key)
            }
        }
        let stored = store.localRecordKey(identifier, storageKey: storageKey, in: snapshot) { key in
            position[ByteKey(key)] != nil || (hasInFlight && inFlight?.record(key).written == true)
        }
        if let stored { consider(stored) }
        return best
    }

    /// Every record equal to `identifier` now under the identifier rule (see
    /// ``DualHashDictionary/values(matching:)``): the one under its storage key, and for an id with both halves
    /// also a record still filed under its local value alone; else the one it matches by its local value.
    func locateKeys(_ identifier: E.Identifier) -> [[UInt8]] {
        let key = identifier.storageKey
        var keys: [[UInt8]] = []
        if contains(key) { keys.append(key) }
        if key.first == 0x72, let local = identifier.localValue {
            let localKey = [0x6C] + Array(local.utf8)
            if contains(localKey) { keys.append(localKey) }
        }
        if keys.isEmpty, let found = localRecordKey(identifier, storageKey: key) { keys.append(found) }
        return keys
    }
}
