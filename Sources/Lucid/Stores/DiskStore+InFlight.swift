import LucidEngine

/// The records of the write batches a ``DiskStore`` has queued on its engine that the engine has not published
/// yet: what the store will hold once they commit, beyond what a snapshot shows.
///
/// A write prepares its batch while the ones before it are still being written and synced, so that concurrent
/// durable writes share the engine's syncs (group commit). It must then merge with those earlier writes, which
/// no snapshot shows until they are durable: ``DiskBatchOverlay`` looks here between its own batch and the
/// snapshot. A batch's records are added before it is queued and retired once the engine has published it (or
/// failed it: every later batch then fails as well, so none is left merged over a write that never happened).
///
/// Each record carries the generation of the batch that wrote it, so retiring a batch leaves a key that a later
/// queued batch rewrote. A value type: a write copies it (O(1), copy on write) together with its snapshot.
struct DiskInFlightWrites<E: LocalEntity>: Sendable {
    /// A record a queued batch wrote (nil: a delete) and that batch's generation.
    struct Record: Sendable {
        var entity: E?
        var generation: UInt64
    }

    private var records: [ByteKey: Record] = [:]
    /// The keys of the live records that carry a local value, by that value (as ``DiskBatchOverlay`` keeps them).
    private var localKeys: [ByteString: [[UInt8]]] = [:]

    /// How many records queued writes hold (one per key).
    var count: Int { records.count }

    /// The record a queued batch wrote under `key`, if any. O(1).
    func record(_ key: [UInt8]) -> Record? { records[ByteKey(key)] }

    /// The keys of queued live records carrying the local value `local`.
    func keys(carrying local: ByteString) -> [[UInt8]] { localKeys[local] ?? [] }

    /// Adds a batch's records (in the order it wrote them) under its `generation`, above what earlier queued
    /// batches wrote. O(records).
    mutating func add(_ writes: [(key: [UInt8], entity: E?)], generation: UInt64) {
        for (key, entity) in writes {
            let byteKey = ByteKey(key)
            if let old = records[byteKey]?.entity, let local = Self.localValue(old) { forget(local, key) }
            records[byteKey] = Record(entity: entity, generation: generation)
            if let entity, let local = Self.localValue(entity) { localKeys[local, default: []].append(key) }
        }
    }

    /// Removes the records of the batch of `generation` (its `writes`, as given to ``add(_:generation:)``) that no
    /// later queued batch rewrote: it is published (or failed). O(records).
    mutating func retire(_ writes: [(key: [UInt8], entity: E?)], generation: UInt64) {
        for (key, _) in writes {
            let byteKey = ByteKey(key)
            guard let found = records[byteKey], found.generation == generation else { continue }
            if let entity = found.entity, let local = Self.localValue(entity) { forget(local, key) }
            records[byteKey] = nil
        }
    }

    private static func localValue(_ entity: E) -> ByteString? { entity.identifier.localValue.map(ByteString.init) }

    private mutating func forget(_ local: ByteString, _ key: [UInt8]) {
        guard var keys = localKeys[local], let i = keys.firstIndex(of: key) else { return }
        keys.remove(at: i)
        localKeys[local] = keys.isEmpty ? nil : keys
    }
}
