import ArgumentParser
import LucidEngine

/// `lucidctl compact <dir> [--dry-run] [--json]`: rewrites the live records of every segment, with progress, and
/// reports size before and after, records moved and time; `--dry-run` lists live and dead bytes per segment.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Rewrite a store's live records into compacted segments and remove the old ones.",
        discussion: """
            Seals the active segment, then compacts every sealed segment (online and crash-safe: the manifest \
            write is the commit point). Progress goes to standard error: a bar on a terminal, a line per tenth \
            otherwise. The summary (size before and after, records moved, time) goes to standard output. \
            --dry-run opens the store read-only and lists the live and dead bytes of each segment instead.

            \(Lucidctl.exitCodes)
            """
    )

    @Argument(help: "The store directory.")
    var directory: String

    @Flag(help: "Change nothing: list live and dead bytes per segment.")
    var dryRun = false

    @OptionGroup var output: OutputOptions

    func run() throws {
        if dryRun { return try runDryRun() }
        try StoreAccess.requireStore(directory)
        let engine = try StoreAccess.openForWriting(directory, create: false)
        defer { try? engine.close() }
        let before: StoreStatistics, after: StoreStatistics, summary: CompactionSummary
        let progress = ProgressReporter(label: "compacting")
        do {
            before = try engine.storeStatistics()
            try engine.sealActiveSegment()
            summary = try engine.compactAndWait(CompactionOptions(progress: { p in
                progress.update(done: p.bytesDone, total: p.bytesTotal, detail: Console.count(p.recordsMoved, "record"))
            }))
            progress.finish()
            after = try engine.storeStatistics()
            try engine.close()
        } catch {
            progress.abandon()
            throw StoreAccess.failure(error, store: directory)
        }
        let seconds = Double(summary.duration.components.seconds) + Double(summary.duration.components.attoseconds) / 1e18
        if output.json {
            Console.out(JSONText.object([
                ("dry_run", .bool(false)),
                ("size_before_bytes", .uint(before.sizeBytes)),
                ("size_after_bytes", .uint(after.sizeBytes)),
                ("records_moved", .int(Int64(summary.recordsMoved))),
                ("tombstones_kept", .int(Int64(summary.tombstonesKept))),
                ("segments_compacted", .int(Int64(summary.inputSegments.count))),
                ("segments_written", .int(Int64(summary.outputSegments.count))),
                ("segments_after", .int(Int64(after.segments.count))),
                ("seconds", .double((seconds * 1000).rounded() / 1000)),
            ]).rendered)
            return
        }
        let saved = before.sizeBytes > after.sizeBytes ? before.sizeBytes - after.sizeBytes : 0
        let share = before.sizeBytes == 0 ? 0 : Double(saved) / Double(before.sizeBytes) * 100
        Console.out("compacted \(directory)")
        Console.out("  size before:    \(StatsCommand.sizeText(before.sizeBytes))")
        Console.out("  size after:     \(StatsCommand.sizeText(after.sizeBytes)) (\(Console.fixed(share, decimals: 1))% smaller)")
        Console.out("  records moved:  \(summary.recordsMoved)"
                    + (summary.tombstonesKept > 0 ? " (and \(summary.tombstonesKept) deletions kept)" : ""))
        Console.out("  segments:       \(summary.inputSegments.count) compacted into \(summary.outputSegments.count); "
                    + "\(after.segments.count) now")
        Console.out("  time:           \(Console.fixed(seconds, decimals: 3)) s")
    }

    private func runDryRun() throws {
        let engine = try StoreAccess.openForReading(directory)
        defer { try? engine.close() }
        let stats = try StoreAccess.attempt(store: directory) { try engine.storeStatistics() }
        let sealed = stats.segments.filter(\.sealed)
        // compact seals the active segment first, so every segment holding a record is rewritten.
        let rewritten = stats.segments.filter { $0.sealed || $0.records > 0 }
        let input = rewritten.reduce(UInt64(0)) { $0 + $1.bytes }
        let live = rewritten.reduce(UInt64(0)) { $0 + $1.liveBytes }
        if output.json {
            Console.out(JSONText.object([
                ("dry_run", .bool(true)),
                ("size_bytes", .uint(stats.sizeBytes)),
                ("live_bytes", .uint(stats.liveBytes)),
                ("dead_bytes", .uint(stats.deadBytes)),
                ("segments_to_compact", .int(Int64(rewritten.count))),
                ("bytes_to_compact", .uint(input)),
                ("segments", .array(stats.segments.map(StatsCommand.segmentJSON))),
            ]).rendered)
            return
        }
        Console.out("dry run: nothing changed in \(directory)")
        for line in StatsCommand.segmentTable(stats.segments) { Console.out(line) }
        Console.out("total: \(StatsCommand.sizeText(stats.sizeBytes)); live \(Console.bytes(stats.liveBytes)), "
                    + "dead \(Console.bytes(stats.deadBytes)) (estimated)")
        Console.out("compact would rewrite \(rewritten.count) segment\(rewritten.count == 1 ? "" : "s") "
                    + "(\(Console.bytes(input)), \(sealed.count) sealed\(rewritten.count > sealed.count ? " + the active one, sealed first" : "")) "
                    + "holding about \(Console.bytes(live)) of live records")
    }
}
