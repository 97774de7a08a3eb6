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

// Shared by the crash tests: a deterministic RNG, the reference model, workloads, and the checks every crash test
// ends with (state equals the model after some allowed commit, verify is clean, a second open drops nothing).

/// The crash tests' generator (the shared SplitMix64).
typealias CrashRNG = SplitMix64

/// One operation of a batch, as the model applies it.
enum CrashOp: Sendable, Hashable {
    case put(keyspace: String, key: [UInt8], value: [UInt8])
    case delete(keyspace: String, key: [UInt8])
}

/// The reference model: keyspace → key → value, with no empty keyspace (so it compares equal to what the engine
/// shows).
struct CrashModel: Equatable, Sendable, CustomStringConvertible {
    var keyspaces: [String: [[UInt8]: [UInt8]]] = [:]

    /// Compares values with memcmp: the synthesized `==` walks 300 KiB values element by element in debug builds.
    static func == (a: CrashModel, b: CrashModel) -> Bool {
        guard a.keyspaces.count == b.keyspaces.count else { return false }
        for (name, entries) in a.keyspaces {
            guard let other = b.keyspaces[name], other.count == entries.count else { return false }
            for (key, value) in entries {
                guard let otherValue = other[key], sameBytes(value, otherValue) else { return false }
            }
        }
        return true
    }

    mutating func apply(_ ops: [CrashOp]) {
        for op in ops {
            switch op {
            case .put(let keyspace, let key, let value):
                keyspaces[keyspace, default: [:]][key] = value
            case .delete(let keyspace, let key):
                keyspaces[keyspace]?[key] = nil
                if keyspaces[keyspace]?.isEmpty == true { keyspaces[keyspace] = nil }
            }
        }
    }

    func applying(_ ops: [CrashOp]) -> CrashModel {
        var copy = self
        copy.apply(ops)
        return copy
    }

    var keyCount: Int { keyspaces.values.reduce(0) { $0 + $1.count } }

    var description: String {
        keyspaces.keys.sorted().map { "\($0): \(keyspaces[$0]!.count) keys" }.joined(separator: ", ")
    }

    /// A short description of how `self` differs from `other`, for failure messages.
    func difference(from other: CrashModel) -> String {
        var lines: [String] = []
        for name in Set(keyspaces.keys).union(other.keyspaces.keys).sorted() {
            let mine = keyspaces[name] ?? [:]
            let theirs = other.keyspaces[name] ?? [:]
            let missing = theirs.keys.filter { mine[$0] == nil }.count
            let extra = mine.keys.filter { theirs[$0] == nil }.count
            let changed = mine.keys.filter { theirs[$0] != nil && !sameBytes(theirs[$0]!, mine[$0]!) }.count
            if missing + extra + changed > 0 {
                lines.append("\(name): \(missing) missing, \(extra) extra, \(changed) different values")
            }
        }
        return lines.isEmpty ? "identical" : lines.joined(separator: "; ")
    }
}

func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { x in
        b.withUnsafeBytes { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
    }
}

func crashWriteBatch(_ ops: [CrashOp]) -> WriteBatch {
    var batch = WriteBatch()
    for op in ops {
        switch op {
        case .put(let keyspace, let key, let value):
            // Index terms from the value (none for one value in five): overwrites change, add and drop entries, so
            // recovery must rebuild the indexes to the model's too (`crashIndexProblems`).
            batch.put(value, forKey: key, in: keyspace, indexTerms: crashChildTerms(for: value))
        case .delete(let keyspace, let key): batch.delete(key, in: keyspace)
        }
    }
    return batch
}

/// An index entry as the crash tests compare it.
struct CrashIndexPair: Equatable {
    var value: IndexValue
    var key: [UInt8]
}

