import ArgumentParser
import Foundation
import LucidEngine

/// `lucidctl recover <dir> --out <newdir>`: salvages every verifiable batch of a damaged store into a new store,
/// never touching the source, and reports what was lost.
struct RecoverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Copy every verifiable commit group of a (damaged) store into a new store.",
        discussion: """
            Reads every segment of the source (its manifest is not needed), finds valid pages again after \
            damage, and copies each commit group whose pages all verify, in log order, into the new store \
            (the newest version of each key wins). The source is only read, under its lock. Reports the groups \
            copied and lost and every damaged byte range, then verifies the new store. Exits 0 once the new \
            store is written and verifies, whatever was lost (the report says what); the --out directory must \
            be missing or empty.

            \(Lucidctl.exitCodes)
            """
    )

    @Argument(help: "The damaged store directory (only read).")
    var directory: String

    @Option(help: "The new store's directory (missing or empty).")
    var out: String

    @OptionGroup var output: OutputOptions

    func run() throws {
        try StoreAccess.requireStore(directory)
        let source = URL(fileURLWithPath: directory).standardizedFileURL.path
        let target = URL(fileURLWithPath: out).standardizedFileURL.path
        guard source != target, !target.hasPrefix(source + "/") else {
            throw CommandFailure(.badInput, "--out must be outside the source store \(directory)")
        }
        switch StoreAccess.kind(of: out) {
        case .missing, .emptyDirectory: break
        case .notADirectory: throw CommandFailure(.badInput, "--out \(out): not a directory")
        case .store, .otherFiles: throw CommandFailure(.badInput, "--out \(out): not empty (recover writes a new store)")
        }
        let parent = StoreAccess.parent(of: out)
        if StoreAccess.kind(of: out) == .missing, StoreAccess.kind(of: parent) == .missing {
            throw CommandFailure(.badInput, "--out \(out): no such directory: \(parent)")
        }
        let report = try StoreAccess.attempt(store: directory) {
            try Engine.salvage(from: directory, to: out, options: StoreAccess.baseOptions())
        }
        // The new store must be sound: check it as `verify` would.
        let engine = try StoreAccess.openForReading(out)
        defer { try? engine.close() }
        let verified = try StoreAccess.attempt(store: out) { try engine.verify() }
        let keyspaces = engine.keyspaces()
        let liveKeys = keyspaces.reduce(0) { $0 + engine.count(in: $1) }

        if output.json {
            Console.out(JSONText.object([
                ("groups_copied", .int(Int64(report.groupsCopied))),
                ("records_copied", .int(Int64(report.recordsCopied))),
                ("groups_lost", .int(Int64(report.groupsLost))),
                ("damaged", .array(report.damagedRanges.map { range in
                    .object([("file", .string(range.file)), ("offset", .uint(range.offset)),
                             ("length", .uint(range.length))])
                })),
                ("keyspaces", .int(Int64(keyspaces.count))),
                ("live_keys", .int(Int64(liveKeys))),
                ("verified", .bool(verified.ok)),
            ]).rendered)
        } else {
            Console.out("recovered \(directory) into \(out)")
            Console.out("  commit groups copied: \(report.groupsCopied) (\(Console.count(report.recordsCopied, "record")))")
            Console.out("  commit groups lost:   \(report.groupsLost)")
            if report.damagedRanges.isEmpty {
                Console.out("  damaged ranges:       none")
            } else {
                Console.out("  damaged ranges:")
                for range in report.damagedRanges {
                    Console.out("    \(range.file) at offset \(range.offset): \(range.length) bytes")
                }
            }
            Console.out("  new store:            \(Console.count(liveKeys, "live key")) in "
                        + "\(Console.count(keyspaces.count, "keyspace")), "
                        + (verified.ok ? "verify ok" : "verify found \(Console.count(verified.problems.count, "problem"))"))
        }
        if !verified.ok {
            for problem in verified.problems { Console.err("lucidctl: \(out): \(problem)") }
            throw CommandFailure(.corruption, "\(out): the recovered store does not verify")
        }
    }
}
