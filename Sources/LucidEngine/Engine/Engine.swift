#if canImport(Glibc)
import Glibc
#endif

/// An open LucidEngine store: keyspaces of ordered keys and values in an append-only log of checksummed,
/// LZ4-compressed pages, indexed by an in-memory B-tree.
///
/// - Thread-safe: any number of concurrent readers; one writer thread that groups concurrent commits so that many
///   waiting batches share one write and one `fdatasync`.
/// - Durable: with the default ``EngineOptions/SyncMode/always`` a commit returns only after its data is synced;
///   after any crash the store reopens with every acknowledged batch and no partial one.
/// - One open per store: a second ``open(at:options:)`` of the same directory, from this process or another,
///   throws ``LucidError/Code/locked``.
///
/// ```swift
/// let engine = try Engine.open(at: "/var/lib/app/store")
/// var batch = WriteBatch()
/// batch.put(Array("hello".utf8), forKey: Array("k1".utf8), in: "greetings")
/// try await engine.commit(batch)
/// let value = try engine.get(Array("k1".utf8), in: "greetings")
/// try engine.close()
/// ```
public final class Engine: Sendable {
    let core: EngineCore

    init(core: EngineCore) { self.core = core }

    deinit { try? core.close() }

    /// Opens (or, with ``EngineOptions/createIfMissing``, creates) the store in directory `path`, running crash
    /// recovery. - Complexity: reads every segment once (O(store size)).
    /// - Throws: ``LucidError/Code/locked`` when open elsewhere; ``LucidError/Code/corruption`` (with file and
    ///   offset) when acknowledged data is damaged; ``LucidError/Code/unsupportedFormatVersion``;
    ///   ``LucidError/Code/notFound`` when there is no store and creation is off; ``LucidError/Code/io``.
    public static func open(at path: String, options: EngineOptions = EngineOptions()) throws -> Engine {
        try options.validate()
        if case .salvage(let destination) = options.recoveryMode {
            _ = try salvage(from: path, to: destination, options: options)
            var reopened = options
            reopened.recoveryMode = .pointInTime
            return try open(at: destination, options: reopened)
        }
        let fileSystem = options.fileSystem
        if !fileSystem.directoryExists(at: path) {
            guard options.createIfMissing else {
                throw LucidError(code: .notFound, message: "no such store directory", file: path)
            }
            try fileSystem.createDirectory(at: path)
        }
        let lock = try fileSystem.lockFile(at: path + "/" + Format.lockFileName, pid: getpid())
        do {
            let recordBytes = options.recordCacheBytes
            let cache = PageCache(capacityBytes: options.pageCacheBytes - recordBytes, readAhead: options.pageSize,
                                  recordBytes: recordBytes)
            var recovery = Recovery(path: path, options: options, cache: cache)
            let (state, writer) = try recovery.run()
            let core = EngineCore(path: path, options: options, lock: lock, state: state, writer: writer,
                                  report: recovery.report, cache: cache)
            core.start()
            return Engine(core: core)
        } catch {
            lock.unlock()
            throw error
        }
    }

    /// The store's directory.
    public var path: String { core.path }

    /// What recovery did when this engine was opened.
    public var recoveryReport: RecoveryReport { core.recoveryReport }

    // MARK: Reads

    /// The value under `key` in `keyspace`, or nil. - Complexity: O(1) expected for a key of at most 16 bytes (the
    /// point index, ``EngineOptions/pointIndex``), else O(log n); plus one verified page read on a page-cache miss.
    /// A miss that does not cache the page (see the page cache in the README) checks the checksum of the whole
    /// stored page but decodes it only as far as the value ends; ``verify()`` decodes every page whole.
    /// - Throws: ``LucidError/Code/corruption`` if the page fails its checksum; closed; io.
    public func get(_ key: [UInt8], in keyspace: String) throws -> [UInt8]? {
        try core.get(key, in: keyspace)
    }

    /// The values under `keys` in `keyspace`, in the order of `keys` (nil where a key has none), from one
    /// snapshot: ``get(_:in:)`` for many keys at once, faster for keys scattered over a large store (see
    /// ``Snapshot/values(forKeys:in:)``). - Complexity: O(m) expected for keys of at most 16 bytes (the point index
    /// answers a snapshot taken now, unless a commit lands meanwhile), else O(m log n); plus one page read per key
    /// whose page is not cached. - Throws: as ``get(_:in:)``.
    public func values(forKeys keys: [[UInt8]], in keyspace: String) throws -> [[UInt8]?] {
        try snapshot().values(forKeys: keys, in: keyspace)
    }

