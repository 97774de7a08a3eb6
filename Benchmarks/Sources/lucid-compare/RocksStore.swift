import CRocksDB
#if canImport(Glibc)
import Glibc
#endif

/// RocksDB (Debian librocksdb) through its C API `rocksdb/c.h`: default column family, key -> JSON value.
/// No secondary indexes.
final class RocksStore: BenchStore, Committer {
    static let settings = "RocksDB: WriteOptions sync=false during the load (WAL written, not synced) then "
        + "FlushWAL(sync), leveled compaction with dynamic level bytes, 2 background jobs, LZ4, "
        + "\(engineCacheBytes >> 20) MiB LRU block cache, 10-bit bloom filter, 64 MiB memtable, "
        + "gets via rocksdb_get_pinned, scan with an iterator"
    static let durableSettings = "RocksDB: WriteOptions sync=true (WAL fdatasync per write group)"

    private let path: String
    private let options: OpaquePointer
    private let tableOptions: OpaquePointer
    private let cache: OpaquePointer
    private let writeOptions: OpaquePointer
    private let readOptions: OpaquePointer
    private var db: OpaquePointer?

    init(path: String, durable: Bool) throws {
        self.path = path
        options = rocksdb_options_create()
        rocksdb_options_set_create_if_missing(options, 1)
        rocksdb_options_increase_parallelism(options, 2)
        rocksdb_options_set_max_background_jobs(options, 2)
        rocksdb_options_set_level_compaction_dynamic_level_bytes(options, 1)
        rocksdb_options_set_compression(options, Int32(rocksdb_lz4_compression))
        rocksdb_options_set_write_buffer_size(options, 64 << 20)
        rocksdb_options_set_bytes_per_sync(options, 1 << 20)
        tableOptions = rocksdb_block_based_options_create()
        cache = rocksdb_cache_create_lru(engineCacheBytes)
        rocksdb_block_based_options_set_block_cache(tableOptions, cache)
        rocksdb_block_based_options_set_filter_policy(tableOptions, rocksdb_filterpolicy_create_bloom(10))
        rocksdb_block_based_options_set_format_version(tableOptions, 5)
        rocksdb_options_set_block_based_table_factory(options, tableOptions)
        writeOptions = rocksdb_writeoptions_create()
        rocksdb_writeoptions_set_sync(writeOptions, durable ? 1 : 0)
        readOptions = rocksdb_readoptions_create()
        try open()
    }

    deinit {
        if db != nil { rocksdb_close(db) }
        rocksdb_readoptions_destroy(readOptions)
        rocksdb_writeoptions_destroy(writeOptions)
        rocksdb_options_destroy(options)
        rocksdb_block_based_options_destroy(tableOptions)
        rocksdb_cache_destroy(cache)
    }

    private static func check(_ error: UnsafeMutablePointer<CChar>?, _ what: String) throws {
        guard let error else { return }
        let message = String(cString: error)
        rocksdb_free(error)
        throw BenchError.failed("rocksdb \(what): \(message)")
    }

    private func open() throws {
        var error: UnsafeMutablePointer<CChar>?
        db = rocksdb_open(options, path, &error)
        try Self.check(error, "open")
    }

    private func write(_ batch: OpaquePointer) throws {
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_write(db, writeOptions, batch, &error)
        try Self.check(error, "write")
    }

    private static func put(_ i: Int, _ order: KeyOrder, into batch: OpaquePointer, key: inout [UInt8],
                            value: inout [UInt8]) {
        Records.writeKey(i, order, into: &key)
        value.removeAll(keepingCapacity: true)
        Records.appendValue(Fields(i), to: &value)
        key.withUnsafeBytes { k in
            value.withUnsafeBytes { v in
                rocksdb_writebatch_put(batch, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count,
                                       v.baseAddress!.assumingMemoryBound(to: CChar.self), v.count)
            }
        }
    }

    func loadBatch(_ range: Range<Int>, order: KeyOrder) throws {
        let batch = rocksdb_writebatch_create()!
        defer { rocksdb_writebatch_destroy(batch) }
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        value.reserveCapacity(256)
        for i in range { Self.put(i, order, into: batch, key: &key, value: &value) }
        try write(batch)
    }

    func syncAll() throws {
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_flush_wal(db, 1, &error)
        try Self.check(error, "flush_wal")
    }

    func get(_ key: [UInt8]) throws -> Int? {
        var error: UnsafeMutablePointer<CChar>?
        let slice = key.withUnsafeBytes { k in
            rocksdb_get_pinned(db, readOptions, k.baseAddress!.assumingMemoryBound(to: CChar.self), k.count, &error)
        }
        try Self.check(error, "get")
        guard let slice else { return nil }
        defer { rocksdb_pinnableslice_destroy(slice) }
        var length = 0
        let pointer = rocksdb_pinnableslice_value(slice, &length)
        return keep(Array(UnsafeRawBufferPointer(start: pointer, count: length)))
    }

    func scanAll() throws -> (count: Int, bytes: Int) {
        let iterator = rocksdb_create_iterator(db, readOptions)
        defer { rocksdb_iter_destroy(iterator) }
        var count = 0
        var bytes = 0
        rocksdb_iter_seek_to_first(iterator)
        while rocksdb_iter_valid(iterator) != 0 {
            var length = 0
            _ = rocksdb_iter_value(iterator, &length)
            count += 1
            bytes += length
            rocksdb_iter_next(iterator)
        }
        var error: UnsafeMutablePointer<CChar>?
        rocksdb_iter_get_error(iterator, &error)
        try Self.check(error, "iterate")
        return (count, bytes)
    }

    func reopen() throws {
        try close()
        try open()
    }

    func close() throws {
        guard db != nil else { return }
        rocksdb_close(db)
        db = nil
    }

    var supportsCompaction: Bool { true }

    /// CompactRange over the whole key space, bottommost level included (kForceOptimized; the default skips it,
    /// which after a load is where almost all the data is), then the store's own directory is measured.
    func compact(scratch: String) throws -> String {
        let compactOptions = rocksdb_compactoptions_create()
        defer { rocksdb_compactoptions_destroy(compactOptions) }
        rocksdb_compactoptions_set_exclusive_manual_compaction(compactOptions, 1)
        rocksdb_compactoptions_set_bottommost_level_compaction(compactOptions, 3)  // kForceOptimized
        rocksdb_compact_range_opt(db, compactOptions, nil, 0, nil, 0)
        return path
    }

    func makeCommitter() throws -> Committer { self }

    func commitOne(_ i: Int) throws {
        let batch = rocksdb_writebatch_create()!
        defer { rocksdb_writebatch_destroy(batch) }
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        Self.put(i, .random, into: batch, key: &key, value: &value)
        try write(batch)
    }

    func finish() throws {}
}
