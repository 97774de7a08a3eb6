import Foundation
import LucidEngine
import Testing

/// compact and compact --dry-run.
@Suite("lucidctl compact")
struct CompactTests {
    /// A store whose books were each written five times, across several 1 MiB segments.
    static func makeOverwrittenStore(_ dir: String) throws {
        let engine = try Engine.open(at: dir, options: CLI.options())
        for version in 0..<5 {
            var batch = WriteBatch()
            for i in 0..<3000 {
                batch.put(CLI.bytes(CLI.bookValue(i, version: version) + String(repeating: "x", count: i % 200)),
                          forKey: CLI.bytes(CLI.bookKey(i)), in: "books",
                          indexTerms: [IndexTerm(index: "version", value: .int(Int64(version)))])
                if batch.count == 500 {
                    try engine.commitAndWait(batch)
                    batch = WriteBatch()
                }
            }
        }
        try engine.close()
    }

    @Test("--dry-run lists live and dead bytes per segment and changes nothing")
    func dryRun() throws {
        try CLI.withTemporaryDirectory { dir in
            try Self.makeOverwrittenStore(dir)
            let before = try CLI.fingerprint(dir)
            let text = try CLI.run(["compact", dir, "--dry-run"])
            #expect(text.status == 0, "\(text)")
            #expect(text.stdout.contains("live"), "\(text)")
            #expect(text.stdout.contains("dead"), "\(text)")
            #expect(text.stdout.contains("0000000000000001.seg"), "\(text)")
            #expect(text.stdout.contains("compact would rewrite"), "\(text)")
            let json = try CLI.run(["compact", dir, "--dry-run", "--json"]).json()
            #expect(json["dry_run"] as? Bool == true)
            let segments = try #require(json["segments"] as? [[String: Any]])
            #expect(segments.count >= 2, "\(text)")
            for segment in segments {
                #expect(segment["live_bytes"] is Int && segment["dead_bytes"] is Int)
            }
            #expect((json["dead_bytes"] as? Int ?? 0) > 0)
            #expect(try CLI.fingerprint(dir) == before)
        }
    }

    @Test("compact shows progress, reports size before and after, records moved and time, and keeps every record")
    func compact() throws {
        try CLI.withTemporaryDirectory { dir in
            try Self.makeOverwrittenStore(dir)
            let dumpBefore = try CLI.run(["dump", dir]).stdout
            let statsBefore = try CLI.run(["stats", dir, "--json"]).json()
            let run = try CLI.run(["compact", dir])
            #expect(run.status == 0, "\(run)")
            for fragment in ["size before:", "size after:", "records moved:  3000", "time:"] {
                #expect(run.stdout.contains(fragment), "missing \"\(fragment)\": \(run)")
            }
            // Not a terminal: plain progress lines.
            #expect(run.stderr.contains("compacting: 100%"), "\(run)")
            #expect(!run.stderr.contains("\r"))
            #expect(try CLI.run(["dump", dir]).stdout == dumpBefore)
            #expect(try CLI.run(["verify", dir]).status == 0)
            let statsAfter = try CLI.run(["stats", dir, "--json"]).json()
            #expect((statsAfter["size_bytes"] as? Int ?? .max) < (statsBefore["size_bytes"] as? Int ?? 0))

            let json = try CLI.run(["compact", dir, "--json"])
            #expect(json.status == 0, "\(json)")
            let summary = try json.json()
            #expect(summary["records_moved"] as? Int == 3000)
            for member in ["size_before_bytes", "size_after_bytes", "seconds"] { #expect(summary[member] != nil) }
        }
    }
}
