import Foundation
import Logging
import Synchronization

/// The engine's shared machinery. ``Engine`` is the public face; the writer thread holds this object (not the
/// `Engine`), so dropping the last `Engine` reference can close the store.
final class EngineCore: Sendable {
    let path: String
    let options: EngineOptions
    let fileSystem: any FileSystem
    let cache: PageCache
    let manifestStore: ManifestStore
    /// What readers see. The writer mutates the trees in place under the exclusive lock; a snapshot copies the
    /// state (O(1)), after which the writer's next mutations copy only the nodes they touch.
    let state: ReadWriteLock<EngineState>
    let writer: WriterState
    let queue = CommitQueue()
    /// Written groups that may wait to be freed on another thread at once (see `EngineCore.release(_:)`).
    let releaseSlots = DispatchSemaphore(value: 2)
    let failure = Mutex<LucidError?>(nil)
    let closedFlag = AtomicFlag()
    let lock: any FileLock
    let recoveryReport: RecoveryReport
    let writerStopped = ResultBox<Bool>()
    let groupsWritten = Atomic<UInt64>(0)
    let syncCount = Atomic<UInt64>(0)
    let batchesCommitted = Atomic<UInt64>(0)
    /// The next unused segment id. Roll and compaction both take ids from here; every manifest written records
    /// the current value, so no id is ever reused.
    private let nextSegmentIdValue: Mutex<UInt64>
    /// Held by a running compaction (one at a time).
    let compactionLock = Mutex<Void>(())
    let autoCompaction = AutoCompactionState()
    /// Segments compaction removed that snapshots still hold (``EngineStatistics/pinnedSegments``).
    let pinned = PinnedSegments()
    /// The published state's hashed point lookups (``EngineOptions/pointIndex``): read under `state`'s read lock,
    /// changed with the state under its write lock.
    let points: PointIndex

    init(path: String, options: EngineOptions, lock: any FileLock, state: EngineState, writer: WriterState,
         report: RecoveryReport, cache: PageCache) {
        self.path = path
        self.options = options
        self.fileSystem = options.fileSystem
        self.cache = cache
        self.manifestStore = ManifestStore(directory: path, fileSystem: options.fileSystem)
        self.state = ReadWriteLock(state)
        self.writer = writer
        self.lock = lock
        self.recoveryReport = report
        self.nextSegmentIdValue = Mutex(writer.manifest.nextSegmentId)
        points = PointIndex(enabled: options.pointIndex)
    }

    /// Takes a new segment id.
    func allocateSegmentId() -> UInt64 {
        nextSegmentIdValue.withLock { next in
            defer { next += 1 }
            return next
        }
    }

    /// The next id that ``allocateSegmentId()`` would return (for manifests).
    func nextSegmentId() -> UInt64 { nextSegmentIdValue.withLock { $0 } }

    /// Starts the writer thread, and the point index's build from the state open published. Called once by open.
    func start() {
        points.startBuilding(from: currentState()) { [self] built in state.write { _ in points.install(built: built) } }
        let thread = Thread { [self] in
            runWriter()
            writerStopped.fulfill(.success(true))
        }
        thread.name = "lucid.writer"
        thread.start()
    }

    @inline(__always) func checkOpen() throws {
        if closedFlag.isSet { throw LucidError.closed() }
    }

    // MARK: Reads

    /// The value stored under `key`, reading its page through the cache.
    func get(_ key: [UInt8], in keyspace: String) throws -> [UInt8]? {
        try checkOpen()
        let found: (RecordLocation, SegmentFile?)? = state.withReadAccess { s in
            guard let location = location(forKey: key, in: keyspace, of: s) else { return nil }
            return (location, s.pointee.segments[UInt64(location.segment)])
        }
        guard let (location, file) = found else { return nil }
        return try readValue(location, file: file)
    }

