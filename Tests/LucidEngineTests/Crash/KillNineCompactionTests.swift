import Foundation
import LucidEngineTestSupport
import Testing
@testable import LucidEngine

/// engine-notes §9.9 tests 7 and 8 together, with real processes: the crash child in its `compact` mode commits
/// batches with index terms while a second thread seals the active segment and compacts (everything sealed, or a
/// random adjacent run that may keep deletions) and the automatic policy compacts too; the parent SIGKILLs it at
/// a random moment, whatever it is doing, and reopens. Each round checks the kill -9 contract of
/// ``KillNineTests`` (every acknowledged batch, the in-flight one wholly or not at all, verify clean, a second
/// open changes nothing and shows the same state), and also: every index holds exactly the entries the records'
/// terms give, in order; the segment files on disk are exactly those the manifest names (no orphan, no `.tmp`);
/// and an open of a copy without the checkpoint (a full scan of the log, where a dropped deletion would bring a
/// key back) shows the same state.
///
/// Environment: `LUCID_KILL9_COMPACTION_ROUNDS` (default 30), `LUCID_KILL9_SEED` (base seed; random by default),
/// `LUCID_CRASH_CHILD`.
@Suite("Crash: kill -9 loop with compaction running")
struct KillNineCompactionTests {
    static let keyspaces = ["alpha", "beta"]
    static let indexes = ["size", "tag"]

    struct CompactionStats: CustomStringConvertible {
        var seals = 0, compactions = 0, partial = 0, tombstonesKept = 0, skipped = 0, automatic = 0
        var orphansRemoved = 0, scanOpens = 0
        var description: String {
            "child: \(seals) seals, \(compactions) compactions (\(partial) not from the log start), "
                + "\(tombstonesKept) deletions kept, \(skipped) refused, \(automatic) automatic started; "
                + "parent: \(orphansRemoved) leftover files removed on reopen, \(scanOpens) opens without the "
                + "checkpoint"
        }

        mutating func count(_ run: KillNineTests.ChildRun) {
            // The engine logs this (info level, the child's stderr) when its policy starts a compaction.
            automatic += run.stderr.components(separatedBy: "starting automatic compaction").count - 1
            count(run.lines)
        }

        mutating func count(_ lines: [String]) {
            for line in lines {
                if line == "SEAL" {
                    seals += 1
                } else if line.hasPrefix("COMPACT ") {
                    let fields = line.split(separator: " ")
                    compactions += 1
                    if fields.count == 5 {
                        tombstonesKept += Int(fields[3]) ?? 0
                        if fields[4] == "0" { partial += 1 }
                    }
                } else if line.hasPrefix("SKIP ") {
                    skipped += 1
                }
            }
        }
    }

    @Test("kill -9 during compactions: acknowledged batches kept, indexes consistent, no orphans, no resurrection",
          .heavy)
    func killNineLoopWithCompaction() throws {
        let child = try KillNineTests.requireChild()
        let environment = ProcessInfo.processInfo.environment
        let rounds = environment["LUCID_KILL9_COMPACTION_ROUNDS"].flatMap(Int.init) ?? 30
        let baseSeed = environment["LUCID_KILL9_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64(1) << 48)
        print("kill -9 loop with compaction: \(rounds) rounds, base seed \(baseSeed) (LUCID_KILL9_SEED=\(baseSeed) "
              + "to replay)")

        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("lucid-kill9-compact-\(getpid())-\(baseSeed)").path
        let scanDirectory = directory + "-scan"
        try? FileManager.default.removeItem(atPath: directory)
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: scanDirectory)
        }

