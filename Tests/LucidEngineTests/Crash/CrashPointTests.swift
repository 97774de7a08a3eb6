import Foundation
import LucidEngine
import LucidEngineTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// engine-notes §9.9 tests 6 (ALICE-style crash-point enumeration) and 13 (create-DB crash), on the
/// `FaultFileSystem`.
///
/// "The process stops at operation N" is modelled by a persistent fault on every kind of operation from the N-th
/// on (nothing after it reaches the disk), followed by `crash(policy:seed:)`, which decides what of the unsynced
/// data survives: nothing, everything, a random subset of sectors, or a prefix with a torn sector.
@Suite("Crash: crash points on FaultFileSystem")
struct CrashPointTests {
    static let everyOperation = Set(FaultFileSystem.Operation.allCases)
    /// A loop stops after this many failed cases (one engine bug would otherwise report hundreds).
    static let maxFailures = 5

    /// Runs `batches` on a fresh file system (or a copy of `base`) that stops at operation `n`; returns it and
    /// what was acknowledged.
    static func stoppedRun(at n: Int, batches: [[CrashOp]],
                           from base: FaultFileSystem? = nil) -> (FaultFileSystem, CrashWorkloadOutcome) {
        let fs = base?.copy() ?? FaultFileSystem()
        fs.failOperation(everyOperation, nth: n, persistent: true)
        let outcome = runCrashWorkload(on: fs, batches: batches, continueAfterFailure: false)
        return (fs, outcome)
    }

    /// Every error a stopped run sees must be a typed `LucidError` (`io`, or `failedState` after one).
    static func checkTyped(_ outcome: CrashWorkloadOutcome, context: String) {
        for error in [outcome.firstError].compactMap({ $0 }) + outcome.laterErrors {
            guard let lucid = error as? LucidError, lucid.code == .io || lucid.code == .failedState else {
                crashFail("\(context): untyped or unexpected error \(error)")
                continue
            }
        }
    }

    /// With `.lz4Records` the preloaded first segment holds whole-page LZ4 pages (it is shared with the other
    /// run) and the segment the workload rolls to starts with a dictionary page built from the records before it.
    @Test("a crash at any operation of a workload with a segment roll recovers a prefix of the commits", .heavy,
          arguments: [EngineOptions.PageCompression.lz4, .lz4Records])
    func crashAtEveryOperation(compression: EngineOptions.PageCompression) throws {
        try CrashCompression.$current.withValue(compression) { try crashAtEveryOperation() }
    }

    func crashAtEveryOperation() throws {
        let start = ContinuousClock.now
        // Three big commits fill 993 KiB of the 1 MiB segment once, outside the enumeration (writing megabytes in
        // every rerun would be slow in debug builds); the enumerated workload (opening that store, then 30 mixed
        // batches) rolls the segment after a few batches.
        let rollBase = CrashRollBase.shared
        let (base, preload, batches, models) = (rollBase.fs, rollBase.preload, rollBase.batches, rollBase.models)

        // Reference run: how many operations the workload takes, and where it rolls.
        let reference = base.copy()
        let full = runCrashWorkload(on: reference, batches: batches)
        try #require(full.acknowledged == batches.count, "reference run failed: \(String(describing: full.firstError))")
        let totalOperations = reference.totalOperationCount
        let segments = reference.fileNames(in: crashStorePath).filter { $0.hasSuffix(".seg") }
        #expect(segments.count == 2, "the workload should roll once; files: \(reference.fileNames(in: crashStorePath))")
        // Where the roll happens (in batches), for the printed summary.
        var rollBatch: Int?
        do {
            let probe = base.copy()
            let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(probe))
            for (i, batch) in batches.enumerated() where rollBatch == nil {
                try engine.commitAndWait(crashWriteBatch(batch))
                if engine.statistics.segments > 1 { rollBatch = i + 1 }
            }
            try engine.close()
        }