    /// Whether ``close()`` has been called (reads and writes then throw ``LucidError/Code/closed``). - Complexity: O(1).
    public var isClosed: Bool { core.closedFlag.isSet }

    /// A consistent view as of the last commit. - Complexity: O(1).
    public func snapshot() -> Snapshot {
        core.state.read { Snapshot(core: core, state: copy $0, pointEpoch: core.points.epoch.load(ordering: .relaxed)) }
    }

    /// The records of `range`, in key order (descending when `reverse`), at most `limit`; reads a snapshot, so
    /// concurrent commits are either wholly visible or not at all. - Complexity: O(log n + k), one page read
    /// per page the k records lie on (they are read in storage order, see ``Snapshot/recordTable(in:range:reverse:limit:)``).
    public func scan(in keyspace: String, range: KeyRange = .all, reverse: Bool = false,
                     limit: Int? = nil) throws -> [KeyValue] {
        try snapshot().scan(in: keyspace, range: range, reverse: reverse, limit: limit)
    }

    /// The records of `range` read whole into one ``RecordTable`` (keys and values in two buffers), from a
    /// snapshot: see ``Snapshot/recordTable(in:range:reverse:limit:)``.
    public func recordTable(in keyspace: String, range: KeyRange = .all, reverse: Bool = false,
                            limit: Int? = nil) throws -> RecordTable {
        try snapshot().recordTable(in: keyspace, range: range, reverse: reverse, limit: limit)
    }

    /// Number of keys in `keyspace`. - Complexity: O(1).
    public func count(in keyspace: String) -> Int {
        core.state.read { $0.keyspace(keyspace)?.count ?? 0 }
    }

    /// Names of the keyspaces holding at least one key, sorted.
    public func keyspaces() -> [String] { snapshot().keyspaces() }

    // MARK: Writes

