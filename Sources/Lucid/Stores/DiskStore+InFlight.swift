import LucidEngine

/// The write batches a ``DiskStore`` has queued on its engine that the engine has not published yet, oldest
/// first: what the store will hold once they commit, beyond what a snapshot shows.
///
/// A write prepares its batch while the ones before it are still being written and synced, so that concurrent
/// durable writes share the engine's syncs (group commit). It must then merge with those earlier writes, which
/// no snapshot shows until they are durable: ``DiskBatchOverlay`` looks at their records (a ``DiskInFlightWrites``)
/// between its own batch and the snapshot. A batch is appended before it is queued on the engine and retired once the
/// engine has published it (or failed it: every later batch then fails as well, so none is left merged over a
/// write that never happened).
///
/// Queuing and retiring a batch cost O(1); only a write that finds batches queued builds their records' view,
/// O(queued records), so a lone writer pays nothing for it.
///
/// Not generic, so that queuing and retiring cost no type lookups in the unspecialized code a generic store runs
/// (each batch's records sit in a ``DiskQueuedRecords`` box, opened only to build a view).
struct DiskQueuedBatches: Sendable {
    /// One queued batch: its generation (the store's running count of batches queued, this one included) and records.
    struct Batch: Sendable {
        let generation: UInt64
        /// How many records the batch holds.
        let count: Int
        /// Its records: a ``DiskQueuedRecords`` of the store's entity type.
        let records: AnyObject & Sendable
    }

    /// The queued batches, oldest first.
    private(set) var batches: [Batch] = []
    /// How many records the queued batches hold together (a key two of them write counts twice).
    private(set) var recordCount = 0

    /// Appends a batch about to be queued on the engine. O(1).
    mutating func append(_ records: AnyObject & Sendable, count: Int, generation: UInt64) {
        batches.append(Batch(generation: generation, count: count, records: records))
        recordCount += count
    }

    /// Removes the batch of `generation`: published or failed. O(1) for the oldest (the usual case: the engine
    /// publishes in queue order).
    mutating func retire(generation: UInt64) {
        var i = 0
        while i < batches.count && batches[i].generation != generation { i += 1 }
        guard i < batches.count else { return }
        recordCount -= batches[i].count
        batches.remove(at: i)
    }
}

/// A queued batch's records in the order it wrote their keys (nil: a delete).
final class DiskQueuedRecords<E: LocalEntity>: Sendable {
    let writes: [(key: [UInt8], entity: E?)]
    init(_ writes: [(key: [UInt8], entity: E?)]) { self.writes = writes }
}

/// The records of a list of queued batches (``DiskQueuedBatches``), the latest write of each key winning, with
/// the keys of the live ones that carry a local value: the layer ``DiskBatchOverlay`` reads between its own
/// batch and the snapshot. An immutable value built for one write.
struct DiskInFlightWrites<E: LocalEntity> {
    /// What the queued batches left under each key they wrote (nil: a delete).
    private var records: [ByteKey: E?] = [:]
    /// The keys of the live records that carry a local value, by that value (as ``DiskBatchOverlay`` keeps them).
    private var localKeys: [ByteString: [[UInt8]]] = [:]

    /// The view of `batches` (oldest first), whose records are ``DiskQueuedRecords`` of `E`. O(their records).
    init(_ batches: [DiskQueuedBatches.Batch]) {
        for batch in batches {
            for (key, entity) in unsafeDowncast(batch.records, to: DiskQueuedRecords<E>.self).writes {
                let byteKey = ByteKey(key)
                if case let old?? = records[byteKey], let local = Self.localValue(old) { forget(local, key) }
                records[byteKey] = .some(entity)
                if let entity, let local = Self.localValue(entity) { localKeys[local, default: []].append(key) }
            }
        }
    }

    /// Whether a queued batch wrote `key`; if so, what it left there (nil: deleted). O(1).
    func record(_ key: [UInt8]) -> (written: Bool, entity: E?) {
        guard let found = records[ByteKey(key)] else { return (false, nil) }
        return (true, found)
    }

    /// The keys of queued live records carrying the local value `local`.
    func keys(carrying local: ByteString) -> [[UInt8]] { localKeys[local] ?? [] }

    private static func localValue(_ entity: E) -> ByteString? { entity.identifier.localValue.map(ByteString.init) }

    private mutating func forget(_ local: ByteString, _ key: [UInt8]) {
        guard var keys = localKeys[local], let i = keys.firstIndex(of: key) else { return }
        keys.remove(at: i)
        localKeys[local] = keys.isEmpty ? nil : keys
    }
}
