import Foundation
import LucidEngine
import Synchronization
import LucidEngineTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// engine-notes §9.9 test 7 (RocksDB blackbox): a child process commits random batches and reports each one
/// over a pipe; the parent SIGKILLs it at a random moment, reopens the store, and checks that every acknowledged
/// batch is there, no partial batch is, and `verify()` is clean. The store carries over from round to round, so
/// later rounds recover stores that earlier recoveries (in the child or the parent) already cut.
///
/// Environment: `LUCID_KILL9_ROUNDS` (default 50, engine-notes' figure for CI), `LUCID_KILL9_SEED` (base seed;
/// random by default), `LUCID_CRASH_CHILD` (path of the child binary, when not next to the test binary).
@Suite("Crash: kill -9 loop")
struct KillNineTests {
    @Test("kill -9 at random moments never loses an acknowledged batch nor keeps a partial one", .heavy)
    func killNineLoop() throws {
        let child = try Self.requireChild()
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["LUCID_KILL9_ROUNDS"].flatMap(Int.init) ?? 50
        let baseSeed = environment["LUCID_KILL9_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(1) << 48)
        print("kill -9 loop: \(rounds) rounds, base seed \(baseSeed) (LUCID_KILL9_SEED=\(baseSeed) to replay)")

        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("lucid-kill9-\(getpid())-\(baseSeed)").path
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        var model = CrashModel()
        var sequence: UInt64 = 0
        var rng = CrashRNG(seed: baseSeed)
        var stats = RoundStats()
        let start = ContinuousClock.now
        for round in 0..<rounds {
            let seed = baseSeed &+ UInt64(round) &* 1_000_003
            // Mostly 50…400 ms; one round in six kills within 5…50 ms, usually during the child's recovery.
            let delay = rng.below(6) == 0 ? 5 + rng.below(46) : 50 + rng.below(351)
            let context = "round \(round) (child seed \(seed), kill after \(delay) ms, base seed \(baseSeed))"
            let run = try Self.runChild(child, directory: directory, seed: seed, killAfterMilliseconds: delay)
            let failures = try Self.checkRound(run, directory: directory, model: &model, sequence: &sequence,
                                               stats: &stats, context: context)
            if !failures.isEmpty {
                crashFail("\(context):\n" + failures.joined(separator: "\n") + "\nchild stderr: \(run.stderr)")
                return
            }
        }
        print("kill -9 loop: \(rounds) rounds in \(crashElapsedMilliseconds(since: start)) ms; \(stats); "
              + "final sequence \(sequence), \(stats.segments) segments, \(model)")
        // A loop whose children never got to commit (a child that cannot open the store, say) checked nothing.
        #expect(stats.acked > 0 && sequence > 0, "no round acknowledged a batch: \(stats)")
    }

    /// engine-notes §9.9 test 13 with real processes: SIGKILL a child within its first milliseconds, while it
    /// creates a fresh store (mkdir, first segment, manifest) or makes its first commits. Open must give an empty
    /// store or one with the acknowledged commits, never an error.
    @Test("kill -9 while a fresh store is being created gives an empty or the acknowledged store")
    func killNineDuringCreate() throws {
        let child = try #require(Self.childExecutable(), "lucid-crash-child not found next to the test binary")
        let baseSeed = ProcessInfo.processInfo.environment["LUCID_KILL9_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...UInt64(1) << 48)
        let root = FileManager.default.temporaryDirectory
            .appendingPathComponent("lucid-kill9-create-\(getpid())-\(baseSeed)").path
        try? FileManager.default.removeItem(atPath: root)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var rng = CrashRNG(seed: baseSeed)
        var stats = RoundStats()
        var stages: [String: Int] = [:]
        let rounds = 16
        for round in 0..<rounds {
            let directory = root + "/store-\(round)"
            let seed = baseSeed &+ UInt64(round)
            // The child needs ~30 ms to start and ~60 ms more to create the store (four fsyncs) on a typical disk.
            let delay = 10 + rng.below(110)
            let context = "create round \(round) (child seed \(seed), kill after \(delay) ms, base seed \(baseSeed))"
            let run = try Self.runChild(child, directory: directory, seed: seed, killAfterMilliseconds: delay)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            let stage = !FileManager.default.fileExists(atPath: directory) ? "no directory"
                : files.contains(where: { $0.hasPrefix("MANIFEST") }) ? "manifest written"
                : files.contains(where: { $0.hasSuffix(".seg") }) ? "segment, no manifest"
                : "directory only"
            stages[stage, default: 0] += 1
            var model = CrashModel()
            var sequence: UInt64 = 0
            let failures = try Self.checkRound(run, directory: directory, model: &model, sequence: &sequence,
                                               stats: &stats, context: context)
            if !failures.isEmpty {
                crashFail("\(context):\n" + failures.joined(separator: "\n") + "\nchild stderr: \(run.stderr)")
                return
            }
        }
        print("kill -9 during create: \(rounds) fresh stores; killed at: "
              + stages.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)x" }.joined(separator: ", ")
              + "; \(stats)")
    }

    struct RoundStats: CustomStringConvertible {
        var acked = 0, inFlightKept = 0, inFlightLost = 0, noInFlight = 0, killedBeforeOpen = 0, segments = 0
        var description: String {
            "\(acked) acknowledged batches, in-flight batch kept \(inFlightKept)x, lost \(inFlightLost)x, "
                + "none in flight \(noInFlight)x, killed before open completed \(killedBeforeOpen)x"
        }
    }

    /// Rebuilds what the child was told from its output, reopens the store and checks it: state == the model
    /// after the last ACK, or after the one BEGIN without ACK; verify clean; a second open changes nothing.
    /// Advances `model` and `sequence` to the recovered state. Returns the failures.
    ///
    /// `extraChecks` runs on both opens with the engine and the state it shows, and returns more failures; the
    /// second open must also show the very same state. By default it checks the indexes against the state (every
    /// put of the child carries its value's terms, `crashChildTerms(for:)`).
    static func checkRound(_ run: ChildRun, directory: String, model: inout CrashModel, sequence: inout UInt64,
                           stats: inout RoundStats, context: String,
                           extraChecks: (Engine, CrashModel) throws -> [String] = { crashIndexProblems($0, $1) })
        throws -> [String] {
        var failures: [String] = []
        var acknowledged = model
        var acknowledgedSequence = sequence
        var inFlight: [CrashOp]?
        var opened = false
        for line in run.lines {
            if line.hasPrefix("OPEN ") {
                opened = true
                if UInt64(line.dropFirst(5)) != sequence {
                    failures.append("the child recovered sequence \(line.dropFirst(5)), the parent had \(sequence)")
                }
            } else if line.hasPrefix("BEGIN ") {
                inFlight = try parseOps(line.dropFirst(6), context: context)
            } else if line.hasPrefix("ACK ") {
                guard let acked = UInt64(line.dropFirst(4)), let ops = inFlight else {
                    failures.append("unexpected line \(line)")
                    break
                }
                if acked != acknowledgedSequence + 1 {
                    failures.append("ACK \(acked) after \(acknowledgedSequence)")
                }
                acknowledged.apply(ops)
                acknowledgedSequence = acked
                inFlight = nil
                stats.acked += 1
            }
        }
        if !opened { stats.killedBeforeOpen += 1 }
        if !run.killed {
            failures.append("the child was not killed but exited with status \(run.status): \(run.stderr)")
        }

        do {
            // Every other round reads the recovered store through mapped segments; every third reads uncompressed
            // pages in place once checked, and another third compresses records one by one (the child chose how
            // the pages it wrote are stored: lucid-crash-child).
            var reopenOptions = EngineOptions()
            reopenOptions.memoryMappedReads = run.lines.count % 2 == 0
            if run.lines.count % 3 == 0 { reopenOptions.pageCompression = .none }
            if run.lines.count % 3 == 1 { reopenOptions.pageCompression = .lz4Records }
            let engine = try Engine.open(at: directory, options: reopenOptions)
            let recovered = engine.statistics.lastSequence
            let state = try crashReadModel(engine)
            if recovered == acknowledgedSequence {
                if state != acknowledged {
                    failures.append("state at sequence \(recovered) differs from the acknowledged model: "
                                    + state.difference(from: acknowledged))
                }
                if inFlight != nil { stats.inFlightLost += 1 } else { stats.noInFlight += 1 }
            } else if let ops = inFlight, recovered == acknowledgedSequence + 1 {
                let expected = acknowledged.applying(ops)
                if state != expected {
                    failures.append("state at sequence \(recovered) differs from the model with the in-flight "
                                    + "batch: \(state.difference(from: expected))")
                }
                stats.inFlightKept += 1
            } else {
                failures.append("recovered sequence \(recovered); acknowledged \(acknowledgedSequence), "
                                + "a batch in flight: \(inFlight != nil)")
            }
            let report = try engine.verify()
            if !report.ok { failures.append("verify: \(report.problems)") }
            failures += try extraChecks(engine, state)
            try engine.close()

            // A second open finds nothing to do.
            let again = try Engine.open(at: directory, options: reopenOptions)
            stats.segments = again.statistics.segments
            if again.recoveryReport.droppedBytes != 0 || !again.recoveryReport.removedFiles.isEmpty
                || again.statistics.lastSequence != recovered {
                failures.append("the second open changed the store: \(again.recoveryReport)")
            }
            let second = try crashReadModel(again)
            if second != state { failures.append("the second open shows \(second.difference(from: state))") }
            failures += try extraChecks(again, second).map { "second open: " + $0 }
            try again.close()
            model = state
            sequence = recovered
        } catch {
            failures.append("reopening after kill -9 failed: \(error)")
        }
        return failures
    }

    // MARK: The child

    struct ChildRun {
        var lines: [String]
        var stderr: String
        var killed: Bool
        var status: Int32
    }

    /// Starts the child, reads its output concurrently, SIGKILLs it after `killAfterMilliseconds`, and returns
    /// every complete line it wrote (read to EOF, so lines still in the pipe are included).
    static func runChild(_ executable: URL, directory: String, seed: UInt64, mode: String? = nil,
                         killAfterMilliseconds: Int) throws -> ChildRun {
        let process = Process()
        process.executableURL = executable
        process.arguments = [directory, String(seed)] + (mode.map { [$0] } ?? [])
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let outData = DataBox()
        let errData = DataBox()
        let group = DispatchGroup()
        try process.run()
        try? out.fileHandleForWriting.close()
        try? err.fileHandleForWriting.close()
        for (handle, sink) in [(out.fileHandleForReading, outData), (err.fileHandleForReading, errData)] {
            group.enter()
            Thread.detachNewThread {
                let data = handle.readDataToEndOfFile()
                sink.set(data)
                group.leave()
            }
        }
        usleep(useconds_t(killAfterMilliseconds * 1000))
        let signalled = kill(process.processIdentifier, SIGKILL) == 0
        process.waitUntilExit()
        group.wait()
        let text = String(decoding: outData.get(), as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Only lines terminated by a newline are complete.
        lines.removeLast()
        return ChildRun(lines: lines, stderr: String(decoding: errData.get(), as: UTF8.self),
                        killed: signalled && process.terminationReason == .uncaughtSignal,
                        status: process.terminationStatus)
    }

    final class DataBox: Sendable {
        private let data = Mutex(Data())
        func set(_ value: Data) { data.withLock { $0 = value } }
        func get() -> Data { data.withLock { $0 } }
    }

    static func parseOps(_ text: Substring, context: String) throws -> [CrashOp] {
        try text.split(separator: " ").map { token in
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 3, let key = hexBytes(parts[2]) else {
                throw ParseError(message: "\(context): bad op \(token)")
            }
            let keyspace = String(parts[1])
            switch parts[0] {
            case "D" where parts.count == 3:
                return .delete(keyspace: keyspace, key: key)
            case "P" where parts.count == 5:
                guard let length = Int(parts[3]), let seed = UInt64(parts[4]) else {
                    throw ParseError(message: "\(context): bad op \(token)")
                }
                return .put(keyspace: keyspace, key: key, value: crashChildValue(length: length, seed: seed))
            default:
                throw ParseError(message: "\(context): bad op \(token)")
            }
        }
    }

    struct ParseError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func hexBytes(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: utf8.count, by: 2) {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
        }
        return bytes
    }

    // MARK: Finding the child binary

    static func productsDirectories() -> [String] { BuiltProducts.directories() }

    /// The child binary, or a failure that says where it was looked for.
    static func requireChild() throws -> URL {
        try #require(childExecutable(), """
            lucid-crash-child not found next to the test binary \
            (\(productsDirectories().joined(separator: ", "))). \
            Build it with `swift build` (the test target depends on it) or set LUCID_CRASH_CHILD.
            """)
    }

    static func childExecutable() -> URL? { BuiltProducts.executable(named: "lucid-crash-child", override: "LUCID_CRASH_CHILD") }
}
