import Foundation
import GRDB

/// A book row: the same fields as the JSON value, one column each, keyed by the 16-byte blob.
/// Encoded and decoded by hand (`encode(to:)`, `init(row:)`), GRDB's fast path for records.
struct Book: FetchableRecord, PersistableRecord {
    static let databaseTableName = "book"

    var key: Data
    var id: Int
    var title: String
    var author: String
    var year: Int
    var pages: Int
    var rating: Int
    var published: Int
    var genre: String
    var lang: String
    var stock: Int

    init(_ i: Int, _ order: KeyOrder) {
        let f = Fields(i)
        key = Records.key(i, order).withUnsafeBytes { Data($0) }
        id = f.id
        title = f.title
        author = f.author
        year = f.year
        pages = f.pages
        rating = f.rating
        published = f.published
        genre = f.genreName
        lang = "en"
        stock = f.stock
    }

    // Read into locals, then stored, as BookEntity's `init(from:)` (see there).
    init(row: Row) throws {
        let key = try row.decode(Data.self, atIndex: 0)
        let id = try row.decode(Int.self, atIndex: 1)
        let title = try row.decode(String.self, atIndex: 2)
        let author = try row.decode(String.self, atIndex: 3)
        let year = try row.decode(Int.self, atIndex: 4)
        let pages = try row.decode(Int.self, atIndex: 5)
        let rating = try row.decode(Int.self, atIndex: 6)
        let published = try row.decode(Int.self, atIndex: 7)
        let genre = try row.decode(String.self, atIndex: 8)
        let lang = try row.decode(String.self, atIndex: 9)
        let stock = try row.decode(Int.self, atIndex: 10)
        self.key = key
        self.id = id
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

    func encode(to container: inout PersistenceContainer) {
        container["k"] = key
        container["id"] = id
        container["title"] = title
        container["author"] = author
        container["year"] = year
        container["pages"] = pages
        container["rating"] = rating
        container["published"] = published
        container["genre"] = genre
        container["lang"] = lang
        container["stock"] = stock
    }

    /// Bytes of the decoded fields, the "value size" of a read.
    var byteCount: Int { key.count + title.utf8.count + author.utf8.count + genre.utf8.count + lang.utf8.count + 48 }
}

/// GRDB 7 (over the same Debian SQLite) through its record API: a DatabasePool (WAL), a WITHOUT ROWID table
/// with one column per field and indexes on genre and on rating.
final class GRDBStore: BenchStore, Committer {
    static let settings = "GRDB 7.10: DatabasePool (WAL), synchronous=NORMAL, cache_size=\(engineCacheBytes >> 20) MiB, Book records "
        + "(encode(to:)/init(row:)) inserted with insert(db), one write transaction per batch; gets and queries "
        + "in one read access per loop with a cached statement; "
        + "table book(k BLOB PRIMARY KEY, 10 field columns) WITHOUT ROWID, indexes on genre and on rating"
    static let durableSettings = "GRDB: DatabasePool (WAL), synchronous=FULL, one pool.write { insert } per record"

    private let file: String
    private let configuration: Configuration
    private let synchronous: String
    private var pool: DatabasePool?

    init(path: String, durable: Bool) throws {
        try makeDirectory(path)
        file = path + "/store.sqlite"
        var configuration = Configuration()
        synchronous = durable ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA cache_size=-\(engineCacheBytes >> 10)")
        }
        configuration.busyMode = .timeout(60)
        self.configuration = configuration
        try open()
    }

    private var db: DatabasePool {
        get throws {
            guard let pool else { throw BenchError.failed("grdb: closed") }
            return pool
        }
    }