    /// The location of `key` in `keyspace` in the published state `s`, whose lock the caller holds: the point
    /// index's answer when it has one, else the primary tree's. O(1) expected for a key of at most 16 bytes (one
    /// hashed probe), O(log n) otherwise. Debug builds check the index's answer against the tree.
    @inline(__always)
    func location(forKey key: [UInt8], in keyspace: String, of s: UnsafePointer<EngineState>) -> RecordLocation? {
        key.withUnsafeBytes { points.location(forKey: $0, in: keyspace) }
            .location(orTree: { s.pointee.location(forKey: key, in: keyspace) }, key: key, keyspace: keyspace)
    }

    /// ``Engine/lookUp(_:in:meanwhile:)`` once the engine is known open.
    func lookUp(_ key: [UInt8], in keyspace: String, meanwhile: (_ sequence: UInt64) -> Bool) -> RecordLookup? {
        state.withReadAccess { s in
            let pending = key.withUnsafeBytes { points.beginLocation(forKey: $0, in: keyspace) }
            guard meanwhile(s.pointee.lastSequence) else { return nil }
            let location = points.location(of: pending)
                .location(orTree: { s.pointee.location(forKey: key, in: keyspace) }, key: key, keyspace: keyspace)
            return recordLookup(location, in: s)
        }
    }

    /// The ``RecordLookup`` of `location` (nil: the key has no record) in the published state `s`, whose read lock
    /// the caller holds: its sequence, the handle, and the segment that holds the value. O(1).
    @inline(__always)
    func recordLookup(_ location: RecordLocation?, in s: UnsafePointer<EngineState>) -> RecordLookup {
        guard let location else { return RecordLookup(sequence: s.pointee.lastSequence, handle: nil, file: nil) }
        return RecordLookup(sequence: s.pointee.lastSequence,
                            handle: RecordHandle(location: location, engine: ObjectIdentifier(self)),
                            file: s.pointee.segments[UInt64(location.segment)])
    }

    /// `body`'s answer from the point index, under a hold of the state's read lock, when the index has not changed
    /// since it had `epoch` (``PointIndex/epoch``, read with a snapshot's state): its tables then hold exactly that
    /// snapshot's keys of at most 16 bytes. Nil when it has changed since, or is off. O(1) plus `body`; a change
    /// seen before taking the lock (the epoch only grows) is answered without it.
    @inline(__always)
    func withPointIndex<R>(asOf epoch: UInt64, _ body: (PointIndex) -> R) -> R? {
        guard points.isEnabled, points.epoch.load(ordering: .relaxed) == epoch else { return nil }
        return state.read { _ in points.epoch.load(ordering: .relaxed) == epoch ? body(points) : nil }
    }

    /// Reads a value at a location, verifying its page on a cache miss.
    func readValue(_ location: RecordLocation, file: SegmentFile?, lookingUpRecord: Bool = true) throws -> [UInt8] {
        try PageFetch.value(at: location, file: file, cache: cache, storePath: path, lookingUpRecord: lookingUpRecord)
    }

    /// An O(1) copy of the current state.
    func currentState() -> EngineState { state.read { copy $0 } }

    // MARK: Writes

    /// Queues a batch; `completion` runs on the writer thread once the batch is durable (or failed). With
    /// `lead` (a caller that blocks until then anyway), the batch is written on the calling thread instead when
    /// the writer is idle and nothing is queued, and `completion` has run when this returns.
    func submit(_ batch: WriteBatch, forceSync: Bool = false, lead: Bool = false,
                completion: @escaping @Sendable (Result<UInt64, LucidError>) -> Void) {
        do {
            try enqueue(batch, forceSync: forceSync, lead: lead, completion: completion)
        } catch {
            completion(.failure(error))
        }
    }