        var model = CrashModel()
        var sequence: UInt64 = 0
        var rng = CrashRNG(seed: baseSeed)
        var stats = KillNineTests.RoundStats()
        var compaction = CompactionStats()
        let start = ContinuousClock.now
        for round in 0..<rounds {
            let seed = baseSeed &+ UInt64(round) &* 1_000_003
            // Mostly 40…500 ms; one round in six kills within 5…50 ms, usually during the child's recovery.
            let delay = rng.below(6) == 0 ? 5 + rng.below(46) : 40 + rng.below(461)
            let context = "round \(round) (child seed \(seed), kill after \(delay) ms, base seed \(baseSeed))"
            let run = try KillNineTests.runChild(child, directory: directory, seed: seed, mode: "compact",
                                                 killAfterMilliseconds: delay)
            compaction.count(run)
            var opens = 0
            var failures = try KillNineTests.checkRound(
                run, directory: directory, model: &model, sequence: &sequence, stats: &stats, context: context
            ) { engine, state in
                opens += 1
                if opens == 1 {
                    compaction.orphansRemoved += engine.recoveryReport.removedFiles.count
                }
                return try Self.indexProblems(engine, state) + Self.fileProblems(engine, directory: directory)
            }
            if failures.isEmpty {
                failures += try Self.checkpointlessOpenProblems(directory, copy: scanDirectory, sequence: sequence,
                                                                state: model, stats: &compaction)
            }
            if !failures.isEmpty {
                crashFail("\(context):\n" + failures.joined(separator: "\n") + "\nchild stderr: \(run.stderr)")
                return
            }
        }
        print("kill -9 loop with compaction: \(rounds) rounds in \(crashElapsedMilliseconds(since: start)) ms; "
              + "\(stats); \(compaction); final sequence \(sequence), \(stats.segments) segments, \(model)")
        #expect(compaction.compactions > 0, "the child never completed a compaction")
    }

    /// Where `engine`'s indexes differ from the entries the terms of `state`'s values give (`crashIndexProblems`).
    static func indexProblems(_ engine: Engine, _ state: CrashModel) -> [String] {
        crashIndexProblems(engine, state, keyspaces: keyspaces)
    }

    /// Segment files on disk that the manifest does not name, or named ones missing, and leftover `.tmp` files.
    static func fileProblems(_ engine: Engine, directory: String) throws -> [String] {
        let listed = Set(try engine.storeStatistics().segments.map(\.fileName))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        let onDisk = Set(files.filter { $0.hasSuffix(".seg") })
        var problems: [String] = []
        if onDisk != listed {
            problems.append("segment files \(onDisk.sorted()) but the manifest names \(listed.sorted())")
        }
        let temporary = files.filter { $0.hasSuffix(Format.temporarySuffix) }
        if !temporary.isEmpty { problems.append("temporary files left: \(temporary.sorted())") }
        return problems
    }

    /// Opens a copy of the store without its checkpoint (recovery scans the whole log, compacted segments and
    /// kept deletions included) and returns how it differs from `state` at `sequence`.
    static func checkpointlessOpenProblems(_ directory: String, copy: String, sequence: UInt64, state: CrashModel,
                                           stats: inout CompactionStats) throws -> [String] {
        let fm = FileManager.default
        try? fm.removeItem(atPath: copy)
        try IndexTest.copyStore(from: directory, to: copy)
        try? fm.removeItem(atPath: copy + "/" + Format.checkpointFileName)
        var options = EngineOptions()
        options.logger = IndexTest.quietLogger
        options.autoCompaction = nil
        let engine = try Engine.open(at: copy, options: options)
        defer { try? engine.close() }
        stats.scanOpens += 1
        var problems: [String] = []
        if engine.recoveryReport.checkpointUsed { problems.append("without the checkpoint: a checkpoint was used") }
        if engine.statistics.lastSequence != sequence {
            problems.append("without the checkpoint: sequence \(engine.statistics.lastSequence), with it \(sequence)")
        }
        let scanned = try crashReadModel(engine)
        if scanned != state {
            problems.append("without the checkpoint: \(scanned.difference(from: state)) (deleted keys back?)")
        }
        problems += indexProblems(engine, scanned).map { "without the checkpoint: " + $0 }
        let report = try engine.verify()
        if !report.ok { problems.append("without the checkpoint: verify: \(report.problems.prefix(3))") }
        return problems
    }
}
