import Foundation


/// The phases a child process runs, one per process. The parent runs every engine's loads, then (`--rounds`
/// times) every engine's reads and commits, then every engine's compaction.
let enginePhases = loadPhases + roundPhases + ["compact"]
/// The phases run once per engine, before the rounds; the random-key load leaves the store the reads use.
let loadPhases = ["load_seq", "load_random"]
/// The phases run once per engine in every round.
let roundPhases = ["read", "commit"]

/// Sizes of one run.
struct RunSize {
    var records: Int
    var commits: Int
    var queries: Int
    var fdatasyncOps: Int
}

/// Runs one phase in this (child) process and writes its results to stdout as tab-separated lines.
struct PhaseRunner {
    let engine: EngineKind?
    let directory: String
    let size: RunSize
    let batchSize = 1000

    private func emit(_ workload: String, _ value: Double, _ unit: String) {
        print("result\t\(workload)\t\(value)\t\(unit)")
        fflush(stdout)
    }

    private func note(_ text: String) {
        FileHandle.standardError.write(Data("    \(engine?.rawValue ?? "os"): \(text)\n".utf8))
    }

    private func path(_ suffix: String) -> String { directory + "/" + (engine?.rawValue ?? "os") + "-" + suffix }

    func run(_ phase: String) throws {
        switch phase {
        case "fdatasync":
            emit("fdatasync_4k", try fdatasyncRate(directory: directory, count: size.fdatasyncOps), "ops/s")
            print("context\trecords_built\t\(recordBuildRate())\trecords/s")
        case "load_seq": try load(order: .sequential)
        case "load_random": try load(order: .random)
        case "read": try read()
        case "compact": try compact()
        case "commit": try commits()
        default: throw BenchError.failed("unknown phase \(phase)")
        }
    }

    /// How many records per second the loads' own work builds on one thread, with no store: each record's
    /// fields, key and value, as every engine's loader builds them (each load's ceiling). Half a second's worth at
    /// least, after a warm-up.
    private func recordBuildRate() -> Double {
        var key = [UInt8](repeating: 0, count: 16)
        var value: [UInt8] = []
        value.reserveCapacity(256)
        var bytes = 0
        func build(_ range: Range<Int>) {
            for i in range {
                Records.writeKey(i, .random, into: &key)
                value.removeAll(keepingCapacity: true)
                Records.appendValue(Fields(i), to: &value)
                bytes &+= value.count &+ Int(key[0])
            }
        }
        build(0 ..< 10_000)
        var built = 0
        let started = now()
        repeat {
            build(built ..< built + 100_000)
            built += 100_000
        } while now() - started < 0.5
        let rate = Double(built) / (now() - started)
        return bytes == 0 ? 0 : rate   // `bytes` keeps the work from being optimized away
    }

    private func requireEngine() throws -> EngineKind {
        guard let engine else { throw BenchError.failed("this phase needs --engine") }
        return engine
    }

    private func load(order: KeyOrder) throws {
        let engine = try requireEngine()
        let store = path(order == .sequential ? "seq" : "random")
        removeTree(store)
        let db = try engine.open(at: store, durable: false, records: size.records)
        let before = residentBytes()
        let seconds = try timed {
            for start in stride(from: 0, to: size.records, by: batchSize) {
                try db.loadBatch(start..<min(start + batchSize, size.records), order: order)
            }
            try db.syncAll()
        }
        let after = residentBytes()
        try db.close()
        note((order == .sequential ? "load_seq " : "load_random ") + String(format: "%.2f s", seconds))
        if order == .sequential {
            emit("load_seq", Double(size.records) / seconds, "records/s")
            removeTree(store)
        } else {
            emit("load_random", Double(size.records) / seconds, "records/s")
            emit("memory_per_record_bytes", Double(after - before) / Double(size.records), "bytes")
            emit("size_after_load_bytes", Double(diskUsage(store)), "bytes")
        }
    }

