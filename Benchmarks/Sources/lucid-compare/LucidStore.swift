import Foundation
import LucidEngine

/// The engine's page size: `EngineOptions.pageSize`'s default, or `LUCID_PAGE_SIZE` from the environment (bytes;
/// children inherit it), to measure the read/size trade-off of smaller pages.
let benchPageSize = ProcessInfo.processInfo.environment["LUCID_PAGE_SIZE"].flatMap(Int.init) ?? EngineOptions().pageSize

/// How the compressed Lucid engines store pages: `EngineOptions.pageCompression`'s default (`.lz4`), or records
/// compressed one by one with `LUCID_PAGE_COMPRESSION=lz4Records` (children inherit it), to compare the two.
let benchCompression: EngineOptions.PageCompression =
    ProcessInfo.processInfo.environment["LUCID_PAGE_COMPRESSION"] == "lz4Records" ? .lz4Records : EngineOptions().pageCompression

/// Whether the engine keeps its point index (``EngineOptions/pointIndex``): on, unless `LUCID_POINT_INDEX=0` (children
/// inherit it), to measure what it gives and costs.
let benchPointIndex = ProcessInfo.processInfo.environment["LUCID_POINT_INDEX"] != "0"

/// Whether the engine maps sealed segments (``EngineOptions/memoryMappedReads``): on, unless `LUCID_MAPPED_READS=0`.
let benchMappedReads = ProcessInfo.processInfo.environment["LUCID_MAPPED_READS"] != "0"

/// LucidEngine through its public API, one keyspace "books". Records carry their genre and rating index terms
/// (logged with the record, as the data layer will write them), so load and size figures already pay for them.
final class LucidStore: BenchStore, Committer {
    static let keyspace = "books"
    static func settings(compression: EngineOptions.PageCompression) -> String {
        let pages = switch compression {
        case .none: ".none (checked pages read in place)"
        case .lz4Records: ".lz4Records (checked pages read in place, hot records cached decoded)"
        case .lz4: ".lz4"
        }
        return "LucidEngine: syncMode .none during the load, batches queued with submit (built while "
        + "the writer writes the previous ones), then one sync() (suffix-only loss on crash), "
        + "\(benchPageSize >> 10) KiB pages, pageCompression \(pages), "
        + "\(engineCacheBytes >> 20) MiB page cache, memoryMappedReads \(benchMappedReads) "
        + "(recommended for reads of data larger than the cache), 64 MiB segments; each record carries 2 index "
        + "terms (genre, rating) in the log; gets via Engine.get, scan via snapshot().recordTable (the keyspace's "
        + "records read in storage order, each page once, into one table in key order: the engine's API for reading a "
        + "range whole; forEach streams in key order, a page read per record on random keys)"
    }
    static let durableSettings = "LucidEngine: syncMode .always (fdatasync per commit group, group commit), "
        + "commitAndWait per record"

    private let path: String
    private let options: EngineOptions
    private var engine: Engine

    init(path: String, durable: Bool, compression: EngineOptions.PageCompression) throws {
        self.path = path
        var options = EngineOptions()
        options.syncMode = durable ? .always : .none
        options.pageCacheBytes = engineCacheBytes
        options.memoryMappedReads = benchMappedReads
        options.pointIndex = benchPointIndex
        options.pageSize = benchPageSize
        options.pageCompression = compression
        self.options = options
        engine = try Engine.open(at: path, options: options)
    }

    /// Builds record `i` in `key` and `value` (reused across a batch, as the LMDB and RocksDB loaders reuse theirs:
    /// `put` copies them) and puts it with its two index terms.
    private static func put(_ i: Int, _ order: KeyOrder, into batch: inout WriteBatch, key: inout [UInt8],
                            value: inout [UInt8]) {
        let fields = Fields(i)
        Records.writeKey(i, order, into: &key)
        value.removeAll(keepingCapacity: true)
        Records.appendValue(fields, to: &value)
        batch.put(value, forKey: key, in: keyspace, indexTerms: [
            IndexTerm(index: "genre", value: .string(Words.genres[fields.genre])),
            IndexTerm(index: "rating", value: .int(Int64(fields.rating))),
        ])
    }

    /// The last batch of the load submitted (``Engine/submit(_:)``): batches are queued, not waited for, so the
    /// next one is built while the writer writes this one; ``syncAll()`` waits for them.
    private var lastLoadTicket: CommitTicket?

    func loadBatch(_ range: Range<Int>, order: KeyOrder) throws {
        var batch = WriteBatch()
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        value.reserveCapacity(256)
        for i in range { Self.put(i, order, into: &batch, key: &key, value: &value) }
        lastLoadTicket = try engine.submit(batch)
    }

    /// Waits for the load's batches (the last ticket's success means every earlier one succeeded), then syncs.
    func syncAll() throws {
        try lastLoadTicket?.wait()
        lastLoadTicket = nil
        try engine.sync()
    }

    func get(_ key: [UInt8]) throws -> Int? { try engine.get(key, in: Self.keyspace).map(keep) }

    /// Every record in key order, read whole (`recordTable`: storage order, each page once), as the data layer's
    /// `all()` reads them.
    func scanAll() throws -> (count: Int, bytes: Int) {
        let table = try engine.snapshot().recordTable(in: Self.keyspace)
        var bytes = 0
        for rank in table.indices { bytes += table.value(at: rank).count }
        return (table.count, bytes)
    }

    func reopen() throws {
        try engine.close()
        engine = try Engine.open(at: path, options: options)
    }

    func close() throws { try engine.close() }

    var syncCount: UInt64? { engine.statistics.syncs }

    var supportsSecondaryIndexes: Bool { true }

    /// `WHERE genre = ? LIMIT ?`: the index gives the keys, each record is read through the page cache.
    func queryGenre(_ genre: Int, limit: Int) throws -> Int {
        try engine.records(matching: IndexQuery(keyspace: Self.keyspace, index: "genre",
                                                condition: .equals(.string(Words.genres[genre])), limit: limit)).count
    }

    /// `WHERE rating >= ? ORDER BY rating LIMIT ?`.
    func queryRating(atLeast rating: Int, limit: Int) throws -> Int {
        try engine.records(matching: IndexQuery(keyspace: Self.keyspace, index: "rating",
                                                condition: .atLeast(.int(Int64(rating))), limit: limit)).count
    }

    var supportsCompaction: Bool { true }

    /// Seals the active segment and compacts every sealed one in place (online compaction; the directory is
    /// measured afterwards).
    func compact(scratch: String) throws -> String {
        try engine.sealActiveSegment()
        _ = try engine.compactAndWait()
        return engine.path
    }

    func makeCommitter() throws -> Committer { self }

    func commitOne(_ i: Int) throws {
        var batch = WriteBatch()
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        Self.put(i, .random, into: &batch, key: &key, value: &value)
        try engine.commitAndWait(batch)
    }

    func finish() throws {}
}
