import Foundation
import Lucid
import LucidEngine

/// The GRDB engine's book row as a Lucid entity, the way an app would write one: a plain Codable struct indexed
/// on genre and rating, with its disk record written by hand (`EntityRecordCodable`), as GRDB's `Book` row is
/// (`encode(to:)` / `init(row:)`).
///
/// The remote identifier stands for GRDB's 16-byte blob key: its first 8 bytes as a big-endian Int (the record
/// number for sequential keys, a hash for random ones; unique either way), so both engines insert and look up
/// records in the same key order. `number` is GRDB's `id` column.
struct BookEntity: LocalEntity {
    typealias Identifier = EntityIdentifier<BookEntity, Int>
    static var identifierTypeID: String { "books" }

    var identifier: Identifier
    var number: Int
    var title: String
    var author: String
    var year: Int
    var pages: Int
    var rating: Int
    var published: Date
    var genre: String
    var lang: String
    var stock: Int

    enum IndexName: String, EntityIndexName { case genre, rating }

    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
        switch indexName {
        case .genre: .string(genre)
        case .rating: .int(rating)
        }
    }

    init(_ i: Int, _ order: KeyOrder) {
        let f = Fields(i)
        identifier = .remote(Self.remoteID(Records.key(i, order)))
        number = f.id
        title = f.title
        author = f.author
        year = f.year
        pages = f.pages
        rating = f.rating
        published = Date(timeIntervalSince1970: Double(f.published) / 1000)
        genre = f.genreName
        lang = "en"
        stock = f.stock
    }

    /// The remote id standing for a 16-byte harness key (its first 8 bytes, big-endian).
    static func remoteID(_ key: [UInt8]) -> Int {
        key.withUnsafeBytes { Int(bitPattern: UInt(UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)))) }
    }

    /// Bytes of the decoded fields, the "value size" of a read (as GRDB's `Book.byteCount`).
    var byteCount: Int { 16 + title.utf8.count + author.utf8.count + genre.utf8.count + lang.utf8.count + 48 }
}

extension BookEntity: EntityRecordCodable {
    func encode(to record: inout EntityRecordWriter) throws {
        try record.encode(identifier, forKey: "identifier")
        record.encode(number, forKey: "number")
        record.encode(title, forKey: "title")
        record.encode(author, forKey: "author")
        record.encode(year, forKey: "year")
        record.encode(pages, forKey: "pages")
        record.encode(rating, forKey: "rating")
        record.encode(published, forKey: "published")
        record.encode(genre, forKey: "genre")
        record.encode(lang, forKey: "lang")
        record.encode(stock, forKey: "stock")
    }

    // Read into locals, then stored: assigning each property from its `try` made the init copy the entity once
    // more at its end (retaining and releasing each string), 337 instructions of 3,981 per decode in the micro
    // suite's `record-decode-book`. GRDB's `Book.init(row:)` is written the same way.
    init(from record: inout EntityRecordReader) throws {
        let identifier = try record.decode(Identifier.self, forKey: "identifier")
        let number = try record.decode(Int.self, forKey: "number")
        let title = try record.decode(String.self, forKey: "title")
        let author = try record.decode(String.self, forKey: "author")
        let year = try record.decode(Int.self, forKey: "year")
        let pages = try record.decode(Int.self, forKey: "pages")
        let rating = try record.decode(Int.self, forKey: "rating")
        let published = try record.decode(Date.self, forKey: "published")
        let genre = try record.decode(String.self, forKey: "genre")
        let lang = try record.decode(String.self, forKey: "lang")
        let stock = try record.decode(Int.self, forKey: "stock")
        self.identifier = identifier
        self.number = number
        self.title = title
        self.author = author
        self.year = year
        self.pages = pages
        self.rating = rating
        self.published = published
        self.genre = genre
        self.lang = lang
        self.stock = stock
    }
}

/// Lucid's data layer: a `CoreManager` over a `DiskStore` (or, with `cached`, a `CacheStore` of an
/// `InMemoryStore` over it) on a LucidEngine opened with lucid-engine's settings.
///
/// The harness is synchronous and the manager's API is async: each batch, and each whole loop of gets or
/// queries, runs in one task the calling thread waits for, so the bridge is paid once per loop, not per call.
final class CoreManagerStore: BenchStore, Committer {
    static let keyspace = BookEntity.identifierTypeID
    static func settings(cached: Bool, compression: EngineOptions.PageCompression = benchCompression) -> String {
        "Lucid CoreManager over " + (cached ? "CacheStore(InMemoryStore + DiskStore)" : "DiskStore")
            + " on LucidEngine (syncMode .none during the load then one sync(), \(benchPageSize >> 10) KiB pages, "
            + "pageCompression .\(compression), "
            + "\(pageCacheBytes >> 20) MiB page cache + the DiskStore's \(entityCacheBytes >> 20) MiB decoded-entity cache "
            + "(together the \(engineCacheBytes >> 20) MiB every engine gets), memoryMappedReads \(benchMappedReads)); BookEntity (Codable + hand-written record, EntityRecordCodable; remote Int id + 10 fields, "
            + "indexes genre and rating) written with "
            + "set([1000 entities]), read with get(byID:), queries through search(withQuery:)"
    }
    static func durableSettings(cached: Bool) -> String {
        "Lucid CoreManager (" + (cached ? "CacheStore" : "DiskStore")
            + "): syncMode .always, one set(entity) per record, each writer's sets awaited in turn in one task"
    }

    private let path: String
    private let options: EngineOptions
    private let cached: Bool
    private var engine: Engine
    private var manager: CoreManager<BookEntity>