    private func read() throws {
        let engine = try requireEngine()
        let db = try engine.open(at: path("random"), durable: false, records: size.records)
        defer { try? db.close() }

        if readPhaseWanted("scan") {
            var scanned = (count: 0, bytes: 0)
            let scanSeconds = try timed { scanned = try db.scanAll() }
            guard scanned.count == size.records else {
                throw BenchError.failed("scan saw \(scanned.count) records, expected \(size.records)")
            }
            emit("scan", Double(scanned.count) / scanSeconds, "records/s")
        }

        var random = FastRandom(seed: 42)
        if readPhaseWanted("get_random") {
            var missing = 0
            let gets = size.records
            let getSeconds = try timed {
                missing = try db.getEach(gets) { _ in Records.key(random.next(below: size.records), .random) }.missing
            }
            guard missing == 0 else { throw BenchError.failed("\(missing) of \(gets) gets found nothing") }
            emit("get_random", Double(gets) / getSeconds, "gets/s")
        }

        // Opt-in (not part of the report): gets of which 9 in 10 go to the records whose keys start with a byte
        // below 26, about a tenth of the key space and of the pages, which fits every engine's cache; the rest
        // are uniformly random. A cache's admission rule shows here: uniformly random gets must not cost the
        // pages read again and again their place.
        if readPhases?.contains("get_hot") == true {
            var hot: [Int] = []
            for i in 0..<size.records where Records.key(i, .random)[0] < 26 { hot.append(i) }
            if hot.isEmpty { hot = [0] }
            var missing = 0
            let gets = size.records
            let seconds = try timed {
                missing = try db.getEach(gets) { _ in
                    let i = random.next(below: 10) == 0 ? random.next(below: size.records)
                        : hot[random.next(below: hot.count)]
                    return Records.key(i, .random)
                }.missing
            }
            guard missing == 0 else { throw BenchError.failed("\(missing) of \(gets) gets found nothing") }
            emit("get_hot", Double(gets) / seconds, "gets/s")
        }

        if db.supportsSecondaryIndexes && (readPhaseWanted("index_eq") || readPhaseWanted("index_range")) {
            var short = 0
            let eqSeconds = try timed {
                short += try db.queryGenreEach(size.queries, limit: 20) { random.next(below: Words.genres.count) }
            }
            let rangeSeconds = try timed {
                // Ratings run 0...1000; start low enough that 20 records always follow.
                short += try db.queryRatingEach(size.queries, limit: 20) { random.next(below: 990) }
            }
            guard short == 0 else { throw BenchError.failed("\(short) index queries returned fewer than 20 records") }
            emit("index_eq", Double(size.queries) / eqSeconds, "queries/s")
            emit("index_range", Double(size.queries) / rangeSeconds, "queries/s")
        }

        guard readPhaseWanted("reopen_ms") else { return }
        let firstKey = Records.key(0, .random)
        let reopenSeconds = try timed {
            try db.reopen()
            guard try db.get(firstKey) != nil else { throw BenchError.failed("record 0 missing after reopen") }
        }
        emit("reopen_ms", reopenSeconds * 1000, "ms")
    }

    private func compact() throws {
        let engine = try requireEngine()
        let store = path("random")
        defer { removeTree(store) }
        let db = try engine.open(at: store, durable: false, records: size.records)
        guard db.supportsCompaction else {
            try db.close()
            return
        }
        let scratch = path("compacted")
        defer { removeTree(scratch) }
        var target = ""
        let seconds = try timed { target = try db.compact(scratch: scratch) }
        try db.close()
        note(String(format: "compaction %.2f s", seconds))
        emit("size_after_compaction_bytes", Double(diskUsage(target)), "bytes")
    }

    private func commits() throws {
        let engine = try requireEngine()
        let count = size.commits

        // The disk's sync latency drifts (shared host): measure the append+fdatasync ceiling again right here.
        let probe = try fdatasyncRate(directory: directory, count: max(50, size.fdatasyncOps / 10))
        print("context\tfdatasync_4k\t\(probe)\tops/s")

        let single = path("commit1")
        removeTree(single)
        do {
            let db = try engine.open(at: single, durable: true, records: count)
            let committer = try db.makeCommitter()
            let seconds = try timed {
                try committer.commitEach(stride(from: 0, to: count, by: 1))
            }
            try committer.finish()
            let stored = try db.scanAll().count
            try db.close()
            guard stored == count else { throw BenchError.failed("\(stored) records after \(count) commits") }
            emit("commit_single", Double(count) / seconds, "commits/s")
            note(String(format: "commit_single %.2f s", seconds))
        }
        removeTree(single)

        let multi = path("commit8")
        removeTree(multi)
        do {
            let writers = 8
            let db = try engine.open(at: multi, durable: true, records: count)
            let committers = try (0..<writers).map { _ in try db.makeCommitter() }
            let errors = ErrorBox()
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for w in 0..<writers {
                done.enter()
                let committer = committers[w]
                let thread = Thread {
                    start.wait()
                    do {
                        try committer.commitEach(stride(from: w, to: count, by: writers))
                    } catch {
                        errors.record(error)
                    }
                    done.leave()
                }
                thread.stackSize = 1 << 20
                thread.start()
            }
            let began = now()
            for _ in 0..<writers { start.signal() }
            done.wait()
            let seconds = now() - began
            if let error = errors.first { throw error }
            for committer in committers { try committer.finish() }
            let syncs = db.syncCount
            let stored = try db.scanAll().count
            try db.close()
            guard stored == count else { throw BenchError.failed("\(stored) records after \(count) commits") }
            emit("commit_8_writers", Double(count) / seconds, "commits/s")
            note(String(format: "commit_8_writers %.2f s", seconds)
                 + (syncs.map { String(format: ", %.2f commits per fdatasync", Double(count) / Double(max($0, 1))) } ?? ""))
        }
        removeTree(multi)
    }
}

final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [Error] = []

    func record(_ error: Error) {
        lock.lock()
        errors.append(error)
        lock.unlock()
    }

    var first: Error? {
        lock.lock()
        defer { lock.unlock() }
        return errors.first
    }
}

/// The read child's phases to run: all of them, or those `LUCID_READ_PHASES` names (comma-separated: `scan`,
/// `get_random`, `index_eq`, `index_range`, `reopen_ms`), to profile one phase alone. The two index phases run
/// together. `get_hot` (skewed gets) runs only when named.
private let readPhases: Set<String>? = ProcessInfo.processInfo.environment["LUCID_READ_PHASES"]
    .map { Set($0.split(separator: ",").map(String.init)) }

private func readPhaseWanted(_ phase: String) -> Bool { readPhases?.contains(phase) ?? true }