        // Every crash point when that stays within budget, else a stride that still covers the whole run.
        let variants = crashVariants(seeds: [1])
        let budget = 320
        let step = max(1, (totalOperations + 1) * variants.count / budget)
        var cases = 0
        var recoveredAt: [Int: Int] = [:]
        var failures = 0
        for n in stride(from: 1, through: totalOperations + 1, by: step) {
            let (fs, outcome) = Self.stoppedRun(at: n, batches: batches, from: base)
            let acknowledged = preload.count + outcome.acknowledged
            let attempted = preload.count + outcome.attempted
            Self.checkTyped(outcome, context: "stop at op \(n)")
            // Random crash policies cost O(file size) per dirty file in the FaultFileSystem; while the ~1 MiB first
            // segment is still active (before the roll) only every third crash point gets them.
            let rolled = fs.fileNames(in: crashStorePath).filter { $0.hasSuffix(".seg") }.count > 1
            for (policy, seed) in variants {
                if !rolled && n % 3 != 0 && (policy == .randomSubset || policy == .tornWrites) { continue }
                let crashed = fs.crash(policy: policy, seed: seed &+ UInt64(n) &* 7919)
                cases += 1
                let context = "stop at op \(n)/\(totalOperations), crash \(policy) seed \(seed &+ UInt64(n) &* 7919) "
                    + "(acknowledged \(acknowledged), attempted \(attempted))"
                if let j = checkCrashRecovered(crashed, models: models, acknowledged: acknowledged,
                                               attempted: attempted, context: context) {
                    recoveredAt[j - acknowledged, default: 0] += 1
                } else {
                    failures += 1
                }
            }
            if failures >= Self.maxFailures { break }
        }
        print("crash points: \(cases) crash-and-reopen cases (\(totalOperations) operations, roll in batch "
              + "\(rollBatch.map(String.init) ?? "none") of \(batches.count), step \(step), "
              + "\(variants.count) crash variants) in \(crashElapsedMilliseconds(since: start)) ms; "
              + "recovered the last acknowledged commit \(recoveredAt[0] ?? 0)x, "
              + "the one in flight \(recoveredAt[1] ?? 0)x")
    }

    /// Unsynced data survives or tears in units of 512-byte sectors, and, once, of 4 KiB pages (a file system's
    /// block: a torn write then cuts a whole page header, checksum lines and payload at once). Once, the store's
    /// directory exists before the open, made by an application that did not sync its parent: a crash before the
    /// open syncs it drops the directory, so the open must sync it before the first acknowledgment.
    @Test("a crash at any operation of creating a store and its first commit gives an empty or the committed store",
          .heavy,
          arguments: [(EngineOptions.PageCompression.lz4, 512, false), (.lz4Records, 512, false), (.lz4, 4096, false),
                      (.lz4, 512, true)])
    func crashDuringCreate(compression: EngineOptions.PageCompression, sectorSize: Int, directoryMadeUnsynced: Bool) throws {
        try CrashCompression.$current.withValue(compression) {
            try crashDuringCreate(sectorSize: sectorSize, directoryMadeUnsynced: directoryMadeUnsynced)
        }
    }

    func crashDuringCreate(sectorSize: Int, directoryMadeUnsynced: Bool) throws {
        let start = ContinuousClock.now
        let batches = [[CrashOp.put(keyspace: "alpha", key: Array("first".utf8), value: Array("value".utf8)),
                        CrashOp.put(keyspace: "beta", key: Array("second".utf8),
                                    value: crashChildValue(length: 20_000, seed: 3))]]
        let models = crashModelPrefixes(batches)
        func fresh() throws -> FaultFileSystem {
            let fs = FaultFileSystem(sectorSize: sectorSize)
            if directoryMadeUnsynced {
                try fs.createDirectory(at: crashStorePath, syncingParents: false)
                fs.resetOperationCounts()
            }
            return fs
        }
        let reference = try fresh()
        let full = runCrashWorkload(on: reference, batches: batches)
        try #require(full.acknowledged == 1)
        let totalOperations = reference.totalOperationCount
        let variants = crashVariants(seeds: [1, 2, 3])
        var cases = 0
        var outcomes = (empty: 0, committed: 0)
        var failures = 0
        for n in 1...(totalOperations + 1) {
            let (fs, outcome) = Self.stoppedRun(at: n, batches: batches, from: try fresh())
            Self.checkTyped(outcome, context: "create: stop at op \(n)")
            for (policy, seed) in variants {
                cases += 1
                let context = "create (\(sectorSize)-byte sectors\(directoryMadeUnsynced ? ", directory made unsynced" : "")): "
                    + "stop at op \(n)/\(totalOperations), "
                    + "crash \(policy) seed \(seed) "
                    + "(acknowledged \(outcome.acknowledged), attempted \(outcome.attempted))"
                let crashed = fs.crash(policy: policy, seed: seed)
                switch checkCrashRecovered(crashed, models: models, acknowledged: outcome.acknowledged,
                                           attempted: outcome.attempted, context: context) {
                case 0?: outcomes.empty += 1
                case 1?: outcomes.committed += 1
                default: failures += 1
                }
            }
            if failures >= Self.maxFailures { break }
        }
        print("create crash, \(sectorSize)-byte sectors: \(cases) cases (\(totalOperations) operations × "
              + "\(variants.count) crash variants) in "
              + "\(crashElapsedMilliseconds(since: start)) ms; empty store \(outcomes.empty)x, "
              + "committed \(outcomes.committed)x")
    }

    /// A process dies between writing a commit group and syncing it (kill -9: the bytes are in the page cache,
    /// not on disk). The next process opens the store: recovery accepts the complete group and treats it as
    /// durable (`syncedLSN = nextLSN - 1`) without syncing it. Its first commit writes pages whose `syncedLSN`
    /// claims that group is durable. Power fails before that commit's fdatasync completes, and the disk kept the
    /// new pages but not the older unsynced ones. Nothing acknowledged was lost, so open must succeed (cutting
    /// both groups); it must never report `corruption`.
    @Test("restart over an unsynced tail, then power loss during the next commit: open succeeds")
    func restartOverUnsyncedTailThenPowerLoss() throws {
        let batches = makeCrashWorkload(seed: 77, count: 6)
        let models = crashModelPrefixes(batches)
        let fs = FaultFileSystem()
        // Process 1: three acknowledged commits; the fourth is written but its sync never happens.
        do {
            let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
            for batch in batches.prefix(3) { try engine.commitAndWait(crashWriteBatch(batch)) }
            fs.failOperation([.sync], nth: 1, errno: EIO)
            #expect(throws: LucidError.self) { try engine.commitAndWait(crashWriteBatch(batches[3])) }
            try? engine.close()
        }
        // Process 2 (no power loss in between: the page cache still holds commit 4).
        do {
            let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
            #expect(engine.statistics.lastSequence == 3, "the failed sync cut the unacknowledged group (fsyncgate defence)")
            fs.failOperation([.sync], nth: 1, errno: EIO, persistent: true)   // power fails before the sync
            #expect(throws: LucidError.self) { try engine.commitAndWait(crashWriteBatch(batches[4])) }
            try? engine.close()
        }
        var failures = 0
        var cases = 0
        for seed in UInt64(0)..<48 {
            for policy in [FaultFileSystem.CrashPolicy.randomSubset, .tornWrites, .dropUnsynced, .keepAll] {
                cases += 1
                let crashed = fs.crash(policy: policy, seed: seed)
                if checkCrashRecovered(crashed, models: models, acknowledged: 3, attempted: 5,
                                       context: "restart over unsynced tail, crash \(policy) seed \(seed)") == nil {
                    failures += 1
                }
            }
            if failures >= Self.maxFailures { break }
        }
        print("restart over unsynced tail: \(cases) cases, \(failures) failed")
    }

    /// As above, but the second process only opens and closes the store. Close writes a checkpoint (synced,
    /// renamed, directory synced) covering the recovered-but-never-synced group, without syncing the segment.
    /// Power fails: the checkpoint survives, the group's bytes may not. Open must still give a state after some
    /// commit ≥ the acknowledged one whose every value reads back, and a clean `verify()`.
    ///
    /// With `fsyncgate`, the failed fsync also threw the dirty pages away as Linux does after a writeback error:
    /// reads still return them, but no later fsync writes them (a sync at recovery does not help).
    @Test("restart over an unsynced tail, clean close (checkpoint), then power loss: open succeeds, verify is clean",
          arguments: [false, true])
    func restartOverUnsyncedTailThenCheckpointThenPowerLoss(fsyncgate: Bool) throws {
        var batches = makeCrashWorkload(seed: 78, count: 6)
        batches[3] = [.put(keyspace: "alpha", key: Array("never-synced".utf8),
                           value: crashChildValue(length: 900, seed: 5)),
                      .delete(keyspace: "alpha", key: Array("key-4".utf8))]
        let models = crashModelPrefixes(batches)
        let fs = FaultFileSystem()
        do {
            let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
            for batch in batches.prefix(3) { try engine.commitAndWait(crashWriteBatch(batch)) }
            fs.failOperation([.sync], nth: 1, errno: EIO, dropsDirtyData: fsyncgate)
            #expect(throws: LucidError.self) { try engine.commitAndWait(crashWriteBatch(batches[3])) }
            try? engine.close()
        }
        do {
            let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
            #expect(engine.statistics.lastSequence == 3, "the failed sync cut the unacknowledged group (fsyncgate defence)")
            try engine.close()
        }
        var failures = 0
        var cases = 0
        for seed in UInt64(0)..<48 {
            for policy in [FaultFileSystem.CrashPolicy.randomSubset, .tornWrites, .dropUnsynced, .keepAll] {
                cases += 1
                let crashed = fs.crash(policy: policy, seed: seed)
                let context = "checkpoint over unsynced tail (fsyncgate \(fsyncgate)), crash \(policy) seed \(seed)"
                if checkCrashRecovered(crashed.copy(), models: models, acknowledged: 3, attempted: 4,
                                       context: context) == nil {
                    failures += 1
                    // The consequence: the checkpoint's state is not the log's. Scanning the log instead (as open
                    // does whenever a checkpoint is missing or rejected) gives another answer, or fails.
                    let engine = try? Engine.open(at: crashStorePath, options: crashFaultOptions(crashed))
                    let sequence = engine.map { Int($0.statistics.lastSequence) } ?? -1
                    let state = (try? engine.map(crashReadModel)) ?? nil
                    try? engine?.close()
                    if let state,
                       let problem = crashCheckpointlessOpenProblem(crashed, sequence: sequence, state: state) {
                        crashFail("\(context): \(problem)")
                    }
                }
            }
            if failures >= Self.maxFailures { break }
        }
        print("checkpoint over unsynced tail (fsyncgate \(fsyncgate)): \(cases) cases, \(failures) failed")
    }
}
