import ArgumentParser
import LucidEngine

/// `lucidctl stats <dir> [--json]`: format version, keyspaces with record counts, indexes with entry counts,
/// segments, live and dead bytes, compression ratio.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show a store's format version, keyspaces, indexes, segments, live and dead bytes.",
        discussion: """
            Opens the store read-only (strict recovery) and changes nothing. Live bytes are estimated per page \
            from the share of its records that are current.

            \(Lucidctl.exitCodes)
            """
    )

    @Argument(help: "The store directory.")
    var directory: String

    @OptionGroup var output: OutputOptions

    func run() throws {
        let engine = try StoreAccess.openForReading(directory)
        defer { try? engine.close() }
        let stats = try StoreAccess.attempt(store: directory) { try engine.storeStatistics() }
        let formatVersion = StoreAccess.manifestFormatVersion(directory) ?? stats.formatVersion
        if output.json {
            Console.out(Self.json(stats, formatVersion: formatVersion).rendered)
        } else {
            for line in Self.text(stats, formatVersion: formatVersion, directory: directory) { Console.out(line) }
        }
    }

    static func json(_ stats: StoreStatistics, formatVersion: UInt32) -> JSONText {
        .object([
            ("format_version", .uint(UInt64(formatVersion))),
            ("size_bytes", .uint(stats.sizeBytes)),
            ("live_bytes", .uint(stats.liveBytes)),
            ("dead_bytes", .uint(stats.deadBytes)),
            ("compression_ratio", .double((stats.compressionRatio * 1000).rounded() / 1000)),
            ("segment_count", .int(Int64(stats.segments.count))),
            ("segments", .array(stats.segments.map(segmentJSON))),
            ("keyspaces", .array(stats.keyspaces.map { keyspace in
                .object([
                    ("name", .string(keyspace.name)),
                    ("records", .int(Int64(keyspace.records))),
                    ("indexes", .array(keyspace.indexes.map { index in
                        .object([("name", .string(index.name)), ("entries", .int(Int64(index.entries)))])
                    })),
                ])
            })),
        ])
    }

    /// One segment as JSON (shared with `compact --dry-run --json`).
    static func segmentJSON(_ segment: SegmentStatistics) -> JSONText {
        .object([
            ("file", .string(segment.fileName)),
            ("id", .uint(segment.id)),
            ("kind", .string(segment.kind.rawValue)),
            ("sealed", .bool(segment.sealed)),
            ("bytes", .uint(segment.bytes)),
            ("pages", .int(Int64(segment.pages))),
            ("records", .int(Int64(segment.records))),
            ("live_records", .int(Int64(segment.liveRecords))),
            ("live_bytes", .uint(segment.liveBytes)),
            ("dead_bytes", .uint(segment.deadBytes)),
        ])
    }

    static func text(_ stats: StoreStatistics, formatVersion: UInt32, directory: String) -> [String] {
        let sealed = stats.segments.filter(\.sealed).count
        var lines = [
            "store:              \(directory)",
            "format version:     \(formatVersion)",
            "size:               \(sizeText(stats.sizeBytes))",
            "live bytes:         \(sizeText(stats.liveBytes)) (estimated)",
            "dead bytes:         \(sizeText(stats.deadBytes))",
            "compression ratio:  \(Console.fixed(stats.compressionRatio, decimals: 2))",
            "segments:           \(stats.segments.count) (\(sealed) sealed, \(stats.segments.count - sealed) active)",
            "keyspaces:          \(stats.keyspaces.count)",
        ]
        for keyspace in stats.keyspaces {
            lines.append("  \(keyspace.name): \(Console.count(keyspace.records, "record"))")
            for index in keyspace.indexes {
                lines.append("    index \(index.name): \(Console.count(index.entries, "entry", "entries"))")
            }
        }
        lines.append("")
        lines.append(contentsOf: segmentTable(stats.segments))
        return lines
    }

    /// `12.3 MiB (12901234 bytes)`.
    static func sizeText(_ bytes: UInt64) -> String { "\(Console.bytes(bytes)) (\(bytes) bytes)" }

    /// A table of segments with live and dead bytes (shared with `compact --dry-run`).
    static func segmentTable(_ segments: [SegmentStatistics]) -> [String] {
        func pad(_ s: String, _ width: Int) -> String { s + String(repeating: " ", count: max(0, width - s.count)) }
        func right(_ s: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - s.count)) + s }
        var lines = [pad("segment", 22) + pad("kind", 11) + pad("state", 8) + right("bytes", 12) + right("pages", 8)
                     + right("records", 10) + right("live", 12) + right("dead", 12) + right("dead %", 8)]
        for s in segments {
            let deadShare = s.bytes == 0 ? 0 : Double(s.deadBytes) / Double(s.bytes) * 100
            lines.append(pad(s.fileName, 22) + pad(s.kind.rawValue, 11) + pad(s.sealed ? "sealed" : "active", 8)
                         + right("\(s.bytes)", 12) + right("\(s.pages)", 8) + right("\(s.records)", 10)
                         + right("\(s.liveBytes)", 12) + right("\(s.deadBytes)", 12)
                         + right(Console.fixed(deadShare, decimals: 1), 8))
        }
        return lines
    }
}
