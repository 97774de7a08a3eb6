import CompareReport
import Foundation

/// One engine under test, behind the few operations the workloads need.
///
/// Every engine keeps its own native API behind this protocol; nothing here is emulated. An operation an engine
/// cannot do is declared unsupported (the `supports...` flags) and its workload is left out of the results.
protocol BenchStore: AnyObject {
    /// Writes records `range` (keys in `order`) as one atomic batch (transaction).
    func loadBatch(_ range: Range<Int>, order: KeyOrder) throws
    /// Makes everything written so far durable (the end of a bulk load).
    func syncAll() throws
    /// Reads the value under `key` into an owned copy (bytes; for GRDB, the decoded record) and returns its size
    /// in bytes, or nil when the key is missing.
    func get(_ key: [UInt8]) throws -> Int?
    /// Runs `count` gets of the keys `key(0)`, `key(1)`, ... in order; returns how many found nothing and the
    /// bytes read. Engines with an async API run the whole loop in one task (see ``CoreManagerStore``).
    func getEach(_ count: Int, _ key: (Int) -> [UInt8]) throws -> (missing: Int, bytes: Int)
    /// Visits every record in key order; returns (records, value bytes seen).
    func scanAll() throws -> (count: Int, bytes: Int)
    /// Closes and opens the store again (the caller times it, with a first read).
    func reopen() throws
    func close() throws

    /// Secondary indexes on genre (equality) and rating (range).
    var supportsSecondaryIndexes: Bool { get }
    /// Up to `limit` records with this genre; returns how many.
    func queryGenre(_ genre: Int, limit: Int) throws -> Int
    /// Up to `limit` records with rating >= `rating`, in rating order; returns how many.
    func queryRating(atLeast rating: Int, limit: Int) throws -> Int
    /// Runs `count` genre queries (genres from `genre()`); returns how many returned fewer than `limit` records.
    func queryGenreEach(_ count: Int, limit: Int, _ genre: () -> Int) throws -> Int
    /// Runs `count` rating queries (lower bounds from `rating()`); returns how many returned fewer than `limit`.
    func queryRatingEach(_ count: Int, limit: Int, _ rating: () -> Int) throws -> Int

    /// Whether the engine can compact its files now.
    var supportsCompaction: Bool { get }
    /// Compacts; returns the directory whose size is the compacted size (the store's or a compacted copy's).
    func compact(scratch: String) throws -> String

    /// A handle for one writer thread doing single-record durable commits. Created on the main thread before
    /// the writers start; may be the store itself when its handle is thread-safe.
    func makeCommitter() throws -> Committer

    /// How many fdatasyncs the store has issued since it was opened, when the engine counts them (reported beside
    /// the durable-commit rates as commits per sync, the group commit's effect).
    var syncCount: UInt64? { get }
}

protocol Committer: AnyObject {
    /// Commits record `i` (random-order key) alone, durably.
    func commitOne(_ i: Int) throws
    /// Commits each record of `records` alone, durably, one after the other (``commitOne(_:)`` for each, unless the
    /// store has a cheaper loop: an async API pays its bridge from the harness's thread once per loop).
    func commitEach(_ records: StrideTo<Int>) throws
    /// Releases a per-writer handle (no-op for shared ones).
    func finish() throws
}

extension Committer {
    func commitEach(_ records: StrideTo<Int>) throws {
        for i in records { try commitOne(i) }
    }
}

extension BenchStore {
    var syncCount: UInt64? { nil }

    func getEach(_ count: Int, _ key: (Int) -> [UInt8]) throws -> (missing: Int, bytes: Int) {
        var missing = 0
        var bytes = 0
        for j in 0..<count {
            if let n = try get(key(j)) { bytes += n } else { missing += 1 }
        }
        return (missing, bytes)
    }

    func queryGenreEach(_ count: Int, limit: Int, _ genre: () -> Int) throws -> Int {
        var short = 0
        for _ in 0..<count where try queryGenre(genre(), limit: limit) != limit { short += 1 }
        return short
    }

    func queryRatingEach(_ count: Int, limit: Int, _ rating: () -> Int) throws -> Int {
        var short = 0
        for _ in 0..<count where try queryRating(atLeast: rating(), limit: limit) != limit { short += 1 }
        return short
    }

    var supportsSecondaryIndexes: Bool { false }
    func queryGenre(_ genre: Int, limit: Int) throws -> Int { throw BenchError.unsupported }
    func queryRating(atLeast rating: Int, limit: Int) throws -> Int { throw BenchError.unsupported }
    var supportsCompaction: Bool { false }
    func compact(scratch: String) throws -> String { throw BenchError.unsupported }
}

enum BenchError: Error, CustomStringConvertible {
    case unsupported
    case failed(String)

    var description: String {
        switch self {
        case .unsupported: "unsupported"
        case .failed(let message): message
        }
    }
}

