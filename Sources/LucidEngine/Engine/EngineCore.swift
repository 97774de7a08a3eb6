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
    let failure = Mutex<LucidError?>(nil)
    let closedFlag = AtomicFlag()
    let lock: any FileLock
    let recoveryReport: RecoveryReport
    let writerStopped = ResultBox<Bool>()
    let groupsWritten = Atomic<UInt64>(0)
    let syncCount = Atomic<UInt64>(0)
    let batchesCommitted = Atomic<UInt64>(0)

    init(path: String, options: EngineOptions, lock: any FileLock, state: EngineState, writer: WriterState,
         report: RecoveryReport) {
        self.path = path
        self.options = options
        self.fileSystem = options.fileSystem
        self.cache = PageCache(capacityBytes: options.pageCacheBytes)
        self.manifestStore = ManifestStore(directory: path, fileSystem: options.fileSystem)
        self.state = ReadWriteLock(state)
        self.writer = writer
        self.lock = lock
        self.recoveryReport = report
    }

    /// Starts the writer thread. Called once by open.
    func start() {
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
        let found: (RecordLocation, SegmentFile?)? = state.read { s in
            guard let location = s.keyspaces[keyspace]?.value(forKey: key) else { return nil }
            return (location, s.segments[UInt64(location.segment)])
        }
        guard let (location, file) = found else { return nil }
        return try readValue(location, file: file)
    }

    /// Reads a value at a location, verifying its page on a cache miss.
    func readValue(_ location: RecordLocation, file: SegmentFile?) throws -> [UInt8] {
        let key = PageCache.Key(segment: UInt64(location.segment), offset: UInt64(location.pageOffset))
        let page: PageBuffer
        if let cached = cache.page(for: key) {
            page = cached
        } else {
            guard let file else {
                throw LucidError.corruption("index points at segment \(location.segment), which is not open",
                                            file: path, offset: UInt64(location.pageOffset))
            }
            let offset = UInt64(location.pageOffset)
            let bound = offset + UInt64(Format.pageHeaderLength + LZ4.bound(Format.maxRawPageLength))
            page = try file.readPage(at: offset, fileEnd: bound).1
            cache.insert(page, for: key)
        }
        guard let value = page.copy(offset: Int(location.valueOffset), length: Int(location.valueLength)) else {
            throw LucidError.corruption("value range lies outside its page", file: file?.path ?? path,
                                        offset: UInt64(location.pageOffset))
        }
        return value
    }

    /// An O(1) copy of the current state.
    func currentState() -> EngineState { state.read { $0 } }

    // MARK: Writes

    /// Queues a batch; `completion` runs on the writer thread once the batch is durable (or failed).
    func submit(_ batch: WriteBatch, forceSync: Bool = false,
                completion: @escaping @Sendable (Result<UInt64, LucidError>) -> Void) {
        do {
            try checkOpen()
            try batch.validate()
            if let failed = failure.withLock({ $0 }) { throw Self.failedStateError(failed) }
            try queue.enqueue(PendingCommit(batch: batch, forceSync: forceSync, completion: completion))
        } catch let error as LucidError {
            completion(.failure(error))
        } catch {
            completion(.failure(LucidError(code: .io, message: "\(error)")))
        }
    }

    static func failedStateError(_ cause: LucidError) -> LucidError {
        LucidError(code: .failedState,
                   message: "an earlier write failed (\(cause)); reopen the store to continue writing",
                   file: cause.file, offset: cause.offset, errno: cause.errno)
    }

    // MARK: Close

    /// Drains queued commits, syncs, releases files and the lock. Idempotent.
    func close() throws {
        guard closedFlag.setOnce() else { return }
        queue.close()
        _ = writerStopped.wait()
        var closeError: LucidError?
        if failure.withLock({ $0 }) == nil, writer.hasUnsyncedData {
            do { try writer.active.handle.sync() } catch let e as LucidError { closeError = e } catch {}
        }
        state.write { $0 = EngineState() }
        lock.unlock()
        if let closeError { throw closeError }
    }
}