    init(path: String, durable: Bool, cached: Bool,
         compression: EngineOptions.PageCompression = benchCompression) throws {
        self.path = path
        self.cached = cached
        var options = EngineOptions()
        options.syncMode = durable ? .always : .none
        options.pageCacheBytes = Self.pageCacheBytes
        options.memoryMappedReads = benchMappedReads
        options.pointIndex = benchPointIndex
        options.pageSize = benchPageSize
        options.pageCompression = compression
        self.options = options
        engine = try Engine.open(at: path, options: options)
        manager = Self.makeManager(engine, cached: cached)
    }

    /// The DiskStore's decoded-entity cache (its default) and the engine's page cache: the two share the memory
    /// budget every engine gets.
    static let entityCacheBytes = min(DiskStore<BookEntity>.defaultEntityCacheBytes, engineCacheBytes / 2)
    static var pageCacheBytes: Int { engineCacheBytes - entityCacheBytes }

    private static func makeManager(_ engine: Engine, cached: Bool) -> CoreManager<BookEntity> {
        let disk = DiskStore<BookEntity>(engine: engine, entityCacheBytes: entityCacheBytes)
        if cached { return CoreManager(store: CacheStore(memory: InMemoryStore(), disk: disk)) }
        return CoreManager(store: disk)
    }

    func loadBatch(_ range: Range<Int>, order: KeyOrder) throws {
        let books = range.map { BookEntity($0, order) }
        let manager = self.manager
        let stored = try wait { try await manager.set(books).count }
        guard stored == books.count else { throw BenchError.failed("set stored \(stored) of \(books.count)") }
    }

    func syncAll() throws { try engine.sync() }

    func get(_ key: [UInt8]) throws -> Int? {
        let manager = self.manager
        let id = BookEntity.remoteID(key)
        return try wait { try await manager.get(byID: .remote(id))?.byteCount }
    }

    func getEach(_ count: Int, _ key: (Int) -> [UInt8]) throws -> (missing: Int, bytes: Int) {
        let ids = (0..<count).map { BookEntity.remoteID(key($0)) }
        let manager = self.manager
        return try wait {
            var missing = 0
            var bytes = 0
            for id in ids {
                if let book = try await manager.get(byID: .remote(id)) { bytes += book.byteCount } else { missing += 1 }
            }
            return (missing, bytes)
        }
    }

    /// Every entity in identifier order (`all()`, which decodes them all into one result).
    func scanAll() throws -> (count: Int, bytes: Int) {
        let manager = self.manager
        return try wait {
            let books = try await manager.all()
            return (books.count, books.entities.reduce(0) { $0 + $1.byteCount })
        }
    }

    func reopen() throws {
        try engine.close()
        engine = try Engine.open(at: path, options: options)
        manager = Self.makeManager(engine, cached: cached)
    }

    func close() throws { try engine.close() }

    var syncCount: UInt64? { engine.statistics.syncs }

    var supportsSecondaryIndexes: Bool { true }

    private static func genreQuery(_ genre: Int, limit: Int) -> Query<BookEntity> {
        .filter(.genre == .string(Words.genres[genre])).with(limit: limit)
    }

    private static func ratingQuery(_ rating: Int, limit: Int) -> Query<BookEntity> {
        Query.filter(.rating >= .int(rating)).order([.asc(by: .rating)]).with(limit: limit)
    }

    /// `genre == x` with limit 20, in identifier order: the 20 books of that genre with the smallest ids, the
    /// rows GRDB's `filter(genre == x).limit(20)` reads through its genre index (entries in primary-key order).
    func queryGenre(_ genre: Int, limit: Int) throws -> Int {
        let manager = self.manager
        let query = Self.genreQuery(genre, limit: limit)
        return try wait { try await manager.search(withQuery: query).once.count }
    }

    func queryRating(atLeast rating: Int, limit: Int) throws -> Int {
        let manager = self.manager
        let query = Self.ratingQuery(rating, limit: limit)
        return try wait { try await manager.search(withQuery: query).once.count }
    }

    func queryGenreEach(_ count: Int, limit: Int, _ genre: () -> Int) throws -> Int {
        try runQueries((0..<count).map { _ in Self.genreQuery(genre(), limit: limit) }, expecting: limit)
    }

    func queryRatingEach(_ count: Int, limit: Int, _ rating: () -> Int) throws -> Int {
        try runQueries((0..<count).map { _ in Self.ratingQuery(rating(), limit: limit) }, expecting: limit)
    }

    /// Runs `queries` in one task; returns how many gave fewer than `expecting` entities.
    private func runQueries(_ queries: [Query<BookEntity>], expecting: Int) throws -> Int {
        let manager = self.manager
        return try wait {
            var short = 0
            for query in queries where try await manager.search(withQuery: query).once.count != expecting { short += 1 }
            return short
        }
    }

    func makeCommitter() throws -> Committer { self }

    func commitOne(_ i: Int) throws {
        let book = BookEntity(i, .random)
        let manager = self.manager
        _ = try wait { try await manager.set(book) }
    }

    /// The loop of durable sets in one task, as an async caller makes them: each `set` awaits its commit before
    /// the next starts.
    func commitEach(_ records: StrideTo<Int>) throws {
        let manager = self.manager
        try wait {
            for i in records { _ = try await manager.set(BookEntity(i, .random)) }
        }
    }

    func finish() throws {}
}

/// Runs `body` in a task and blocks the calling (non-cooperative) thread until it ends.
private func wait<T>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try box.result!.get()
}

private final class ResultBox<T>: @unchecked Sendable {
    var result: Swift.Result<T, Error>?
}
