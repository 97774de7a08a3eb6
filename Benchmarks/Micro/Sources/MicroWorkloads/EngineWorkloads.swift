import Foundation
@_spi(Fuzzing) import LucidEngine

// Hot paths of LucidEngine. Each store workload opens its own store in a temporary directory (in `make`, outside
// the measurement) and removes it in `dispose`.
//
// Sync mode .none: these measure the engine's CPU path (encoding, compression, B-tree, page cache), not the disk's
// fdatasync latency, which lucid-compare's commit_single/commit_8_writers cover.
//
// The B-tree is internal: its insert and lookup are measured through the public Engine API (commit and get, which
// also pay the write path's log page and the read path's snapshot), and alone through the `@_spi(Fuzzing)` type
// `FuzzingSupport.PrimaryTree` (the engine's primary-index tree). Pages are internal too: page encoding and
// decoding with LZ4 are measured through the `@_spi(Fuzzing)` entry points the fuzz targets use
// (`FuzzingSupport.encodePages`, the writer's PageBuilder; `decodePage`, the recovery scanner's full validation),
// which add a conversion from and to plain record values around the engine's own code.

private let keyspace = "micro"
private let records = 100_000

/// The multiplier that scatters key numbers (the golden ratio's 64-bit fraction).
private let scatter: UInt64 = 0x9E37_79B9_7F4A_7C15

/// Key `i` in ascending order: `i`, then a hash of it.
private func key(_ i: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(truncatingIfNeeded: i).bigEndian) { Array($0) }
        + withUnsafeBytes(of: (UInt64(truncatingIfNeeded: i) &* scatter).bigEndian) { Array($0) }
}