/// Where `engine`'s indexes (`size` and `tag`) differ from the entries the terms of `state`'s values give
/// (`crashChildTerms`, which `crashWriteBatch` stores with each value): every entry in order, both directions, and
/// the entry counts, in `keyspaces` (by default every keyspace of the engine or the model).
func crashIndexProblems(_ engine: Engine, _ state: CrashModel, keyspaces: [String]? = nil) -> [String] {
    var problems: [String] = []
    let snapshot = engine.snapshot()
    for keyspace in keyspaces ?? Set(engine.keyspaces()).union(state.keyspaces.keys).sorted() {
        let names = snapshot.indexNames(in: keyspace)
        if !Set(names).isSubset(of: ["size", "tag"]) { problems.append("keyspace \(keyspace) has indexes \(names)") }
        for index in ["size", "tag"] {
            var expected: [CrashIndexPair] = []
            for (key, value) in state.keyspaces[keyspace] ?? [:] {
                var seen: [IndexValue] = []
                for term in crashChildTerms(for: value) where term.index == index {
                    let termValue = term.value!
                    if !seen.contains(termValue) {
                        seen.append(termValue)
                        expected.append(CrashIndexPair(value: termValue, key: key))
                    }
                }
            }
            expected.sort { a, b in
                let c = IndexTest.compare(a.value, b.value)
                return c != 0 ? c < 0 : IndexTest.compareBytes(a.key, b.key) < 0
            }
            let query = IndexQuery(keyspace: keyspace, index: index, condition: .any)
            let forward = snapshot.entries(matching: query).map { CrashIndexPair(value: $0.value, key: $0.key) }
            var backwardQuery = query
            backwardQuery.reverse = true
            let backward = snapshot.entries(matching: backwardQuery)
                .map { CrashIndexPair(value: $0.value, key: $0.key) }
            if forward != expected {
                let missing = expected.filter { !forward.contains($0) }.count
                let extra = forward.filter { !expected.contains($0) }.count
                problems.append("index \(keyspace).\(index): \(forward.count) entries, expected \(expected.count) "
                                + "(\(missing) missing, \(extra) extra, or out of order)")
            } else if backward != expected.reversed() {
                problems.append("index \(keyspace).\(index): the descending order is not the reverse")
            }
            let entryCount = snapshot.entryCount(keyspace: keyspace, index: index)
            if entryCount != expected.count {
                problems.append("index \(keyspace).\(index): entryCount \(entryCount), expected \(expected.count)")
            }
        }
    }
    return problems
}

/// Everything the engine shows, read through scans of every keyspace it reports.
func crashReadModel(_ engine: Engine) throws -> CrashModel {
    var model = CrashModel()
    for name in engine.keyspaces() {
        var entries: [[UInt8]: [UInt8]] = [:]
        for kv in try engine.scan(in: name) { entries[kv.key] = kv.value }
        if !entries.isEmpty { model.keyspaces[name] = entries }
    }
    return model
}

/// A deterministic workload for the fault-injection tests: `count` batches of 1…12 puts and deletes over 40 keys
/// in two keyspaces, values mostly under 600 bytes, some up to 3 KB, and one in thirty of 17…40 KiB (larger than
/// a 16 KiB page). About 6 KiB per batch: every rerun of it costs little in a debug build.
func makeCrashWorkload(seed: UInt64, count: Int = 30) -> [[CrashOp]] {
    var rng = CrashRNG(seed: seed)
    var batches: [[CrashOp]] = []
    for _ in 0..<count {
        var ops: [CrashOp] = []
        for _ in 0..<(1 + rng.below(12)) {
            let keyspace = rng.below(3) == 0 ? "beta" : "alpha"
            let key = Array("key-\(rng.below(40))".utf8)
            if rng.below(4) == 0 {
                ops.append(.delete(keyspace: keyspace, key: key))
            } else {
                let roll = rng.below(100)
                let length = roll < 85 ? rng.below(600) : roll < 97 ? 600 + rng.below(2400)
                    : 17 * 1024 + rng.below(23 * 1024)
                ops.append(.put(keyspace: keyspace, key: key, value: crashChildValue(length: length, seed: rng.next())))
            }
        }
        batches.append(ops)
    }
    return batches
}

/// `count` batches of one incompressible value of `size` bytes each (keyspace "big"): commits that fill most of
/// a 1 MiB segment cheaply, so that a workload after them rolls a segment without writing megabytes itself.
func makeCrashPreload(count: Int, size: Int) -> [[CrashOp]] {
    (0..<count).map { i in
        [.put(keyspace: "big", key: Array("blob-\(i)".utf8), value: crashChildValue(length: size, seed: UInt64(i) * 3))]
    }
}

/// The models after 0, 1, …, n batches.
func crashModelPrefixes(_ batches: [[CrashOp]]) -> [CrashModel] {
    var models = [CrashModel()]
    for batch in batches { models.append(models.last!.applying(batch)) }
    return models
}

/// What a workload run did before it stopped.
struct CrashWorkloadOutcome {
    /// Batches acknowledged (commit returned), in order from the first.
    var acknowledged = 0
    /// Batches whose commit was attempted (acknowledged + the one that failed, if any).
    var attempted = 0
    /// The first error: from open, or from the first commit that failed.
    var firstError: (any Error)?
    /// Where the first error came from.
    var failedInOpen = false
    /// Errors after the first one (commits refused once the engine failed).
    var laterErrors: [any Error] = []
    /// The state readers saw just after the first failed commit (nil when none failed, or it could not be read).
    var visibleAfterFailure: CrashModel?
    var readErrorAfterFailure: (any Error)?
    /// Injected faults that had fired before `close()` (the rest fired during close: the final sync or the
    /// checkpoint it writes).
    var faultsBeforeClose = 0
    /// What `close()` threw, if anything.
    var closeError: (any Error)?
}