/// The engines, in report order, with the settings each runs with (printed with the results).
enum EngineKind: String, CaseIterable {
    case lucid = "lucid-engine"
    /// LucidEngine storing its pages uncompressed (`EngineOptions.pageCompression = .none`), which reads checked
    /// pages in place: a larger store for cheaper reads.
    case lucidRaw = "lucid-engine-raw"
    /// LucidEngine storing each record compressed alone against its segment's dictionary
    /// (`EngineOptions.pageCompression = .lz4Records`): checked pages read in place, hot records cached decoded.
    case lucidRecords = "lucid-engine-records"
    case lmdb
    case rocksdb
    case sqlite
    case grdb
    /// Lucid's data layer (CoreManager over a DiskStore), compared with GRDB's record API.
    case coreManager = "lucid-coremanager"
    /// The same with a CacheStore (InMemoryStore over the DiskStore), what an app would usually pick.
    case coreManagerCached = "lucid-coremanager-cached"
    /// The data layer over an engine that stores its pages uncompressed (as `lucid-engine-raw`).
    case coreManagerRaw = "lucid-coremanager-raw"
    /// The data layer over an engine that compresses records one by one (as `lucid-engine-records`).
    case coreManagerRecords = "lucid-coremanager-records"

    /// The engine as the report compares it.
    var reportEngine: ReportEngine {
        ReportEngine(name: rawValue, role: role, settings: settings, durableSettings: durableSettings)
    }

    /// What the report compares the engine with: the lucid engine configurations with the best peer, the
    /// data-layer configurations with GRDB.
    var role: ReportEngine.Role {
        switch self {
        case .lucid, .lucidRaw, .lucidRecords: .lucidEngine
        case .lmdb, .rocksdb, .sqlite, .grdb: .peer
        case .coreManager, .coreManagerCached, .coreManagerRaw, .coreManagerRecords: .dataLayer
        }
    }

    /// Settings for the bulk-load, read, reopen and size workloads.
    var settings: String {
        switch self {
        case .lucid: LucidStore.settings(compression: benchCompression)
        case .lucidRaw: LucidStore.settings(compression: .none)
        case .lucidRecords: LucidStore.settings(compression: .lz4Records)
        case .lmdb: LMDBStore.settings
        case .rocksdb: RocksStore.settings
        case .sqlite: SQLiteStore.settings
        case .grdb: GRDBStore.settings
        case .coreManager: CoreManagerStore.settings(cached: false)
        case .coreManagerCached: CoreManagerStore.settings(cached: true)
        case .coreManagerRaw: CoreManagerStore.settings(cached: false, compression: .none)
        case .coreManagerRecords: CoreManagerStore.settings(cached: false, compression: .lz4Records)
        }
    }

    /// Settings for the durable single-record commit workloads.
    var durableSettings: String {
        switch self {
        case .lucid, .lucidRaw, .lucidRecords: LucidStore.durableSettings
        case .lmdb: LMDBStore.durableSettings
        case .rocksdb: RocksStore.durableSettings
        case .sqlite: SQLiteStore.durableSettings
        case .grdb: GRDBStore.durableSettings
        case .coreManager: CoreManagerStore.durableSettings(cached: false)
        case .coreManagerCached: CoreManagerStore.durableSettings(cached: true)
        case .coreManagerRaw, .coreManagerRecords: CoreManagerStore.durableSettings(cached: false)
        }
    }

    /// Opens (creating if needed) the store in directory `path`; `durable` selects the commit settings.
    func open(at path: String, durable: Bool, records: Int) throws -> BenchStore {
        switch self {
        case .lucid: try LucidStore(path: path, durable: durable, compression: benchCompression)
        case .lucidRaw: try LucidStore(path: path, durable: durable, compression: .none)
        case .lucidRecords: try LucidStore(path: path, durable: durable, compression: .lz4Records)
        case .lmdb: try LMDBStore(path: path, durable: durable, records: records)
        case .rocksdb: try RocksStore(path: path, durable: durable)
        case .sqlite: try SQLiteStore(path: path, durable: durable)
        case .grdb: try GRDBStore(path: path, durable: durable)
        case .coreManager: try CoreManagerStore(path: path, durable: durable, cached: false)
        case .coreManagerCached: try CoreManagerStore(path: path, durable: durable, cached: true)
        case .coreManagerRaw: try CoreManagerStore(path: path, durable: durable, cached: false, compression: .none)
        case .coreManagerRecords:
            try CoreManagerStore(path: path, durable: durable, cached: false, compression: .lz4Records)
        }
    }
}

/// Cache given to every engine that has one of its own (LMDB reads through the OS page cache via mmap): 64 MiB,
/// or `LUCID_CACHE_MB` MiB from the environment (children inherit it), to measure reads with a cache that holds
/// the whole data set.
let engineCacheBytes = (ProcessInfo.processInfo.environment["LUCID_CACHE_MB"].flatMap(Int.init) ?? 64) << 20

/// Takes an owned value so the optimizer cannot drop the copy a read made; returns its size.
@inline(never) @_optimize(none)
func keep(_ value: [UInt8]) -> Int { value.count }