    /// ``submit(_:forceSync:lead:completion:)`` that throws what fails before the batch is queued (closed,
    /// invalid batch, failed state) instead of passing it to `completion`. With a `limit`, first waits for room
    /// in the queue, in arrival order (``CommitQueue/enqueue(_:limit:)``).
    func enqueue(_ batch: WriteBatch, forceSync: Bool = false, lead: Bool = false, limit: Int? = nil,
                 completion: @escaping @Sendable (Result<UInt64, LucidError>) -> Void) throws(LucidError) {
        do {
            try checkOpen()
            try batch.validate()
            if let failed = failure.withLock({ $0 }) { throw Self.failedStateError(failed) }
            let commit = PendingCommit(batch: batch, forceSync: forceSync, completion: completion)
            if lead, writeLeading(commit) { return }
            try queue.enqueue(commit, limit: limit)
        } catch let error as LucidError {
            throw error
        } catch {
            throw LucidError(code: .io, message: "\(error)")
        }
    }

    static func failedStateError(_ cause: LucidError) -> LucidError {
        LucidError(code: .failedState,
                   message: "an earlier write failed (\(cause)); reopen the store to continue writing",
                   file: cause.file, offset: cause.offset, errno: cause.errno)
    }

    // MARK: Checkpoints

    /// Writes a checkpoint of the published state at the writer's position. Called on the writer thread (or by
    /// close after it stopped) after a sync, so it covers durable data only.
    func writeCheckpoint() throws {
        let s = currentState()
        // Every segment of the manifest, in log order (the active one, covered up to the writer's position, is last).
        let segments = writer.manifest.segments.compactMap { entry in
            s.segments[entry.id].map {
                CheckpointHeader.SegmentIdentity(id: $0.id, salt: $0.header.salt, firstLSN: $0.header.firstLSN)
            }
        }
        let header = CheckpointHeader(coveredSegment: writer.active.id, coveredOffset: writer.activeEnd,
                                      nextLSN: writer.nextLSN, lastSequence: writer.lastSequence, segments: segments)
        let size = try CheckpointWriter(directory: path, fileSystem: fileSystem).write(header: header, keyspaces: s.keyspaces)
        writer.checkpointSequence = writer.lastSequence
        writer.bytesSinceCheckpoint = 0
        writer.checkpointBytes = size
        options.logger.debug("wrote checkpoint", metadata: ["bytes": "\(size)", "sequence": "\(writer.lastSequence)"])
    }

    // MARK: Close

    /// Drains queued commits, syncs, releases files and the lock. Idempotent.
    func close() throws {
        guard closedFlag.setOnce() else { return }
        queue.close()
        _ = writerStopped.wait()
        // A running compaction sees the closed flag (or the closed queue) and stops; wait until it has.
        compactionLock.withLock { _ in }
        var closeError: LucidError?
        if failure.withLock({ $0 }) == nil {
            do {
                // A closed store ends at its last group. (The cut is made durable by the sync when there is
                // unsynced data; otherwise a crash may bring the filler back, which recovery reads as the end.)
                // A session that wrote nothing leaves the files as they are (read-only tools rely on it).
                do {
                    if groupsWritten.load(ordering: .relaxed) > 0 { try cutFiller() }
                } catch {
                    options.logger.warning("could not cut the log's filler", metadata: ["error": "\(error)"])
                }
                if writer.hasUnsyncedData { try syncActive() }
                // A checkpoint of a cleanly closed store lets the next open skip reading the log.
                if options.checkpointOnClose && writer.lastSequence != writer.checkpointSequence {
                    do {
                        try writeCheckpoint()
                    } catch {
                        options.logger.warning("could not write a checkpoint", metadata: ["error": "\(error)"])
                    }
                }
            } catch let e as LucidError {
                closeError = e
            } catch {}
        }
        // The point index's build, if it still runs, is of no use now.
        points.cancelBuild()
        points.waitUntilBuilt()
        var retired: PointIndex.Retired = []
        state.write { s in
            s = EngineState()
            retired = points.removeAll()
        }
        retired.removeAll()
        lock.unlock()
        if let closeError { throw closeError }
    }
}

