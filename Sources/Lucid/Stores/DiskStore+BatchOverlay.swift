import LucidEngine

/// The records a ``DiskStore`` write batch is building, over the snapshot it started from: what the store will
/// hold once the batch commits, as far as the batch's own entities can see.
///
/// A `set` of several entities must leave exactly what setting them one at a time leaves. Each entity therefore
/// looks for its stored record in this overlay, never in the snapshot alone: a record the batch already
/// replaced, moved or deleted is stale in the snapshot, and merging with it would resurrect or delete the wrong
/// thing (a plain entity rewritten by its remote half, then written by its local half in the same batch, must
/// not match the record's old local half).
///
/// - Complexity: each lookup is O(1) dictionary probes plus at most one snapshot read and one `__lid` walk over
///   the records carrying a local value (normally one).
struct DiskBatchOverlay<E: LocalEntity> {
    private let store: DiskStore<E>
    private let snapshot: Snapshot
    /// The batch's records in the order their keys were first written (nil: a delete).
    private(set) var writes: [(key: [UInt8], entity: E?)] = []
    /// Where each key the batch wrote is in `writes`.
    private var position: [ByteKey: Int] = [:]
    /// The keys of the batch's live records that carry a local value, by that value (compared by its bytes, as
    /// everywhere in identifiers: `"e\u{301}"` and `"\u{e9}"` are two ids).
    private var localKeys: [ByteString: [[UInt8]]] = [:]

    init(store: DiskStore<E>, snapshot: Snapshot, capacity: Int) {
        self.store = store
        self.snapshot = snapshot
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
        return snapshot.contains(key, in: store.keyspace)
    }

    /// The record `identifier` matches now, by the rule of ``DiskStore/locateKey(_:storageKey:in:)``:
    /// the one under its storage key `storageKey`, else (for an id with a local value) one carrying that local
    /// value, unless it has another remote id. The batch's own records come first; the snapshot's only under
    /// keys the batch has not touched.
    func locate(_ identifier: E.Identifier, storageKey: [UInt8]) throws(StoreError) -> (key: [UInt8], entity: E)? {
        if let i = position[ByteKey(storageKey)] {
            if let entity = writes[i].entity { return (storageKey, entity) }
        } else if let entity = try store.fetch(storageKey, in: snapshot) {
            return (storageKey, entity)
        }
        guard let local = Self.localKey(identifier) else { return nil }
        for key in localKeys[local] ?? [] where DiskStore<E>.mayMatchByLocal(key, storageKey: storageKey) {
            if let i = position[ByteKey(key)], let entity = writes[i].entity { return (key, entity) }
        }
        guard let key = store.localRecordKey(identifier, storageKey: storageKey, in: snapshot,
                                             skipping: { position[ByteKey($0)] != nil }) else { return nil }
        return try store.fetch(key, in: snapshot).map { (key, $0) }
    }
}
