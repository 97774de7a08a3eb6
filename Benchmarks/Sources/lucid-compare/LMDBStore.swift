import CLMDB
#if canImport(Glibc)
import Glibc
#endif

/// LMDB (Debian liblmdb) through its C API: one unnamed database, key -> JSON value. No secondary indexes.
final class LMDBStore: BenchStore, Committer {
    static let settings = "LMDB: MDB_NOMETASYNC during the load (data synced per commit, meta page deferred, "
        + "integrity kept) then mdb_env_sync, map size sized to the data, reads through the OS page cache (mmap), "
        + "gets in a reset/renewed read-only txn, scan with a cursor"
    static let durableSettings = "LMDB: default flags (full sync per commit: data and meta page)"

    private var env: OpaquePointer?
    private var dbi: MDB_dbi = 0
    private var readTxn: OpaquePointer?
    private let path: String
    private let durable: Bool
    private let mapSize: Int

    init(path: String, durable: Bool, records: Int) throws {
        self.path = path
        self.durable = durable
        // Generous, sparse (LMDB grows the file only as pages are used).
        mapSize = max(1 << 30, records * 2048)
        try makeDirectory(path)
        try open()
    }

    private static func check(_ rc: Int32, _ what: String) throws {
        if rc != 0 { throw BenchError.failed("lmdb \(what): \(String(cString: mdb_strerror(rc)))") }
    }

    private func open() throws {
        try Self.check(mdb_env_create(&env), "env_create")
        try Self.check(mdb_env_set_mapsize(env, mapSize), "set_mapsize")
        try Self.check(mdb_env_set_maxreaders(env, 64), "set_maxreaders")
        let flags: Int32 = durable ? 0 : Int32(MDB_NOMETASYNC)
        try Self.check(mdb_env_open(env, path, UInt32(flags), 0o644), "env_open")
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        try Self.check(mdb_dbi_open(txn, nil, 0, &dbi), "dbi_open")
        try Self.check(mdb_txn_commit(txn), "txn_commit")
        try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &readTxn), "read txn")
        mdb_txn_reset(readTxn)
    }

    private func put(_ txn: OpaquePointer?, _ i: Int, _ order: KeyOrder, key: inout [UInt8],
                     value: inout [UInt8]) throws {
        Records.writeKey(i, order, into: &key)
        value.removeAll(keepingCapacity: true)
        Records.appendValue(Fields(i), to: &value)
        let rc = key.withUnsafeMutableBytes { k in
            value.withUnsafeMutableBytes { v in
                var mk = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
                var mv = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
                return mdb_put(txn, dbi, &mk, &mv, 0)
            }
        }
        try Self.check(rc, "put")
    }

    func loadBatch(_ range: Range<Int>, order: KeyOrder) throws {
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        value.reserveCapacity(256)
        do {
            for i in range { try put(txn, i, order, key: &key, value: &value) }
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try Self.check(mdb_txn_commit(txn), "txn_commit")
    }

    func syncAll() throws { try Self.check(mdb_env_sync(env, 1), "env_sync") }

    func get(_ key: [UInt8]) throws -> Int? {
        try Self.check(mdb_txn_renew(readTxn), "txn_renew")
        defer { mdb_txn_reset(readTxn) }
        var mv = MDB_val()
        let rc = key.withUnsafeBytes { k in
            var mk = MDB_val(mv_size: k.count, mv_data: UnsafeMutableRawPointer(mutating: k.baseAddress))
            return mdb_get(readTxn, dbi, &mk, &mv)
        }
        if rc == MDB_NOTFOUND { return nil }
        try Self.check(rc, "get")
        return keep(Array(UnsafeRawBufferPointer(start: mv.mv_data, count: mv.mv_size)))
    }

    func scanAll() throws -> (count: Int, bytes: Int) {
        try Self.check(mdb_txn_renew(readTxn), "txn_renew")
        defer { mdb_txn_reset(readTxn) }
        var cursor: OpaquePointer?
        try Self.check(mdb_cursor_open(readTxn, dbi, &cursor), "cursor_open")
        defer { mdb_cursor_close(cursor) }
        var mk = MDB_val()
        var mv = MDB_val()
        var count = 0
        var bytes = 0
        var rc = mdb_cursor_get(cursor, &mk, &mv, MDB_FIRST)
        while rc == 0 {
            count += 1
            bytes += mv.mv_size
            rc = mdb_cursor_get(cursor, &mk, &mv, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try Self.check(rc, "cursor_get") }
        return (count, bytes)
    }

    func reopen() throws {
        try close()
        try open()
    }

    func close() throws {
        guard env != nil else { return }
        mdb_txn_abort(readTxn)
        readTxn = nil
        mdb_env_close(env)
        env = nil
    }

    var supportsCompaction: Bool { true }

    /// LMDB never shrinks its file; its compaction is a compacting copy (`mdb_env_copy2` with MDB_CP_COMPACT).
    func compact(scratch: String) throws -> String {
        try makeDirectory(scratch)
        try Self.check(mdb_env_copy2(env, scratch, UInt32(MDB_CP_COMPACT)), "env_copy2")
        return scratch
    }

    func makeCommitter() throws -> Committer { self }

    func commitOne(_ i: Int) throws {
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        do { try put(txn, i, .random, key: &key, value: &value) } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try Self.check(mdb_txn_commit(txn), "txn_commit")
    }

    func finish() throws {}
}