/// Fetching verified pages through the cache, for values and for the index terms stored after them.
enum PageFetch {
    /// The page holding the record at `location`: from the cache, else read, verified and (unless `caching` is
    /// false: a large read that must not flush the cache's working set) cached.
    static func page(at location: RecordLocation, file: SegmentFile?, cache: PageCache,
                     storePath: String, caching: Bool = true) throws -> PageBuffer {
        let key = PageCache.Key(location)
        if let cached = cache.page(for: key) { return cached }
        let page = try read(location, file: file, cache: cache, storePath: storePath)
        if caching { cache.insert(page, for: key) }
        return page
    }

    /// The value of the record at `location`, copied out: in place from the mapping when this process has checked
    /// its page and found it stored without whole-page compression (``checkedValue(at:in:records:)``; for records
    /// compressed one by one, from the page cache's ``PageCache/records`` first, unless `lookingUpRecord` is false:
    /// a caller that looked it up already); else from the cached page, or, on a miss, from the page read whole and
    /// cached when the cache takes it (``PageCache/afterMiss(_:)``), else from the page decoded only as far as the
    /// value ends and not cached. A page that this read checks for reads in place
    /// (``SegmentFile/readsInPlace(pageAt:)``) is never cached on a miss. Every path reads a page only once its
    /// checksum is verified, in this read or an earlier one.
    /// - Throws: ``LucidError/Code/corruption`` naming the file and page when a check fails or the value lies
    ///   outside the page; ``LucidError/Code/io`` when a read fails.
    static func value(at location: RecordLocation, file: SegmentFile?, cache: PageCache,
                      storePath: String, lookingUpRecord: Bool = true) throws -> [UInt8] {
        if let file, let value = try checkedValue(at: location, in: file,
                                                  records: lookingUpRecord ? cache.records : nil) {
            return value
        }
        let key = PageCache.Key(location)
        // A small value is copied under the shard's lock, taking no reference to the page; a large one outside it
        // (its allocation may map memory), from the page taken out of the cache.
        if location.valueLength <= Self.copyUnderLockLimit {
            if let copied = cache.withPage(for: key, { copyValue(at: location, in: $0) }) {
                guard let value = copied else { throw valueOutsidePage(location, file: file, storePath: storePath) }
                return value
            }
        } else if let cached = cache.page(for: key) {
            return try value(at: location, in: cached, file: file, storePath: storePath)
        }
        file?.prefetchPage(at: UInt64(location.pageOffset))
        // Point reads take the values of a page this read checks in place from the mapping from then on: caching it
        // whole would cost a copy (with `.lz4Records`, a decode of every record on it) that they never use.
        if file?.readsInPlace(pageAt: UInt64(location.pageOffset)) != true,
           case .cache(let admitted) = cache.afterMiss(key) {
            let page = try read(location, file: file, cache: cache, storePath: storePath)
            cache.insert(page, for: key, admitted: admitted)
            return try value(at: location, in: page, file: file, storePath: storePath)
        }
        return try read(location, file: file, cache: cache, storePath: storePath) { file, offset, bound, readAhead in
            let start = Int(location.valueOffset)
            return try file.readValue(at: offset, range: start..<(start + Int(location.valueLength)), fileEnd: bound,
                                      expectedStoredLength: readAhead)
        }
    }

    /// The value of the record at `location` copied in place from its mapped page, when this process has checked
    /// that page and found it stored without whole-page compression, or found in `records` (the page cache's
    /// ``PageCache/records``) when the page's records are compressed one by one
    /// (``SegmentFile/checkedValue(pageAt:range:records:)``); nil otherwise.
    /// O(value length), no lock but a record cache's shard lock; nil at once for a store that does not read pages
    /// in place.
    @inline(__always)
    static func checkedValue(at location: RecordLocation, in file: SegmentFile,
                             records: RecordCache?) throws -> [UInt8]? {
        let start = Int(location.valueOffset)
        return try file.checkedValue(pageAt: UInt64(location.pageOffset),
                                     range: start..<(start + Int(location.valueLength)), records: records)
    }

