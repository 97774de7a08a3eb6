import Benchmark
import Foundation
import LucidEngine

// Hot paths of LucidEngine through its public API. Each benchmark opens its own store in a temporary directory
// (in setup, outside the measurement) and removes it in teardown.
//
// Sync mode .none: these measure the engine's CPU path (encoding, compression, B-tree, page cache), not the disk's
// fdatasync latency, which lucid-compare's commit_single/commit_8_writers cover.

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

    func open() throws { store = try Store(preloaded: records) }

    func dispose() {
        store?.dispose()
        store = nil
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        warmupIterations: 3,
        maxDuration: .seconds(3),
        maxIterations: 10_000
    )

    let holder = Holder()

    Benchmark("commit 1000-record batch") { benchmark in
        var next = records
        for _ in benchmark.scaledIterations {
            var batch = WriteBatch()
            for i in next..<(next + 1000) { batch.put(value(i), forKey: key(i), in: keyspace) }
            next += 1000
            try holder.engine.commitAndWait(batch)
        }
    } setup: {
        try holder.open()
    } teardown: {
        holder.dispose()
    }

    Benchmark("get (random key, warm)", configuration: .init(scalingFactor: .kilo)) { benchmark in
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

    Benchmark("scan 1000 records") { benchmark in
        var start = 0
        for _ in benchmark.scaledIterations {
            let page = try holder.engine.scan(in: keyspace, range: KeyRange(lower: .included(key(start))), limit: 1000)
            blackHole(page)
            start = (start + 7919) % (records - 1000)
        }
    } setup: {
        try holder.open()
    } teardown: {
        holder.dispose()
    }
}