let crashStorePath = "/store"

/// The page compression of the engines the crash workloads open (`crashFaultOptions`): a test run for another
/// sets it around its body.
enum CrashCompression {
    @TaskLocal static var current: EngineOptions.PageCompression = EngineOptions().pageCompression
}

func crashFaultOptions(_ fs: FaultFileSystem, segmentSize: UInt64 = 1 << 20,
                       pageCacheBytes: Int? = nil) -> EngineOptions {
    var options = EngineOptions()
    options.pageCompression = CrashCompression.current
    options.fileSystem = fs
    options.segmentSize = segmentSize
    if let pageCacheBytes { options.pageCacheBytes = pageCacheBytes }
    options.logger.logLevel = .critical
    return options
}

/// Opens a store on `fs` and commits `batches` with `commitAndWait`, stopping after the first failure (after
/// checking that the engine then refuses one more commit with `failedState` and what readers see). Closes the
/// engine before returning (close syncs and may write a checkpoint).
func runCrashWorkload(on fs: FaultFileSystem, batches: [[CrashOp]], options: EngineOptions? = nil,
                 continueAfterFailure: Bool = true) -> CrashWorkloadOutcome {
    var outcome = CrashWorkloadOutcome()
    let engine: Engine
    do {
        engine = try Engine.open(at: crashStorePath, options: options ?? crashFaultOptions(fs))
    } catch {
        outcome.firstError = error
        outcome.failedInOpen = true
        return outcome
    }
    defer {
        outcome.faultsBeforeClose = fs.injectedFaultCount
        do { try engine.close() } catch { outcome.closeError = error }
    }
    for batch in batches {
        outcome.attempted += 1
        do {
            try engine.commitAndWait(crashWriteBatch(batch))
            outcome.acknowledged += 1
        } catch {
            outcome.firstError = error
            do {
                outcome.visibleAfterFailure = try crashReadModel(engine)
            } catch {
                outcome.readErrorAfterFailure = error
            }
            if continueAfterFailure, let next = batches.first {
                do { try engine.commitAndWait(crashWriteBatch(next)) } catch { outcome.laterErrors.append(error) }
            }
            break
        }
    }
    return outcome
}

/// Opens the store on `fs` and checks the crash contract: open succeeds, the state equals the model after some
/// commit `j` with `acknowledged ≤ j ≤ attempted` (identified by the recovered sequence: batch i has sequence i),
/// `verify()` is clean, and a second open drops nothing and shows the same state. Returns `j`, or nil after
/// recording an issue.
@discardableResult
func checkCrashRecovered(_ fs: FaultFileSystem, models: [CrashModel], acknowledged: Int, attempted: Int,
                    context: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
    let options = crashFaultOptions(fs)
    let first: (sequence: Int, model: CrashModel)
    let engine: Engine
    do {
        engine = try Engine.open(at: crashStorePath, options: options)
    } catch {
        crashFail("\(context): open after the crash failed: \(error)", sourceLocation: sourceLocation)
        return nil
    }
    do {
        defer { try? engine.close() }
        let sequence = Int(engine.statistics.lastSequence)
        let state: CrashModel
        do {
            state = try crashReadModel(engine)
        } catch {
            crashFail("\(context): open succeeded (sequence \(sequence)) but reading the recovered state failed: "
                      + "\(error)", sourceLocation: sourceLocation)
            return nil
        }
        guard sequence >= acknowledged && sequence <= attempted && sequence < models.count else {
            crashFail("\(context): recovered sequence \(sequence), expected \(acknowledged)...\(attempted) "
                         + "(state: \(state))", sourceLocation: sourceLocation)
            return nil
        }
        guard state == models[sequence] else {
            crashFail("\(context): recovered state at sequence \(sequence) is not the model after batch "
                         + "\(sequence): \(state.difference(from: models[sequence]))", sourceLocation: sourceLocation)
            return nil
        }
        let indexProblems = crashIndexProblems(engine, state)
        guard indexProblems.isEmpty else {
            crashFail("\(context): the recovered indexes at sequence \(sequence) are not the model's: \(indexProblems)",
                      sourceLocation: sourceLocation)
            return nil
        }
        let report = try engine.verify()
        guard report.ok else {
            crashFail("\(context): verify found \(report.problems)", sourceLocation: sourceLocation)
            return nil
        }
        first = (sequence, state)
    } catch {
        crashFail("\(context): verify after the crash threw \(error)", sourceLocation: sourceLocation)
        return nil
    }
    do {
        let engine = try Engine.open(at: crashStorePath, options: options)
        defer { try? engine.close() }
        let report = engine.recoveryReport
        let state = try crashReadModel(engine)
        let indexProblems = crashIndexProblems(engine, state)
        guard report.droppedBytes == 0, report.removedFiles.isEmpty,
              Int(engine.statistics.lastSequence) == first.sequence, state == first.model, indexProblems.isEmpty else {
            crashFail("\(context): the second open changed something: dropped \(report.droppedBytes) bytes, "
                         + "removed \(report.removedFiles), sequence \(engine.statistics.lastSequence) "
                         + "(first open: \(first.sequence)), index problems \(indexProblems)",
                      sourceLocation: sourceLocation)
            return nil
        }
    } catch {
        crashFail("\(context): second open failed: \(error)", sourceLocation: sourceLocation)
        return nil
    }
    // A checkpoint is only an accelerator: without it, open must scan the log to the very same state.
    if let problem = crashCheckpointlessOpenProblem(fs, sequence: first.sequence, state: first.model) {
        crashFail("\(context): \(problem)", sourceLocation: sourceLocation)
        return nil
    }
    return first.sequence
}

