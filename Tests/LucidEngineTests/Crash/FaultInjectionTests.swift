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

/// engine-notes §9.9 tests 14 (fsync EIO once), 15 (ENOSPC at every write), 16 (I/O-error loop during writes and
/// during recovery) and 17 (EIO on a page read), on the `FaultFileSystem`.
///
/// The contract checked everywhere: an injected failure surfaces as a typed `LucidError` from the call that hit
/// it (never a crash, never `corruption`); once a write or sync failed the engine refuses writes with
/// `failedState` while readers see exactly the acknowledged commits; after a crash (or simply reopening once the
/// fault is gone) the store opens with every acknowledged commit, no partial one, and a clean `verify()`.
@Suite("Crash: fault injection on FaultFileSystem")
struct FaultInjectionTests {
    static let everyOperation = Set(FaultFileSystem.Operation.allCases)
    static let maxFailures = 5

    /// Checks what a faulted workload run reported: the first error is `io` with `errno` (or, with `errno` nil,
    /// any `io`), later commits were refused with `failedState`, and readers saw exactly the acknowledged state.
    /// Returns false (after recording issues) when something is off. A run whose readers saw the failed commit is
    /// appended to `visibleFailedCommits` instead (reported once per test: one engine bug shows at many points).
    @discardableResult
    static func checkFailedRun(_ outcome: CrashWorkloadOutcome, models: [CrashModel], sequenceOffset: Int,
                               errno expectedErrno: Int32?, context: String, readsMayFail: Bool = false,
                               visibleFailedCommits: inout [String]) -> Bool {
        var ok = true
        guard let first = outcome.firstError else { return true }
        if let error = first as? LucidError {
            if error.code != .io || (expectedErrno != nil && error.errno != expectedErrno) {
                crashFail("\(context): the failing call threw \(error), expected io errno "
                          + (expectedErrno.map(String.init) ?? "any"))
                ok = false
            }
        } else {
            crashFail("\(context): the failing call threw a non-LucidError \(first)")
            ok = false
        }
        for later in outcome.laterErrors where (later as? LucidError)?.code != .failedState {
            crashFail("\(context): a commit after the failure threw \(later), expected failedState")
            ok = false
        }
        if !outcome.failedInOpen {
            if let visible = outcome.visibleAfterFailure {
                let expected = models[sequenceOffset + outcome.acknowledged]
                if visible != expected {
                    let withFailed = models.indices.contains(sequenceOffset + outcome.attempted)
                        && visible == models[sequenceOffset + outcome.attempted]
                    visibleFailedCommits.append(context + (withFailed ? "" : " (not even the failed commit's state: "
                                                           + visible.difference(from: expected) + ")"))
                }
            } else if let readError = outcome.readErrorAfterFailure, !readsMayFail {
                crashFail("\(context): reads failed after the failed commit: \(readError)")
                ok = false
            }
        }
        return ok
    }

    /// One issue listing every point where readers saw the data of a commit that had thrown.
    static func reportVisibleFailedCommits(_ points: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        guard !points.isEmpty else { return }
        crashFail("after a commit threw, readers saw its data (it was published before the failure, e.g. of the "
                  + "segment roll that follows the publish) at \(points.count) fault points:\n  "
                  + points.prefix(12).joined(separator: "\n  ") + (points.count > 12 ? "\n  …" : ""),
                  sourceLocation: sourceLocation)
    }

    // MARK: 14. fsync EIO once

    @Test("fsync EIO fails that commit with io, then failedState; reads show acknowledged data; crash keeps exactly it",
          arguments: [false, true])
    func fsyncEIOOnce(dropsDirtyData: Bool) throws {
        let batches = makeCrashWorkload(seed: 14, count: 8)
        let models = crashModelPrefixes(batches)
        let fs = FaultFileSystem()
        let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
        for batch in batches.prefix(5) { try engine.commitAndWait(crashWriteBatch(batch)) }

        let syncsBefore = fs.operationCount(.sync)
        fs.failOperation([.sync], nth: 1, errno: EIO, dropsDirtyData: dropsDirtyData)
        let error = #expect(throws: LucidError.self) { try engine.commitAndWait(crashWriteBatch(batches[5])) }
        #expect(error?.code == .io && error?.errno == EIO,
                "the commit whose fsync failed: \(String(describing: error))")
        #expect(fs.injectedFaultCount == 1)

