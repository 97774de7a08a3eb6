// FuzzOperations' check: programs of operations, crashes and compactions against a model (shared
// with the Fuzz package: see FuzzInput.swift).

import LucidEngine
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Input: a header byte (sync mode `always` or `none`; no page cache, a tiny one or 1 MiB; pages compressed whole or
/// records compressed one by one against each segment's dictionary), then operations: puts, deletes,
/// batches, large puts of up to 128 KiB (a few roll the 1 MiB segments), reopen (close + open), crash
/// (`FaultFileSystem.crash` with one of the four policies, then open), sync, verify, seal (`sealActiveSegment`) and
/// compaction (every sealed segment, or a fuzzer-chosen adjacent run of them, so deletions are sometimes kept).
///
/// Checks after every step: the engine's contents (scan, count, get) equal the model. After a crash, open succeeds
/// and yields the model after some commit between the last durable one and the last acknowledged one (exactly the
/// last acknowledged one with `keepAll`); `verify()` is ok after every reopen and at the end.
/// After a compaction the contents are unchanged and `verify()` is ok; crashes after compactions use the same rule.
/// A get step may also take a snapshot and hold it (until a reopen or a crash), or check the one held: its point
/// reads of every key the programs can make (`get`, `contains`, `values(forKeys:)`, `handles(forKeys:)` then
/// `values(of:)`) equal the model of its moment, whatever commits and compactions came since (the snapshot reads
/// through the point index while nothing changed, through its own trees after).
enum OperationChecks {
    static let keyspaces = ["a", "b", "ü-keyspace"]
    /// Every key `key(_:)` makes: 0 to 3 bytes of `a` ... `d` (85 keys).
    static let allKeys: [[UInt8]] = (0...3).flatMap { length in
        (0 ..< (1 << (2 * length))).map { n in (0 ..< length).map { i in UInt8(ascii: "a") + UInt8((n >> (2 * i)) & 3) } }
    }

    static func check(_ bytes: [UInt8]) throws {
        var input = FuzzInput(bytes)
        let header = input.byte()
        let sync: EngineOptions.SyncMode = header & 1 == 0 ? .always : .none
        // No cache (every read decodes only its value), 64 KiB (a page per shard: full at once, so reads take
        // every path: value only, cached on a second miss, hit) or 1 MiB (small stores fit).
        let cache = header & 2 != 0 ? 0 : header & 4 != 0 ? 64 << 10 : 1 << 20
        // Pages compressed whole, or records compressed one by one against each segment's dictionary.
        let compression: EngineOptions.PageCompression = header & 8 != 0 ? .lz4Records : .lz4
        var fs = FaultFileSystem()
        let dir = "/ops"
        func open() throws -> Engine {
            try Engine.open(at: dir, options: FuzzHelpers.options(fs, sync: sync, pageCacheBytes: cache, compression: compression))
        }
        var engine = try open()
        var model = StoreModel()
        // Models after each acknowledged commit since the last one known durable (index 0 = durable).
        var history: [StoreModel] = [model]
        var version = 0
        var log: [String] = []
        var segments = engine.statistics.segments
        // A snapshot held across steps, with the model of its moment.
        var held: (snapshot: Snapshot, model: StoreModel)?

        func markDurable() { history = [model] }
        func compare(_ what: String) throws {
            let actual = try FuzzHelpers.readAll(engine, alsoKeyspaces: keyspaces)
            try fuzzRequire(FuzzHelpers.same(actual, model), "state differs from the model after \(what): engine \(FuzzHelpers.describe(actual)), model \(FuzzHelpers.describe(model)) [\(log.joined(separator: " "))]")
        }
        func key(_ input: inout FuzzInput) -> [UInt8] {
            (0..<input.int(in: 0...3)).map { _ in UInt8(ascii: "a") + input.byte() % 4 }
        }

        var steps = 0
        while !input.isAtEnd && steps < 48 {
            steps += 1
            let op = input.int(in: 0...13)
            switch op {
            case 0...6:
                // 0-2: put, 3: delete, 4-5: batch, 6: large put
                var batch = WriteBatch()
                var next = model
                let count = op == 4 || op == 5 ? input.int(in: 1...8) : 1
                for _ in 0..<count {
                    let ks = input.pick(keyspaces)
                    let k = key(&input)
                    if op == 3 || (count > 1 && input.int(in: 0...3) == 0) {
                        batch.delete(k, in: ks)
                        next[ks]?[k] = nil
                        if next[ks]?.isEmpty == true { next[ks] = nil }
                    } else {
                        version += 1
                        let size = op == 6 ? input.int(in: 1...8) << 14 : input.int(in: 0...1) == 0 ? input.int(in: 0...64) : input.int(in: 0...6000)
                        let v = FuzzHelpers.value(ks, k, version: version, size: size, compressible: input.bool())
                        let terms = (0..<input.int(in: 0...2)).map { i in IndexTerm(index: "i\(i)", value: .identifier(Array(v.prefix(i + 3)))) }
                        batch.put(v, forKey: k, in: ks, indexTerms: terms)
                        next[ks, default: [:]][k] = v
                    }
                }
                try engine.commitAndWait(batch)
                let before = model
                model = next
                history.append(model)
                log.append("commit(\(batch.count))")
                if sync == .always { markDurable() }
                let now = engine.statistics.segments
                if now != segments {
                    // A full segment rolls before the next group is written: the roll synced every commit before
                    // this one, which went into the new segment and is durable only with `always`.
                    history = sync == .always ? [model] : [before, model]
                    segments = now
                    log.append("rolled")
                }
                try compare("commit")
            case 7:
                held = nil
                try engine.close()
                engine = try open()
                markDurable()
                log.append("reopen")
                try compare("reopen")
                try requireVerify(engine, log)
            case 8:
                let policy = input.pick(FaultFileSystem.CrashPolicy.allCases)
                let seed = UInt64(input.u16())
                let crashed = fs.crash(policy: policy, seed: seed)
                held = nil
                try engine.close()
                fs = crashed
                log.append("crash(\(policy),\(seed))")
                do { engine = try open() } catch {
                    throw FuzzCheckFailure("open after a crash failed: \(error) [\(log.joined(separator: " "))]")
                }
                let actual = try FuzzHelpers.readAll(engine, alsoKeyspaces: keyspaces)
                if policy == .keepAll {
                    try fuzzRequire(FuzzHelpers.same(actual, model), "keepAll crash lost commits [\(log.joined(separator: " "))]")
                } else {
                    try fuzzRequire(history.contains { FuzzHelpers.same($0, actual) },
                                "after a crash the store is not the state after a commit between the last durable (\(FuzzHelpers.describe(history[0]))) and the last acknowledged; got \(FuzzHelpers.describe(actual)) [\(log.joined(separator: " "))]")
                }
                model = actual
                markDurable()
                segments = engine.statistics.segments
                try requireVerify(engine, log)
            case 9:
                try engine.sync()
                markDurable()
                log.append("sync")
            case 10:
                log.append("verify")
                try requireVerify(engine, log)
            case 12:
                // Sealing syncs the active segment first: everything acknowledged is durable.
                try engine.sealActiveSegment()
                markDurable()
                segments = engine.statistics.segments
                log.append("seal")
                try compare("seal")
            case 13:
                // Compact every sealed segment, or an adjacent run of them (deletions may then be kept).
                let sealed = try engine.storeStatistics().segments.filter(\.sealed).map(\.id)
                var run: [UInt64]?
                if !sealed.isEmpty && input.bool() {
                    let first = input.int(in: 0...(sealed.count - 1))
                    let last = input.int(in: first...(sealed.count - 1))
                    run = Array(sealed[first...last])
                }
                let summary = try engine.compactAndWait(CompactionOptions(segments: run))
                segments = engine.statistics.segments
                log.append("compact(\(run.map { "\($0.count) of \(sealed.count)" } ?? "all \(sealed.count)"), kept \(summary.tombstonesKept))")
                try compare("compaction")
                try requireVerify(engine, log)
            default:
                let ks = input.pick(keyspaces)
                let k = key(&input)
                try fuzzRequire(try engine.get(k, in: ks) == model[ks]?[k], "get(\(k), in: \(ks)) differs from the model [\(log.joined(separator: " "))]")
                switch input.int(in: 0...3) {
                case 0:
                    held = (engine.snapshot(), model)
                    log.append("hold")
                case 1:
                    if let held { try checkSnapshot(held.snapshot, held.model, log) }
                default: break
                }
            }
        }
        try requireVerify(engine, log)
        try engine.close()
    }

    /// Checks `snapshot`'s point reads of every key against `model`, the store as the snapshot was taken.
    static func checkSnapshot(_ snapshot: Snapshot, _ model: StoreModel, _ log: [String]) throws {
        for ks in keyspaces {
            let expected = allKeys.map { model[ks]?[$0] }
            let values = try snapshot.values(forKeys: allKeys, in: ks)
            try fuzzRequire(values == expected, "a held snapshot's values(forKeys:) in \(ks) differ from its model [\(log.joined(separator: " "))]")
            let handles = try snapshot.handles(forKeys: allKeys, in: ks)
            try fuzzRequire(try snapshot.values(of: handles.compactMap { $0 }) == expected.compactMap { $0 },
                            "a held snapshot's handles(forKeys:) in \(ks) differ from its model [\(log.joined(separator: " "))]")
            for (key, value) in zip(allKeys, expected) {
                try fuzzRequire(try snapshot.get(key, in: ks) == value && snapshot.contains(key, in: ks) == (value != nil),
                                "a held snapshot's get(\(key), in: \(ks)) differs from its model [\(log.joined(separator: " "))]")
            }
        }
    }

    static func requireVerify(_ engine: Engine, _ log: [String]) throws {
        let report = try engine.verify()
        try fuzzRequire(report.ok, "verify: \(report.problems.prefix(3)) [\(log.joined(separator: " "))]")
    }
}
