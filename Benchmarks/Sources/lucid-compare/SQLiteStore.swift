import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// SQLite (Debian libsqlite3) through its C API with prepared statements: a WITHOUT ROWID table keyed by a
/// 16-byte blob, the JSON value as a blob, and the genre and rating columns with an index each.
final class SQLiteStore: BenchStore, Committer {
    static let settings = "SQLite \(String(cString: sqlite3_libversion())): journal_mode=WAL, synchronous=NORMAL, "
        + "cache_size=\(engineCacheBytes >> 20) MiB, prepared statements, one transaction per batch; "
        + "table kv(k BLOB PRIMARY KEY, v BLOB, genre TEXT, rating INTEGER) WITHOUT ROWID, "
        + "indexes on genre and on rating"
    static let durableSettings = "SQLite: journal_mode=WAL, synchronous=FULL (WAL fsync per commit), one "
        + "connection per writer, busy_timeout 60 s, one autocommit INSERT per record"

    private static let schema = """
        CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB NOT NULL, genre TEXT NOT NULL,
                                      rating INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS kv_genre ON kv(genre);
        CREATE INDEX IF NOT EXISTS kv_rating ON kv(rating);
        """

    private let directory: String
    private let file: String
    private let durable: Bool
    private var db: OpaquePointer?
    private var statements: [OpaquePointer] = []
    private var insert: OpaquePointer?
    private var select: OpaquePointer?
    private var byGenre: OpaquePointer?
    private var byRating: OpaquePointer?

    init(path: String, durable: Bool) throws {
        directory = path
        file = path + "/store.sqlite"
        self.durable = durable
        try makeDirectory(path)
        try open()
    }

    deinit { try? close() }

    private func check(_ rc: Int32, _ what: String) throws {
        if rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "rc \(rc)"
            throw BenchError.failed("sqlite \(what): \(message)")
        }
    }

    private func exec(_ sql: String) throws {
        try check(sqlite3_exec(db, sql, nil, nil, nil), sql)
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil), sql)
        statements.append(statement!)
        return statement
    }

    private func open() throws {
        try check(sqlite3_open_v2(file, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil),
                  "open")
        sqlite3_busy_timeout(db, 60_000)
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=\(durable ? "FULL" : "NORMAL")")
        try exec("PRAGMA cache_size=-\(engineCacheBytes >> 10)")
        try exec(Self.schema)
        insert = try prepare("INSERT INTO kv(k, v, genre, rating) VALUES (?1, ?2, ?3, ?4)")
        select = try prepare("SELECT v FROM kv WHERE k = ?1")
        byGenre = try prepare("SELECT k, v FROM kv WHERE genre = ?1 LIMIT ?2")
        byRating = try prepare("SELECT k, v FROM kv WHERE rating >= ?1 ORDER BY rating LIMIT ?2")
    }

    func close() throws {
        guard db != nil else { return }
        for statement in statements { sqlite3_finalize(statement) }
        statements = []
        try check(sqlite3_close(db), "close")
        db = nil
    }

    private func insertRecord(_ i: Int, _ order: KeyOrder, key: inout [UInt8], value: inout [UInt8]) throws {
        Records.writeKey(i, order, into: &key)
        let fields = Fields(i)
        value.removeAll(keepingCapacity: true)
        Records.appendValue(fields, to: &value)
        let genre = Words.genreBytes[fields.genre]
        let rc = key.withUnsafeBytes { k in
            value.withUnsafeBytes { v in
                genre.withUnsafeBytes { g in
                    sqlite3_bind_blob(insert, 1, k.baseAddress, Int32(k.count), nil)
                    sqlite3_bind_blob(insert, 2, v.baseAddress, Int32(v.count), nil)
                    sqlite3_bind_text(insert, 3, g.baseAddress!.assumingMemoryBound(to: CChar.self),
                                      Int32(g.count), nil)
                    sqlite3_bind_int64(insert, 4, Int64(fields.rating))
                    let rc = sqlite3_step(insert)
                    sqlite3_reset(insert)
                    return rc
                }
            }
        }
        if rc != SQLITE_DONE { try check(rc == SQLITE_ROW ? SQLITE_ERROR : rc, "insert") }
    }

    func loadBatch(_ range: Range<Int>, order: KeyOrder) throws {
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        value.reserveCapacity(256)
        try exec("BEGIN")
        do {
            for i in range { try insertRecord(i, order, key: &key, value: &value) }
        } catch {
            try? exec("ROLLBACK")
            throw error
        }
        try exec("COMMIT")
    }

    /// With WAL and synchronous=NORMAL a commit is durable after the next checkpoint; force one.
    func syncAll() throws { try exec("PRAGMA wal_checkpoint(TRUNCATE)") }

    func get(_ key: [UInt8]) throws -> Int? {
        defer { sqlite3_reset(select) }
        let rc = key.withUnsafeBytes { k in
            sqlite3_bind_blob(select, 1, k.baseAddress, Int32(k.count), nil)
            return sqlite3_step(select)
        }
        if rc == SQLITE_DONE { return nil }
        guard rc == SQLITE_ROW else { try check(rc, "get"); return nil }
        let length = Int(sqlite3_column_bytes(select, 0))
        return keep(Array(UnsafeRawBufferPointer(start: sqlite3_column_blob(select, 0), count: length)))
    }

    func scanAll() throws -> (count: Int, bytes: Int) {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v2(db, "SELECT k, v FROM kv ORDER BY k", -1, &statement, nil), "scan")
        defer { sqlite3_finalize(statement) }
        var count = 0
        var bytes = 0
        var rc = sqlite3_step(statement)
        while rc == SQLITE_ROW {
            _ = sqlite3_column_blob(statement, 1)
            bytes += Int(sqlite3_column_bytes(statement, 1))
            count += 1
            rc = sqlite3_step(statement)
        }
        try check(rc, "scan")
        return (count, bytes)
    }

    private func countRows(_ statement: OpaquePointer?) throws -> Int {
        defer { sqlite3_reset(statement) }
        var count = 0
        var rc = sqlite3_step(statement)
        while rc == SQLITE_ROW {
            _ = sqlite3_column_blob(statement, 1)
            _ = sqlite3_column_bytes(statement, 1)
            count += 1
            rc = sqlite3_step(statement)
        }
        try check(rc, "query")
        return count
    }

    var supportsSecondaryIndexes: Bool { true }

    func queryGenre(_ genre: Int, limit: Int) throws -> Int {
        let name = Words.genreBytes[genre]
        return try name.withUnsafeBytes { g in
            sqlite3_bind_text(byGenre, 1, g.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(g.count), nil)
            sqlite3_bind_int64(byGenre, 2, Int64(limit))
            return try countRows(byGenre)
        }
    }

    func queryRating(atLeast rating: Int, limit: Int) throws -> Int {
        sqlite3_bind_int64(byRating, 1, Int64(rating))
        sqlite3_bind_int64(byRating, 2, Int64(limit))
        return try countRows(byRating)
    }

    func reopen() throws {
        try close()
        try open()
    }

    var supportsCompaction: Bool { true }

    func compact(scratch: String) throws -> String {
        try exec("VACUUM")
        return directory
    }

    /// Each writer gets its own connection (SQLite connections are not shared between threads here).
    func makeCommitter() throws -> Committer { try SQLiteStore(path: directory, durable: durable) }

    func commitOne(_ i: Int) throws {
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        try insertRecord(i, .random, key: &key, value: &value)
    }

    func finish() throws { try close() }
}