    /// The verified page holding the record at `location`, read from its file (not the cache).
    private static func read(_ location: RecordLocation, file: SegmentFile?, cache: PageCache,
                             storePath: String) throws -> PageBuffer {
        try read(location, file: file, cache: cache, storePath: storePath) { file, offset, bound, readAhead in
            try file.readPage(at: offset, fileEnd: bound, expectedStoredLength: readAhead)
        }
    }

    /// Calls `body` with the open segment file of `location`, its page's offset, the file end that bounds a page
    /// there, and the read-ahead to use; teaches the read-ahead the stored length `body` found.
    private static func read<R>(
        _ location: RecordLocation, file: SegmentFile?, cache: PageCache, storePath: String,
        _ body: (SegmentFile, UInt64, UInt64, Int) throws -> (PageHeader, R)
    ) throws -> R {
        guard let file else {
            throw LucidError.corruption("index points at segment \(location.segment), which is not open",
                                        file: storePath, offset: UInt64(location.pageOffset))
        }
        let offset = UInt64(location.pageOffset)
        let bound = offset + UInt64(Format.pageHeaderLength + LZ4.bound(Format.maxRawPageLength))
        let (header, result) = try body(file, offset, bound, cache.readAhead.readLength)
        cache.readAhead.record(storedLength: Int(header.storedLength))
        return result
    }

    /// The value of the record at `location` in its page, copied out.
    /// - Throws: ``LucidError/Code/corruption`` naming the file and page when the value lies outside the page.
    static func value(at location: RecordLocation, in page: PageBuffer, file: SegmentFile?,
                      storePath: String) throws -> [UInt8] {
        guard let value = copyValue(at: location, in: page) else {
            throw valueOutsidePage(location, file: file, storePath: storePath)
        }
        return value
    }

    /// The value of the record at `location` copied out of `page`, or nil when it lies outside the page.
    @inline(__always)
    private static func copyValue(at location: RecordLocation, in page: PageBuffer) -> [UInt8]? {
        page.copy(offset: Int(location.valueOffset), length: Int(location.valueLength))
    }

    /// The largest value a cache hit copies under the page's shard lock (``PageCache/withPage(for:_:)``).
    static let copyUnderLockLimit: UInt32 = 16 << 10

    /// Where the value of the record at `location` lies in its page (``value(at:in:file:storePath:)`` without
    /// the copy). - Throws: as ``value(at:in:file:storePath:)``.
    static func valueRange(at location: RecordLocation, in page: PageBuffer, file: SegmentFile?,
                           storePath: String) throws -> Range<Int> {
        let start = Int(location.valueOffset)
        let length = Int(location.valueLength)
        guard start <= page.bytes.count - length else {
            throw valueOutsidePage(location, file: file, storePath: storePath)
        }
        return start..<(start + length)
    }

    private static func valueOutsidePage(_ location: RecordLocation, file: SegmentFile?,
                                         storePath: String) -> LucidError {
        LucidError.corruption("value range lies outside its page", file: file?.path ?? storePath,
                              offset: UInt64(location.pageOffset))
    }

    /// The index terms of the record at `location`.
    static func terms(at location: RecordLocation, file: SegmentFile?, cache: PageCache,
                      storePath: String) throws -> [IndexTerm] {
        guard location.hasTerms else { return [] }
        return try terms(at: location, in: page(at: location, file: file, cache: cache, storePath: storePath),
                         file: file, storePath: storePath)
    }

    /// The index terms of the record at `location` in its (already read) page.
    /// - Throws: ``LucidError/Code/corruption`` when they do not decode.
    static func terms(at location: RecordLocation, in page: PageBuffer, file: SegmentFile?,
                      storePath: String) throws -> [IndexTerm] {
        guard location.hasTerms else { return [] }
        let end = Int(location.valueOffset) + Int(location.valueLength)
        guard let terms = page.bytes.withUnsafeBytes({ RecordCodec.terms(afterValueEndingAt: end, in: $0) }) else {
            throw LucidError.corruption("index terms after a value do not decode", file: file?.path ?? storePath,
                                        offset: UInt64(location.pageOffset))
        }
        return terms
    }
}