private func value(_ i: Int) -> [UInt8] {
    var v = Array(#"{"id":"#.utf8) + Array(String(i).utf8)
    v += Array(#","title":"The Silent Harbor of Glass","author":"Mara Okafor","year":1987,"pages":312,"#.utf8)
    v += Array(#""rating":734,"published":1712345678901,"genre":"mystery","lang":"en","stock":17}"#.utf8)
    return v
}

private let genres = ["mystery", "fantasy", "romance", "thriller", "history", "poetry", "science fiction",
                      "biography", "horror", "travel", "cooking", "philosophy"]

/// Record `i`'s index terms in the workloads that carry them: a genre and a rating, drawn from `i`'s hash.
private func indexTerms(_ i: Int) -> [IndexTerm] {
    let h = UInt64(truncatingIfNeeded: i) &* scatter
    return [IndexTerm(index: "genre", value: .string(genres[Int(h >> 59) % genres.count])),
            IndexTerm(index: "rating", value: .int(Int64((h >> 20) % 100)))]
}

/// An engine under a fresh temporary directory preloaded with `records` records (in batches of 1000), and where
/// the next operation continues: the next new key to insert, the next scan's start key.
private final class EngineRunner: SynchronousMicroRunner, @unchecked Sendable {
    let directory: String
    let engine: Engine
    var next = records
    var scanStart = 0
    let body: (EngineRunner, Int) throws -> Void

    init(_ body: @escaping (EngineRunner, Int) throws -> Void) throws {
        directory = NSTemporaryDirectory() + "lucid-micro-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        var options = EngineOptions()
        options.syncMode = .none
        engine = try Engine.open(at: directory, options: options)
        self.body = body
        var batch = WriteBatch()
        for i in 0..<records {
            batch.put(value(i), forKey: key(i), in: keyspace)
            if batch.count == 1000 {
                try engine.commitAndWait(batch)
                batch = WriteBatch()
            }
        }
        if !batch.isEmpty { try engine.commitAndWait(batch) }
    }

    func runNow(_ operations: Int) throws { try body(self, operations) }

    func dispose() {
        try? engine.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// One page's worth of records (about 14 KiB raw, on the default 16 KiB pages), as the writer would append them.
private func pageRecords() -> [FuzzingSupport.Record] {
    (0..<60).map { i in
        FuzzingSupport.Record(kind: 1, sequence: UInt64(1 + i), keyspace: Array(keyspace.utf8), key: key(i),
                              value: value(i), terms: [])
    }
}

private let pageSize = 16 << 10
private let pageSalt: UInt32 = 0x5EED_CAFE

/// Encodes the page the page workloads use and checks that it is one LZ4-compressed page holding the records.
private func benchmarkPage() -> (records: [FuzzingSupport.Record], page: [UInt8]) {
    let contents = pageRecords()
    let page = FuzzingSupport.encodePages(contents, salt: pageSalt, firstLSN: 1, syncedLSN: 0, pageSize: pageSize)
    guard case .success(let decoded) = FuzzingSupport.decodePage(page, salt: pageSalt), decoded.isCompressed,
          decoded.totalLength == page.count, decoded.records == contents
    else { fatalError("the benchmark page is not one LZ4-compressed page holding the records") }
    return (contents, page)
}

/// Writes key `i` in random order into `key` (16 bytes, written in place: no allocation): a hash of `i`, then `i`
/// (the halves of ``key(_:)`` swapped). Public for `btree-lookup-timing`, which fills its trees the same way.
public func setRandomKey(_ i: Int, in key: inout [UInt8]) {
    let n = UInt64(truncatingIfNeeded: i)
    key.withUnsafeMutableBytes {
        $0.storeBytes(of: (n &* scatter).bigEndian, toByteOffset: 0, as: UInt64.self)
        $0.storeBytes(of: n.bigEndian, toByteOffset: 8, as: UInt64.self)
    }
}

/// The engine's primary-index B-tree (through the fuzzing SPI) holding `records` keys in random order: keys
/// `oldest..<next`.
private final class TreeRunner: SynchronousMicroRunner, @unchecked Sendable {
    var tree = FuzzingSupport.PrimaryTree()
    var oldest = 0
    var next = records
    /// The key an operation inserts, removes or looks up, rewritten in place each time.
    var key = [UInt8](repeating: 0, count: 16)
    let body: (TreeRunner, Int) -> Void

    init(_ body: @escaping (TreeRunner, Int) -> Void) {
        for i in 0..<records {
            setRandomKey(i, in: &key)
            tree.insert(key, sequence: UInt64(i))
        }
        guard tree.count == records else { fatalError("the benchmark tree lost keys") }
        self.body = body
    }

    func runNow(_ operations: Int) throws { body(self, operations) }
}

extension MicroWorkload {
    /// LucidEngine's workloads (target `LucidEngineMicro`).
    public static let engine: [MicroWorkload] = {
        // B-tree insert: a batch of `perCommit` new keys (appended after the preloaded ones); with `terms`, each
        // record also carries a genre (one of 12 strings) and a rating (one of 100 integers), so the commit also
        // fills two secondary indexes.
        func commits(_ name: String, perCommit: Int, operations: Int, mallocSlack: Int?,
                     terms: Bool = false) -> MicroWorkload {
            .synchronous(name, operationsPerIteration: operations, mallocSlack: mallocSlack,
                          countedOperations: perCommit == 1 ? 2_000 : 20) {
                try EngineRunner { runner, operations in
                    for _ in 0..<operations {
                        var batch = WriteBatch()
                        for i in runner.next..<(runner.next + perCommit) {
                            batch.put(value(i), forKey: key(i), in: keyspace, indexTerms: terms ? indexTerms(i) : [])
                        }
                        runner.next += perCommit
                        try runner.engine.commitAndWait(batch)
                    }
                }
            }
        }
        return [
            commits("commit-batch-1000", perCommit: 1000, operations: 1, mallocSlack: 100),
            commits("commit-batch-1000-terms", perCommit: 1000, operations: 1, mallocSlack: 100, terms: true),
            commits("put-single", perCommit: 1, operations: 1000, mallocSlack: nil),
            // B-tree lookup: a present key drawn from a fixed-seed generator, pages warm in the cache.
            .synchronous("get-random-warm", operationsPerIteration: 1000) {
                try EngineRunner { runner, operations in
                    var draws = Draws()
                    for _ in 0..<operations { consume(try runner.engine.get(key(draws.next(records)), in: keyspace)) }
                }
            },
            // The B-tree alone, 100k keys of 16 bytes in random order: an insert of a new key and the removal of the
            // oldest one (so that the tree keeps its size however long the run), and a lookup of a present key drawn
            // from a fixed-seed generator.
            .synchronous("btree-insert-remove-random", operationsPerIteration: 1000) {
                TreeRunner { runner, operations in
                    for _ in 0..<operations {
                        setRandomKey(runner.next, in: &runner.key)
                        runner.tree.insert(runner.key, sequence: UInt64(runner.next))
                        runner.next += 1
                        setRandomKey(runner.oldest, in: &runner.key)
                        runner.tree.remove(runner.key)
                        runner.oldest += 1
                    }
                }
            },
            .synchronous("btree-lookup-random", operationsPerIteration: 1000) {
                TreeRunner { runner, operations in
                    var draws = Draws()
                    for _ in 0..<operations {
                        setRandomKey(draws.next(records), in: &runner.key)
                        consume(runner.tree.sequence(forKey: runner.key))
                    }
                }
            },
            // A scan of 1000 records from a start key that moves by 7919 records per scan.
            .synchronous("scan-1000", mallocSlack: 100, countedOperations: 200) {
                try EngineRunner { runner, operations in
                    for _ in 0..<operations {
                        consume(try runner.engine.scan(in: keyspace, range: KeyRange(lower: .included(key(runner.scanStart))),
                                                       limit: 1000))
                        runner.scanStart = (runner.scanStart + 7919) % (records - 1000)
                    }
                }
            },
            // Page encode and decode with LZ4 (through the fuzzing SPI; see the note at the top).
            .synchronous("page-encode-lz4", countedOperations: 200) {
                let contents = benchmarkPage().records
                return ClosureRunner { operations in
                    for _ in 0..<operations {
                        consume(FuzzingSupport.encodePages(contents, salt: pageSalt, firstLSN: 1, syncedLSN: 0,
                                                           pageSize: pageSize))
                    }
                }
            },
            .synchronous("page-decode-lz4", countedOperations: 200) {
                let page = benchmarkPage().page
                return ClosureRunner { operations in
                    for _ in 0..<operations { consume(FuzzingSupport.decodePage(page, salt: pageSalt)) }
                }
            },
        ]
    }()
}