        // The engine is failed: writes (and sync) are refused, nothing more is acknowledged.
        let refused = #expect(throws: LucidError.self) { try engine.commitAndWait(crashWriteBatch(batches[6])) }
        #expect(refused?.code == .failedState, "\(String(describing: refused))")
        let refusedSync = #expect(throws: LucidError.self) { try engine.sync() }
        #expect(refusedSync?.code == .failedState, "\(String(describing: refusedSync))")
        #expect(fs.operationCount(.sync) == syncsBefore + 1, "no sync after the failed one")

        // Reads work and show exactly the acknowledged commits.
        #expect(engine.statistics.lastSequence == 5)
        let visible = try crashReadModel(engine)
        // (Comparisons of models are evaluated outside #expect: on failure it would reflect megabytes of values.)
        let visibleIsAcknowledged = visible == models[5]
        #expect(visibleIsAcknowledged, "readers see: \(visible.difference(from: models[5]))")
        #expect(try engine.verify().ok)
        try? engine.close()

        // Power loss: exactly the acknowledged state (the failed commit's data was never durable).
        checkCrashRecovered(fs.crash(policy: .dropUnsynced), models: models, acknowledged: 5, attempted: 5,
                            context: "fsync EIO (dropsDirtyData \(dropsDirtyData)), crash dropUnsynced")
        // Whatever else the disk kept, never less than acknowledged and never a partial batch.
        for seed in UInt64(0)..<4 {
            for policy in [FaultFileSystem.CrashPolicy.keepAll, .randomSubset, .tornWrites] {
                checkCrashRecovered(fs.crash(policy: policy, seed: seed), models: models, acknowledged: 5, attempted: 6,
                                    context: "fsync EIO (dropsDirtyData \(dropsDirtyData)), crash \(policy) "
                                        + "seed \(seed)")
            }
        }
    }

    /// `.grouped` syncs when its interval has passed since the last sync (here 0 ms: every group), after writing the
    /// group and before publishing it. When that sync fails the commit throws and was never visible: the writer cuts
    /// the group off, so that a reopen in the same boot does not replay a commit that threw; the acknowledged
    /// commits stay. (`.always` cuts back to its last good sync: `fsyncEIOOnce`.)
    @Test("grouped mode: a commit whose sync failed is cut off, so a reopen does not bring it back",
          arguments: [false, true])
    func groupedSyncFailureCutsTheFailedGroup(dropsDirtyData: Bool) throws {
        let batches = makeCrashWorkload(seed: 15, count: 8)
        let models = crashModelPrefixes(batches)
        let fs = FaultFileSystem()
        var options = crashFaultOptions(fs)
        options.syncMode = .grouped(milliseconds: 0)
        var engine = try Engine.open(at: crashStorePath, options: options)
        for batch in batches.prefix(5) { try engine.commitAndWait(crashWriteBatch(batch)) }
        fs.failOperation([.sync], nth: 1, errno: EIO, dropsDirtyData: dropsDirtyData)
        let error = #expect(throws: LucidError.self) { try engine.commitAndWait(crashWriteBatch(batches[5])) }
        #expect(error?.code == .io && error?.errno == EIO, "\(String(describing: error))")
        #expect(fs.injectedFaultCount == 1)
        let visible = try crashReadModel(engine) == models[5]
        #expect(visible, "readers see exactly the acknowledged commits")
        try? engine.close()

        // The same boot, no crash: the failed commit is not replayed.
        engine = try Engine.open(at: crashStorePath, options: options)
        #expect(engine.statistics.lastSequence == 5)
        let reopened = try crashReadModel(engine) == models[5]
        #expect(reopened, "the reopened store is not the acknowledged state")
        #expect(crashIndexProblems(engine, models[5]).isEmpty)
        #expect(try engine.verify().ok)
        try engine.commitAndWait(crashWriteBatch(batches[5]))
        try engine.close()
        checkCrashRecovered(fs.crash(policy: .dropUnsynced), models: models, acknowledged: 6, attempted: 6,
                            context: "grouped sync EIO (dropsDirtyData \(dropsDirtyData)), then a commit and a crash")
    }

    /// The writer publishes a group (readers see it) and only then rolls the segment when it is full. When the roll
    /// fails (creating the next segment or writing the manifest), the commit that triggered it throws `io`, yet its
    /// data is durable, visible to readers, and survives every crash: a caller told "failed" sees it committed.
    /// Either the commit succeeds (it is durable; the engine fails the writes after it), or readers must not
    /// see it.
    @Test("a failed segment roll does not fail a commit that readers already see")
    func failedRollAfterPublish() throws {
        let rollBase = CrashRollBase.shared
        let fs = rollBase.fs.copy()
        // The first write of the next segment (its header) fails.
        fs.failOperation([.write], nth: 1, errno: EIO, pathFilter: { $0.hasSuffix("0000000000000002.seg") })
        let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
        var acknowledged = rollBase.preload.count
        var thrown: LucidError?
        for batch in rollBase.batches {
            do {
                try engine.commitAndWait(crashWriteBatch(batch))
                acknowledged += 1
            } catch let error as LucidError {
                thrown = error
                break
            }
        }
        let error = try #require(thrown, "the roll never happened or its failure was swallowed")
        #expect(error.code == .io)
        let visible = try crashReadModel(engine)
        let expected = rollBase.models[acknowledged]
        let visibleIsAcknowledged = visible == expected
        let difference = visible.difference(from: expected)
        #expect(visibleIsAcknowledged, "the commit threw \(error) but readers see it: \(difference)")
        try? engine.close()
        // What a crash keeps: at least the acknowledged commits (here the failed one too: it was synced).
        checkCrashRecovered(fs.crash(policy: .dropUnsynced), models: rollBase.models, acknowledged: acknowledged,
                            attempted: acknowledged + 1, context: "failed roll, crash dropUnsynced")
    }

    // MARK: 15. ENOSPC at every write

    @Test("ENOSPC (short write) at every write of a workload with a roll: error surfaced, nothing acknowledged lost",
          .heavy)
    func enospcAtEveryWrite() throws {
        let start = ContinuousClock.now
        let rollBase = CrashRollBase.shared
        // The first 12 batches of the roll workload (the roll comes at the 4th): every rerun stays cheap.
        let (base, preload, batches, models) = (rollBase.fs, rollBase.preload, Array(rollBase.batches.prefix(12)),
                                                rollBase.models)
        let reference = base.copy()
        try #require(runCrashWorkload(on: reference, batches: batches).acknowledged == batches.count)
        let writes = reference.operationCount(.write)
        var cases = 0
        var failures = 0
        var failedInOpen = 0
        var inClose = 0
        var visibleFailedCommits: [String] = []
        for n in 1...(writes + 1) {
            let fs = base.copy()
            fs.failOperation([.write], nth: n, errno: ENOSPC, shortWrite: true)
            let outcome = runCrashWorkload(on: fs, batches: batches)
            let context = "ENOSPC at write \(n)/\(writes) (acknowledged \(outcome.acknowledged), "
                + "attempted \(outcome.attempted))"
            if outcome.failedInOpen { failedInOpen += 1 }
            if fs.injectedFaultCount == 0 {
                if n <= writes || outcome.firstError != nil {
                    crashFail("\(context): the fault did not fire or an error appeared without it: "
                              + "\(String(describing: outcome.firstError))")
                    failures += 1
                }
                continue
            }
            if outcome.firstError == nil {
                if outcome.faultsBeforeClose == 0 {
                    // The write belonged to close (its checkpoint, an accelerator whose failure is only logged).
                    inClose += 1
                } else {
                    crashFail("\(context): the ENOSPC write failed silently (every commit was acknowledged)")
                    failures += 1
                    continue
                }
            }
            if !Self.checkFailedRun(outcome, models: models, sequenceOffset: preload.count, errno: ENOSPC,
                                    context: context, visibleFailedCommits: &visibleFailedCommits) {
                failures += 1
            }
            let acknowledged = preload.count + outcome.acknowledged
            let attempted = preload.count + outcome.attempted
            for (policy, seed) in [(FaultFileSystem.CrashPolicy.dropUnsynced, UInt64(0)), (.keepAll, 0),
                                   (.tornWrites, UInt64(n))] {
                cases += 1
                if checkCrashRecovered(fs.crash(policy: policy, seed: seed), models: models, acknowledged: acknowledged,
                                       attempted: attempted, context: "\(context), crash \(policy)") == nil {
                    failures += 1
                }
            }
            // No crash: the process goes on after freeing space and reopens the store (recovery cuts what the
            // short write left), commits more, and only then loses power (leveldb#1180).
            fs.clearFaults()
            cases += 1
            guard let recovered = checkCrashRecovered(fs, models: models, acknowledged: acknowledged,
                                                      attempted: attempted,
                                                      context: "\(context), reopened without a crash")
            else {
                failures += 1
                if failures >= Self.maxFailures { break }
                continue
            }
            let more = Array(rollBase.batches.suffix(2))
            var continued = Array(models.prefix(recovered + 1))
            for batch in more { continued.append(continued.last!.applying(batch)) }
            do {
                let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
                for batch in more { try engine.commitAndWait(crashWriteBatch(batch)) }
                try engine.close()
            } catch {
                crashFail("\(context): writing after the reopen failed: \(error)")
                failures += 1
                continue
            }
            for (policy, seed) in [(FaultFileSystem.CrashPolicy.dropUnsynced, UInt64(0)), (.tornWrites, UInt64(n))] {
                cases += 1
                if checkCrashRecovered(fs.crash(policy: policy, seed: seed), models: continued,
                                       acknowledged: continued.count - 1, attempted: continued.count - 1,
                                       context: "\(context), reopened, 2 more commits, crash \(policy)") == nil {
                    failures += 1
                }
            }
            if failures >= Self.maxFailures { break }
        }
        Self.reportVisibleFailedCommits(visibleFailedCommits)
        print("ENOSPC: \(writes) write points (\(failedInOpen) in open, \(inClose) in close), \(cases) reopen cases in "
              + "\(crashElapsedMilliseconds(since: start)) ms")
    }

    // MARK: 16. I/O-error loop during writes

    @Test("EIO at the N-th operation of any kind, once and persistent: typed errors, then a clean reopen", .heavy)
    func ioErrorLoopDuringWrites() throws {
        let start = ContinuousClock.now
        let rollBase = CrashRollBase.shared
        // The first 12 batches of the roll workload (the roll comes at the 4th): every rerun stays cheap.
        let (base, preload, batches, models) = (rollBase.fs, rollBase.preload, Array(rollBase.batches.prefix(12)),
                                                rollBase.models)
        let reference = base.copy()
        try #require(runCrashWorkload(on: reference, batches: batches).acknowledged == batches.count)
        let total = reference.totalOperationCount
        var cases = 0
        var failures = 0
        var visibleFailedCommits: [String] = []
        for persistent in [false, true] {
            // Every operation once, and persistently (which also crashes the result).
            for n in 1...(total + 1) {
                let fs = base.copy()
                fs.failOperation(Self.everyOperation, nth: n, errno: EIO, persistent: persistent)
                let outcome = runCrashWorkload(on: fs, batches: batches)
                let context = "EIO at op \(n)/\(total) \(persistent ? "persistent" : "once") "
                    + "(acknowledged \(outcome.acknowledged), attempted \(outcome.attempted))"
                if outcome.faultsBeforeClose > 0 && outcome.firstError == nil {
                    // Once-faults on operations whose failure the engine may absorb (a checkpoint written at a
                    // roll) are fine; with every operation failing persistently some commit must fail.
                    if persistent {
                        crashFail("\(context): every operation failed from op \(n) on, "
                                  + "yet every commit was acknowledged")
                        failures += 1
                    }
                }
                if !Self.checkFailedRun(outcome, models: models, sequenceOffset: preload.count, errno: EIO,
                                        context: context, readsMayFail: persistent,
                                        visibleFailedCommits: &visibleFailedCommits) {
                    failures += 1
                }
                let acknowledged = preload.count + outcome.acknowledged
                let attempted = preload.count + outcome.attempted
                if persistent {
                    cases += 1
                    if checkCrashRecovered(fs.crash(policy: .dropUnsynced), models: models, acknowledged: acknowledged,
                                           attempted: attempted, context: "\(context), crash dropUnsynced") == nil {
                        failures += 1
                    }
                }
                fs.clearFaults()
                cases += 1
                if checkCrashRecovered(fs, models: models, acknowledged: acknowledged, attempted: attempted,
                                       context: "\(context), faults cleared, reopened") == nil {
                    failures += 1
                }
                if failures >= Self.maxFailures { break }
            }
        }
        Self.reportVisibleFailedCommits(visibleFailedCommits)
        print("I/O-error loop (writes): \(total) operations, \(cases) reopen cases in "
              + "\(crashElapsedMilliseconds(since: start)) ms")
    }

    // MARK: 16. I/O-error loop during recovery

    /// Stores that make recovery do work: cut a torn tail (truncate + sync), remove an orphan segment of an
    /// interrupted roll (remove + directory sync), and re-create a store whose creation crashed.
    static func recoveryBases() throws -> [(name: String, fs: FaultFileSystem, acknowledged: Int, attempted: Int,
                                             models: [CrashModel])] {
        var bases: [(String, FaultFileSystem, Int, Int, [CrashModel])] = []

        // A torn tail: the last commit's sync never happened, and the disk kept part of its group.
        let batches = makeCrashWorkload(seed: 16, count: 10)
        let models = crashModelPrefixes(batches)
        do {
            let fs = FaultFileSystem()
            // Appends only (no filler), so that a torn group shows in the file's length (the next base has filler).
            var options = crashFaultOptions(fs)
            options.logPreallocationBytes = 0
            let engine = try Engine.open(at: crashStorePath, options: options)
            for batch in batches.prefix(9) { try engine.commitAndWait(crashWriteBatch(batch)) }
            fs.failOperation(everyOperation, nth: 2, persistent: true)   // the write happens, the sync does not
            _ = try? engine.commitAndWait(crashWriteBatch(batches[9]))
            try? engine.close()
            // Find a seed that tears the group (the tail is then cut on open).
            var torn: FaultFileSystem?
            for seed in UInt64(1)..<64 {
                let candidate = fs.crash(policy: .tornWrites, seed: seed)
                let size = candidate.bytes(of: crashStorePath + "/0000000000000001.seg")?.count ?? 0
                let durable = fs.durableBytes(of: crashStorePath + "/0000000000000001.seg")?.count ?? 0
                let current = fs.bytes(of: crashStorePath + "/0000000000000001.seg")?.count ?? 0
                if size > durable && size < current { torn = candidate; break }
            }
            bases.append(("torn tail", try #require(torn, "no seed tore the last group"), 9, 9, models))
        }

        // The same over filler (the default): the last group overwrites filler a sync had made durable, and the
        // disk kept part of it, the rest still filler (or torn to zeros or garbage).
        do {
            let fs = FaultFileSystem()
            let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
            for batch in batches.prefix(9) { try engine.commitAndWait(crashWriteBatch(batch)) }
            let start = Int(engine.statistics.totalBytes)
            fs.failOperation(everyOperation, nth: 2, persistent: true)   // the write happens, the sync does not
            _ = try? engine.commitAndWait(crashWriteBatch(batches[9]))
            let path = crashStorePath + "/0000000000000001.seg"
            let current = fs.bytes(of: path) ?? []
            let durable = fs.durableBytes(of: path) ?? []
            try? engine.close()
            #expect(durable.count == current.count && durable.count > start, "the group was written over filler")
            var torn: FaultFileSystem?
            for seed in UInt64(1)..<64 {
                let candidate = fs.crash(policy: .tornWrites, seed: seed)
                let image = candidate.bytes(of: path) ?? []
                guard image.count > start, current.count > start else { continue }
                let end = min(image.count, current.count, durable.count)
                let kept = image[start..<end], written = current[start..<end], before = durable[start..<end]
                if kept != written && kept != before { torn = candidate; break }
            }
            bases.append(("torn tail over filler", try #require(torn, "no seed tore the last group over filler"), 9, 9,
                          models))
        }

        // An orphan segment: the roll created the next segment but crashed before the manifest named it.
        do {
            let rollBase = CrashRollBase.shared
            let fs = rollBase.fs.copy()
            // Recovery opens MANIFEST-1 (version 1) only; the roll writes version 2 into MANIFEST-0.
            fs.failOperation([.open], nth: 1, persistent: true, pathFilter: { $0.hasSuffix("MANIFEST-0") })
            let outcome = runCrashWorkload(on: fs, batches: rollBase.batches, continueAfterFailure: false)
            let crashed = fs.crash(policy: .keepAll)
            let segments = crashed.fileNames(in: crashStorePath).filter { $0.hasSuffix(".seg") }
            try #require(segments.count == 2,
                         "expected an orphan segment, files: \(crashed.fileNames(in: crashStorePath))")
            let acknowledged = rollBase.preload.count + outcome.acknowledged
            // The roll runs after the commit that triggered it was published: that commit was durable.
            bases.append(("orphan segment", crashed, acknowledged, acknowledged + 1, rollBase.models))
        }

        // A crashed create: the first segment exists (header synced), the manifest never became durable.
        do {
            let fs = FaultFileSystem()
            fs.failOperation([.sync], nth: 2, persistent: true)   // segment header synced; the manifest not
            _ = try? Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
            let crashed = fs.crash(policy: .dropUnsynced)
            try #require(crashed.fileNames(in: crashStorePath).contains("0000000000000001.seg"))
            bases.append(("crashed create", crashed, 0, 0, [CrashModel()]))
        }
        return bases.map { (name: $0.0, fs: $0.1, acknowledged: $0.2, attempted: $0.3, models: $0.4) }
    }

    @Test("EIO at the N-th recovery operation, once and persistent (then a crash): typed error or success, reopen",
          .heavy)
    func ioErrorLoopDuringRecovery() throws {
        let start = ContinuousClock.now
        var cases = 0
        var failures = 0
        var summary: [String] = []
        for base in try Self.recoveryBases() {
            // The reference open: what recovery does on this base, and how many operations it takes.
            let reference = base.fs.copy()
            let expected = checkCrashRecovered(reference.copy(), models: base.models, acknowledged: base.acknowledged,
                                               attempted: base.attempted, context: "\(base.name): reference open")
            try #require(expected != nil)
            do {
                let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(reference))
                try engine.close()
            }
            let total = reference.totalOperationCount
            var opened = 0
            var threw = 0
            for persistent in [false, true] {
                for n in 1...(total + 1) {
                    let fs = base.fs.copy()
                    fs.failOperation(Self.everyOperation, nth: n, errno: EIO, persistent: persistent)
                    let context = "\(base.name): EIO at recovery op \(n)/\(total) \(persistent ? "persistent" : "once")"
                    do {
                        let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs))
                        opened += 1
                        let sequence = Int(engine.statistics.lastSequence)
                        if sequence != expected {
                            crashFail("\(context): open succeeded at sequence \(sequence), expected \(expected!)")
                            failures += 1
                        }
                        try? engine.close()
                    } catch let error as LucidError {
                        threw += 1
                        if error.code == .corruption {
                            crashFail("\(context): an I/O error during recovery was reported as corruption: \(error)")
                            failures += 1
                        }
                    } catch {
                        crashFail("\(context): open threw a non-LucidError \(error)")
                        failures += 1
                    }
                    if persistent {
                        // The recovery stopped at op n, then power failed.
                        for policy in [FaultFileSystem.CrashPolicy.dropUnsynced, .tornWrites] {
                            cases += 1
                            if checkCrashRecovered(fs.crash(policy: policy, seed: UInt64(n)), models: base.models,
                                                   acknowledged: base.acknowledged, attempted: base.attempted,
                                                   context: "\(context), crash \(policy)") == nil {
                                failures += 1
                            }
                        }
                    }
                    fs.clearFaults()
                    cases += 1
                    if checkCrashRecovered(fs, models: base.models, acknowledged: base.acknowledged,
                                           attempted: base.attempted, context: "\(context), faults cleared") == nil {
                        failures += 1
                    }
                    if failures >= Self.maxFailures { break }
                }
            }
            summary.append("\(base.name): \(total) ops, opened \(opened)x, threw \(threw)x")
        }
        print("I/O-error loop (recovery): \(cases) reopen cases in \(crashElapsedMilliseconds(since: start)) ms; "
              + summary.joined(separator: "; "))
    }

    // MARK: 17. EIO on a page read

    @Test("EIO on a page read: get and scan throw io, nothing crashes, and the next get works")
    func eioOnPageRead() throws {
        let batches = makeCrashWorkload(seed: 17, count: 10)
        let models = crashModelPrefixes(batches)
        let fs = FaultFileSystem()
        let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs, pageCacheBytes: 0))
        defer { try? engine.close() }
        for batch in batches { try engine.commitAndWait(crashWriteBatch(batch)) }
        let model = models[batches.count]
        // A record whose page one pread covers: a small value (the workload also writes 17-40 KiB ones, whose pages
        // take two), picked in a fixed order (a dictionary's order changes from run to run).
        let (keyspace, key, value) = try #require(model.keyspaces.keys.sorted().lazy.compactMap { name in
            model.keyspaces[name]!.filter { $0.value.count < 1_024 }
                .min { $0.key.lexicographicallyPrecedes($1.key) }.map { (name, $0.key, $0.value) }
        }.first)

        // A get reads the page header and payload in one pread; a page larger than the read-ahead (a value
        // bigger than the page size) takes a second one for the rest of its payload: fail each read in turn.
        var large: [UInt8] = []
        var random = EngineTest.SplitMix64(seed: 99)
        for _ in 0..<(64 << 10) { large.append(UInt8(truncatingIfNeeded: random.next())) }
        var put = WriteBatch()
        put.put(large, forKey: Array("large-value".utf8), in: keyspace)
        try engine.commitAndWait(put)
        for (readKey, expected, reads) in [(key, value, 1), (Array("large-value".utf8), large, 2)] {
            for n in 1...reads {
                fs.failOperation([.read], nth: n, errno: EIO)
                let error = #expect(throws: LucidError.self) { _ = try engine.get(readKey, in: keyspace) }
                #expect(error?.code == .io && error?.errno == EIO, "read \(n) of \(reads): \(String(describing: error))")
                #expect(fs.injectedFaultCount >= 1)
                fs.clearFaults()
                fs.resetOperationCounts()
                #expect(try engine.get(readKey, in: keyspace) == expected, "the get after the failed read \(n)")
            }
            // With no fault the get took exactly `reads` preads.
            fs.failOperation([.read], nth: reads + 1, errno: EIO)
            #expect(try engine.get(readKey, in: keyspace) == expected)
            #expect(fs.injectedFaultCount == 0, "a get of a \(expected.count)-byte value took more than \(reads) reads")
            fs.clearFaults()
            fs.resetOperationCounts()
        }
        var remove = WriteBatch()
        remove.delete(Array("large-value".utf8), in: keyspace)
        try engine.commitAndWait(remove)   // back to the model's state

        // Every read failing: scans and verify report, never crash; writes are unaffected (they do not read).
        fs.failOperation([.read], nth: 1, errno: EIO, persistent: true)
        let scanError = #expect(throws: LucidError.self) { _ = try engine.scan(in: keyspace) }
        #expect(scanError?.code == .io)
        let report = try engine.verify()
        #expect(!report.ok && report.problems.contains { $0.kind == .io }, "\(report.problems)")
        fs.clearFaults()
        let readBack = try crashReadModel(engine) == model
        #expect(readBack, "the state read after clearing the faults differs from the model")
        #expect(try engine.verify().ok)
    }

    /// A put that replaces a record with index terms reads those terms from the log before anything is written
    /// (`CommitGroupPlan`). EIO there fails the commit with `io`: nothing of it is visible, the engine refuses
    /// writes (a failure fails every later batch, so that a ticket's success vouches for the batches before it),
    /// and a reopen shows exactly the acknowledged commits.
    @Test("EIO while a commit reads the index terms it replaces: io, nothing visible, then a clean reopen")
    func eioReadingReplacedTerms() throws {
        let batches = makeCrashWorkload(seed: 18, count: 10)
        let model = crashModelPrefixes(batches)[batches.count]
        let fs = FaultFileSystem()
        var engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs, pageCacheBytes: 0))
        defer { try? engine.close() }
        for batch in batches { try engine.commitAndWait(crashWriteBatch(batch)) }
        // A record that carries terms, picked in a fixed order.
        let (keyspace, key, value) = try #require(model.keyspaces.keys.sorted().lazy.compactMap { name in
            model.keyspaces[name]!.filter { !crashChildTerms(for: $0.value).isEmpty }
                .min { $0.key.lexicographicallyPrecedes($1.key) }.map { (name, $0.key, $0.value) }
        }.first)
        let replacement = crashChildValue(length: 301, seed: 5)
        #expect(!crashChildTerms(for: replacement).isEmpty)

        fs.failOperation([.read], nth: 1, errno: EIO, persistent: true)
        let error = #expect(throws: LucidError.self) {
            try engine.commitAndWait(crashWriteBatch([.put(keyspace: keyspace, key: key, value: replacement)]))
        }
        #expect(error?.code == .io && error?.errno == EIO, "\(String(describing: error))")
        #expect(fs.injectedFaultCount >= 1, "the commit read nothing: the record's terms were not read from the log")
        fs.clearFaults()
        #expect(try engine.get(key, in: keyspace) == value, "the failed commit is visible")
        #expect(crashIndexProblems(engine, model).isEmpty, "the failed commit changed an index")
        let refused = #expect(throws: LucidError.self) { try engine.commitAndWait(crashWriteBatch(batches[0])) }
        #expect(refused?.code == .failedState)

        try engine.close()
        engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(fs, pageCacheBytes: 0))
        #expect(try crashReadModel(engine) == model)
        #expect(crashIndexProblems(engine, model).isEmpty)
        #expect(try engine.verify().ok)
        // The same commit, without the fault, now goes through and moves the record's index entries.
        try engine.commitAndWait(crashWriteBatch([.put(keyspace: keyspace, key: key, value: replacement)]))
        var after = model
        after.apply([.put(keyspace: keyspace, key: key, value: replacement)])
        #expect(try engine.get(key, in: keyspace) == replacement)
        #expect(crashIndexProblems(engine, after).isEmpty)
    }
}