    private func open() throws {
        let pool = try DatabasePool(path: file, configuration: configuration)
        // GRDB sets synchronous=NORMAL on the writer when it enables WAL (after prepareDatabase); commits go
        // through the writer connection only, so this is where durable mode asks for FULL.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous=\(synchronous)") }
        try pool.write { db in
            try db.create(table: Book.databaseTableName, options: [.ifNotExists, .withoutRowID]) { t in
                t.primaryKey("k", .blob)
                t.column("id", .integer).notNull()
                t.column("title", .text).notNull()
                t.column("author", .text).notNull()
                t.column("year", .integer).notNull()
                t.column("pages", .integer).notNull()
                t.column("rating", .integer).notNull()
                t.column("published", .integer).notNull()
                t.column("genre", .text).notNull()
                t.column("lang", .text).notNull()
                t.column("stock", .integer).notNull()
            }
            try db.create(index: "book_genre", on: Book.databaseTableName, columns: ["genre"], options: .ifNotExists)
            try db.create(index: "book_rating", on: Book.databaseTableName, columns: ["rating"], options: .ifNotExists)
        }
        self.pool = pool
    }

    func loadBatch(_ range: Range<Int>, order: KeyOrder) throws {
        try db.write { db in
            for i in range { try Book(i, order).insert(db) }
        }
    }

    func syncAll() throws {
        _ = try db.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    func get(_ key: [UInt8]) throws -> Int? {
        let data = key.withUnsafeBytes { Data($0) }
        return try db.read { db in try Book.fetchOne(db, key: data) }?.byteCount
    }

    /// GRDB at its best for a loop of gets: one read access and one cached statement for the whole loop (the
    /// data layer also runs its loop in one task), records decoded with `init(row:)`.
    func getEach(_ count: Int, _ key: (Int) -> [UInt8]) throws -> (missing: Int, bytes: Int) {
        try db.read { db in
            let statement = try db.cachedStatement(sql: "SELECT * FROM book WHERE k = ?")
            var missing = 0
            var bytes = 0
            for j in 0..<count {
                let data = key(j).withUnsafeBytes { Data($0) }
                if let book = try Book.fetchOne(statement, arguments: [data]) { bytes += book.byteCount } else { missing += 1 }
            }
            return (missing, bytes)
        }
    }

    /// Genre queries in one read access with one cached statement.
    func queryGenreEach(_ count: Int, limit: Int, _ genre: () -> Int) throws -> Int {
        try db.read { db in
            let statement = try db.cachedStatement(sql: "SELECT * FROM book WHERE genre = ? LIMIT ?")
            var short = 0
            for _ in 0..<count where try Book.fetchAll(statement, arguments: [Words.genres[genre()], limit]).count != limit {
                short += 1
            }
            return short
        }
    }

    /// Rating range queries in one read access with one cached statement.
    func queryRatingEach(_ count: Int, limit: Int, _ rating: () -> Int) throws -> Int {
        try db.read { db in
            let statement = try db.cachedStatement(sql: "SELECT * FROM book WHERE rating >= ? ORDER BY rating LIMIT ?")
            var short = 0
            for _ in 0..<count where try Book.fetchAll(statement, arguments: [rating(), limit]).count != limit {
                short += 1
            }
            return short
        }
    }

    func scanAll() throws -> (count: Int, bytes: Int) {
        try db.read { db in
            var count = 0
            var bytes = 0
            let cursor = try Book.orderByPrimaryKey().fetchCursor(db)
            while let book = try cursor.next() {
                count += 1
                bytes += book.byteCount
            }
            return (count, bytes)
        }
    }

    var supportsSecondaryIndexes: Bool { true }

    func queryGenre(_ genre: Int, limit: Int) throws -> Int {
        let name = Words.genres[genre]
        return try db.read { db in
            try Book.filter(Column("genre") == name).limit(limit).fetchAll(db).count
        }
    }

    func queryRating(atLeast rating: Int, limit: Int) throws -> Int {
        try db.read { db in
            try Book.filter(Column("rating") >= rating).order(Column("rating")).limit(limit).fetchAll(db).count
        }
    }

    func reopen() throws {
        try close()
        try open()
    }

    func close() throws {
        try pool?.close()
        pool = nil
    }

    var supportsCompaction: Bool { true }

    func compact(scratch: String) throws -> String {
        try db.vacuum()
        return (file as NSString).deletingLastPathComponent
    }

    func makeCommitter() throws -> Committer { self }

    func commitOne(_ i: Int) throws {
        let book = Book(i, .random)
        try db.write { db in try book.insert(db) }
    }

    func finish() throws {}
}