    /// Commits `batch` atomically and returns its sequence number once it is durable (per the sync mode).
    /// Concurrent callers share writes and syncs (group commit).
    /// - Throws: ``LucidError/Code/invalidArgument`` (limits), ``LucidError/Code/failedState`` after an earlier
    ///   write failure, ``LucidError/Code/io`` when this write or sync fails (then nothing is acknowledged and
    ///   the engine refuses writes until reopened), closed.
    @discardableResult
    public func commit(_ batch: WriteBatch) async throws -> UInt64 {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UInt64, any Error>) in
            core.submit(batch) { result in continuation.resume(with: result.mapError { $0 as any Error }) }
        }
    }

    /// ``commit(_:)`` for synchronous callers: blocks the calling thread until the batch is durable. Do not call
    /// from the Swift concurrency pool; use ``commit(_:)`` there.
    @discardableResult
    public func commitAndWait(_ batch: WriteBatch) throws -> UInt64 {
        let box = ResultBox<UInt64>()
        // When the writer is idle, the batch is written on this thread (no hand-off to the writer and back).
        core.submit(batch, lead: true) { box.fulfill($0) }
        return try box.wait().get()
    }

    /// Queues `batch` for commit and returns without waiting for it to be written: the caller builds its next
    /// batch while the writer thread writes this one (a bulk load's pipeline). The returned ticket completes once
    /// the batch is committed (durable per the sync mode), or failed. Batches commit in submission order, after
    /// those already queued, and are grouped with them (group commit).
    ///
    /// Blocks while the queue is not empty and the batches queued and not yet being written would hold more than
    /// ``EngineOptions/maxQueuedCommitBytes`` with this one (back-pressure: a producer faster than the writer
    /// waits instead of filling memory; submitters held are admitted in arrival order), so, like
    /// ``commitAndWait(_:)``, do not call it from the Swift concurrency pool. Costs the batch's validation,
    /// O(operations), on the calling thread.
    /// - Throws: ``LucidError/Code/invalidArgument`` (limits, as ``commit(_:)``), ``LucidError/Code/failedState``
    ///   when an earlier write failed before the call, ``LucidError/Code/closed`` (also when the engine closes
    ///   while this call waits); nothing is queued then. Failures of the write itself come through the ticket,
    ///   as does a failure that happens while this call waits for room (the batch is queued, and its ticket
    ///   fails with `failedState`).
    public func submit(_ batch: WriteBatch) throws -> CommitTicket {
        let ticket = CommitTicket()
        try core.enqueue(batch, limit: core.options.maxQueuedCommitBytes) { [box = ticket.box] in box.fulfill($0) }
        return ticket
    }

    /// Queues `batch` for commit at once, without back-pressure: unlike ``submit(_:)`` it never blocks, so async
    /// code may call it, and the caller bounds what it queues (the data layer queues one batch per waiting
    /// write). Batches commit in the order they are queued, grouped with the others (group commit).
    ///
    /// `completion`, if given, runs on the writer thread when the batch has been committed and published (or has
    /// failed), before the ticket completes: keep it short, and do not commit from it. It sees the batch's
    /// sequence, or the error the ticket throws. Costs the batch's validation, O(operations), on the calling
    /// thread.
    /// - Throws: as ``submit(_:)`` (nothing is queued and `completion` never runs then).
    public func enqueue(_ batch: WriteBatch,
                        completion: (@Sendable (Result<UInt64, LucidError>) -> Void)? = nil) throws -> CommitTicket {
        let ticket = CommitTicket()
        try core.enqueue(batch) { [box = ticket.box] result in
            completion?(result)
            box.fulfill(result)
        }
        return ticket
    }

    /// Stores one value (a batch of one put).
    @discardableResult
    public func put(_ value: [UInt8], forKey key: [UInt8], in keyspace: String,
                    indexTerms: [IndexTerm] = []) async throws -> UInt64 {
        var batch = WriteBatch()
        batch.put(value, forKey: key, in: keyspace, indexTerms: indexTerms)
        return try await commit(batch)
    }

    /// Removes one key (a batch of one delete).
    @discardableResult
    public func delete(_ key: [UInt8], in keyspace: String) async throws -> UInt64 {
        var batch = WriteBatch()
        batch.delete(key, in: keyspace)
        return try await commit(batch)
    }

    /// Makes every acknowledged commit durable now (useful with the grouped and none sync modes).
    public func sync() throws {
        let box = ResultBox<UInt64>()
        core.submit(WriteBatch(), forceSync: true) { box.fulfill($0) }
        _ = try box.wait().get()
    }

    // MARK: Lifecycle

    /// Waits for queued commits, syncs, closes files and releases the lock. Further calls throw
    /// ``LucidError/Code/closed``. Idempotent.
    public func close() throws { try core.close() }

    /// Counters: sequence, segments, cache hits, commit groups, syncs, failed automatic compactions, and the segments
    /// that snapshots pin (logging the warnings of those pinned past ``EngineOptions/pinnedSegmentWarningAge``).
    /// O(segments + pinned segments).
    public var statistics: EngineStatistics {
        let (s, points) = core.state.read { (copy $0, core.points.statistics) }
        let total = s.segments.keys.reduce(UInt64(0)) { $0 + s.visibleLength(of: $1) }
        let compactionFailures = core.autoCompaction.failureRecord
        let now = ContinuousClock.now
        core.warnAboutPinnedSegments(now: now)
        let pinned = core.pinned.summary(now: now)
        return EngineStatistics(
            lastSequence: s.lastSequence, segments: s.segments.count, totalBytes: total, liveKeys: s.liveKeys,
            cacheHits: core.cache.hits, cacheMisses: core.cache.misses,
            recordCacheHits: core.cache.records?.hits ?? 0, recordCacheMisses: core.cache.records?.misses ?? 0,
            groupsWritten: core.groupsWritten.load(ordering: .relaxed),
            syncs: core.syncCount.load(ordering: .relaxed),
            batchesCommitted: core.batchesCommitted.load(ordering: .relaxed),
            automaticCompactionFailures: compactionFailures.count,
            lastAutomaticCompactionError: compactionFailures.last,
            pinnedSegments: pinned.count, pinnedSegmentBytes: pinned.bytes, oldestPinnedSegmentAge: pinned.oldestAge,
            pointIndexKeys: points.keys, pointIndexBytes: points.bytes)
    }
}