/// Opens a copy of `fs` without its `CHECKPOINT` (so recovery scans the whole log) and returns what differs from
/// the expected sequence and state, or nil when it matches (or there is no checkpoint).
func crashCheckpointlessOpenProblem(_ fs: FaultFileSystem, sequence: Int, state: CrashModel) -> String? {
    let checkpoint = crashStorePath + "/CHECKPOINT"
    guard fs.fileExists(at: checkpoint) else { return nil }
    let scan = fs.copy()
    do {
        try scan.removeFile(at: checkpoint)
        let engine = try Engine.open(at: crashStorePath, options: crashFaultOptions(scan))
        defer { try? engine.close() }
        let scanned = try crashReadModel(engine)
        if Int(engine.statistics.lastSequence) != sequence || scanned != state {
            return "without the checkpoint, open recovers sequence \(engine.statistics.lastSequence) (with it: "
                + "\(sequence)), state: \(scanned.difference(from: state))"
        }
        let indexProblems = crashIndexProblems(engine, scanned)
        if !indexProblems.isEmpty { return "without the checkpoint, the indexes differ: \(indexProblems)" }
        return nil
    } catch {
        return "without the checkpoint, open fails: \(error) (with it: sequence \(sequence))"
    }
}

/// The crash variants applied at each crash point: every policy, the random ones with `seeds` seeds.
func crashVariants(seeds: [UInt64]) -> [(FaultFileSystem.CrashPolicy, UInt64)] {
    var variants: [(FaultFileSystem.CrashPolicy, UInt64)] = [(.dropUnsynced, 0), (.keepAll, 0)]
    for seed in seeds {
        variants.append((.randomSubset, seed))
        variants.append((.tornWrites, seed))
    }
    return variants
}

/// Milliseconds since `start`, for the case-count lines the tests print.
func crashElapsedMilliseconds(since start: ContinuousClock.Instant) -> Int {
    let d = ContinuousClock.now - start
    return Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
}

/// Records an issue whose message is a plain `String` (built with `+`).
func crashFail(_ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
    Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
}

/// A store whose 1 MiB first segment is 97 % full (three commits of 331 KiB incompressible values), plus the
/// workload to run on copies of it: the 30 batches of `makeCrashWorkload(seed: 0x5EED_C0DE)`, which roll the
/// segment after about four batches. Built once per test process (writing a megabyte is slow in debug builds);
/// tests run on `fs.copy()`.
struct CrashRollBase: Sendable {
    let fs: FaultFileSystem
    let preload: [[CrashOp]]
    let batches: [[CrashOp]]
    /// `models[i]` is the state after sequence `i` (the preload commits are sequences 1…3).
    let models: [CrashModel]

    static let shared = CrashRollBase()

    private init() {
        preload = makeCrashPreload(count: 3, size: 331 * 1024)
        batches = makeCrashWorkload(seed: 0x5EED_C0DE)
        models = crashModelPrefixes(preload + batches)
        fs = FaultFileSystem()
        let outcome = runCrashWorkload(on: fs, batches: preload)
        precondition(outcome.acknowledged == preload.count,
                     "building the roll base failed: \(String(describing: outcome.firstError))")
        fs.resetOperationCounts()
    }
}
