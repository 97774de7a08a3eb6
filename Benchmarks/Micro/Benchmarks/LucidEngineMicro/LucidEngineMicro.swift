import Benchmark
import Foundation
import LucidEngine
@_spi(Fuzzing) import LucidEngine
import MicroSupport

// Hot paths of LucidEngine. Each store benchmark opens its own store in a temporary directory (in setup, outside
// the measurement) and removes it in teardown.
//
// Sync mode .none: these measure the engine's CPU path (encoding, compression, B-tree, page cache), not the disk's
// fdatasync latency, which lucid-compare's commit_single/commit_8_writers cover.
//
// The B-tree is internal: its insert and lookup are measured through the public Engine API (commit and get, which
// also pay the write path's log page and the read path's snapshot). Pages are internal too: page encoding and
// decoding with LZ4 are measured through the `@_spi(Fuzzing)` entry points the fuzz targets use
// (`FuzzingSupport.encodePages`, the writer's PageBuilder; `decodePage`, the recovery scanner's full validation),
// which add a conversion from and to plain record values around the engine's own code.

private let keyspace = "micro"
private let records = 100_000

private func key(_ i: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt64(truncatingIfNeeded: i).bigEndian) { Array($0) }
        + withUnsafeBytes(of: (UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15).bigEndian) { Array($0) }
}

private func value(_ i: Int) -> [UInt8] {
    var v = Array(#"{"id":"#.utf8) + Array(String(i).utf8)
    v += Array(#","title":"The Silent Harbor of Glass","author":"Mara Okafor","year":1987,"pages":312,"#.utf8)
    v += Array(#""rating":734,"published":1712345678901,"genre":"mystery","lang":"en","stock":17}"#.utf8)
    return v
}

/// A store under a fresh temporary directory, closed and removed by `dispose()`.
private final class Store: @unchecked Sendable {
    let directory: String
    let engine: Engine

    init(preloaded count: Int) throws {
        directory = NSTemporaryDirectory() + "lucid-micro-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        var options = EngineOptions()
        options.syncMode = .none
        engine = try Engine.open(at: directory, options: options)
        var batch = WriteBatch()
        for i in 0..<count {
            batch.put(value(i), forKey: key(i), in: keyspace)
            if batch.count == 1000 {
                try engine.commitAndWait(batch)
                batch = WriteBatch()
            }
        }
        if !batch.isEmpty { try engine.commitAndWait(batch) }
    }

    func dispose() {
        try? engine.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Holds a benchmark's store between its setup and teardown hooks (teardown takes no state).
private final class Holder: @unchecked Sendable {
    var store: Store?
    var engine: Engine { store!.engine }
    /// Where the next iteration continues (the closure runs once per iteration): the next new key to insert, and
    /// the scan's next start key.
    var next = records
    var scanStart = 0

    func open() throws {
        store = try Store(preloaded: records)
        next = records
        scanStart = 0
    }

    func dispose() {
        store?.dispose()
        store = nil
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

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = micro()

    let holder = Holder()

    // B-tree insert: a batch of 1000 new keys (appended after the preloaded ones), and a single put.
    func commits(_ name: String, perCommit: Int, configuration: Benchmark.Configuration) {
        Benchmark(name, configuration: configuration) { benchmark in
            var next = holder.next
            for _ in benchmark.scaledIterations {
                var batch = WriteBatch()
                for i in next..<(next + perCommit) { batch.put(value(i), forKey: key(i), in: keyspace) }
                next += perCommit
                try holder.engine.commitAndWait(batch)
            }
            holder.next = next
        } setup: {
            try holder.open()
        } teardown: {
            holder.dispose()
        }
    }
    commits("commit-batch-1000", perCommit: 1000, configuration: micro(mallocSlack: 100))
    commits("put-single", perCommit: 1, configuration: micro(.kilo))

    // B-tree lookup: a present key drawn from a fixed-seed generator, pages warm in the cache.
    Benchmark("get-random-warm", configuration: micro(.kilo)) { benchmark in
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        for _ in benchmark.scaledIterations {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            blackHole(try holder.engine.get(key(Int(state >> 33) % records), in: keyspace))
        }
    } setup: {
        try holder.open()
    } teardown: {
        holder.dispose()
    }

    // A scan of 1000 records from a start key that moves by 7919 records per iteration.
    Benchmark("scan-1000", configuration: micro(mallocSlack: 100)) { benchmark in
        var start = holder.scanStart
        for _ in benchmark.scaledIterations {
            let page = try holder.engine.scan(in: keyspace, range: KeyRange(lower: .included(key(start))), limit: 1000)
            blackHole(page)
            start = (start + 7919) % (records - 1000)
        }
        holder.scanStart = start
    } setup: {
        try holder.open()
    } teardown: {
        holder.dispose()
    }

    // Page encode and decode with LZ4 (through the fuzzing SPI; see the note at the top).
    let pageContents = pageRecords()
    let page = FuzzingSupport.encodePages(pageContents, salt: pageSalt, firstLSN: 1, syncedLSN: 0, pageSize: pageSize)
    guard case .success(let decoded) = FuzzingSupport.decodePage(page, salt: pageSalt), decoded.isCompressed,
          decoded.totalLength == page.count, decoded.records == pageContents
    else { fatalError("the benchmark page is not one LZ4-compressed page holding the records") }

    Benchmark("page-encode-lz4") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(FuzzingSupport.encodePages(pageContents, salt: pageSalt, firstLSN: 1, syncedLSN: 0,
                                                 pageSize: pageSize))
        }
    }

    Benchmark("page-decode-lz4") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(FuzzingSupport.decodePage(page, salt: pageSalt))
        }
    }
}
