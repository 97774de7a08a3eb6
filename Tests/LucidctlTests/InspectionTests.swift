import Foundation
import LucidEngine
import LucidEngineTestSupport
import Testing

/// stats, verify and compact --dry-run on sound stores: output, JSON shape, and that nothing changes.
@Suite("lucidctl stats and verify")
struct InspectionTests {
    @Test("stats --json has the documented stable members and the store's counts")
    func statsJSON() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 300)
            let run = try CLI.run(["stats", dir, "--json"])
            #expect(run.status == 0, "\(run)")
            let json = try run.json()
            #expect(json["format_version"] as? Int == 3)
            for member in ["size_bytes", "live_bytes", "dead_bytes"] {
                #expect((json[member] as? Int).map { $0 >= 0 } == true, "\(member)")
            }
            #expect((json["size_bytes"] as? Int ?? 0) > 0)
            #expect((json["compression_ratio"] as? Double).map { $0 > 0 } == true)
            let segments = try #require(json["segments"] as? [[String: Any]])
            #expect(segments.count == json["segment_count"] as? Int)
            #expect(segments.count >= 2)
            #expect(segments.allSatisfy { ($0["file"] as? String)?.hasSuffix(".seg") == true })
            let keyspaces = try #require(json["keyspaces"] as? [[String: Any]])
            #expect(keyspaces.map { $0["name"] as? String } == ["books", "films"])
            #expect(keyspaces.map { $0["records"] as? Int } == [300, 30])
            let indexes = try #require(keyspaces[0]["indexes"] as? [[String: Any]])
            #expect(indexes.map { $0["name"] as? String } == ["genre", "rating"])
            #expect(indexes.map { $0["entries"] as? Int } == [300, 300])
            #expect((keyspaces[1]["indexes"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("stats text names the format version, keyspaces, indexes and segments")
    func statsText() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 30)
            let run = try CLI.run(["stats", dir])
            #expect(run.status == 0, "\(run)")
            for fragment in ["format version:     3", "books: 30 records", "index genre: 30 entries",
                             "films: 3 records", "compression ratio:", "live bytes:", "dead bytes:",
                             "0000000000000001.seg"] {
                #expect(run.stdout.contains(fragment), "missing \"\(fragment)\" in\n\(run.stdout)")
            }
        }
    }

    @Test("verify of a sound store exits 0; --json has ok and problems")
    func verifyClean() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 100)
            let text = try CLI.run(["verify", dir])
            #expect(text.status == 0, "\(text)")
            #expect(text.stdout.hasPrefix("ok: "))
            let json = try CLI.run(["verify", dir, "--json"])
            #expect(json.status == 0, "\(json)")
            let object = try json.json()
            #expect(object["ok"] as? Bool == true)
            #expect((object["problems"] as? [Any])?.isEmpty == true)
            #expect(object["live_keys"] as? Int == 110)
        }
    }

    @Test("inspection commands change no file, even of a store that was not closed cleanly")
    func inspectionIsReadOnly() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 200)
            // As after a crash: no checkpoint covers the log (a normal open and close would write one).
            try FileManager.default.removeItem(atPath: dir + "/CHECKPOINT")
            let before = try CLI.fingerprint(dir)
            for command in [["stats"], ["stats", "--json"], ["verify"], ["dump"], ["compact", "--dry-run"],
                            ["compact", "--dry-run", "--json"]] {
                let run = try CLI.run(command + [dir])
                #expect(run.status == 0, "\(command): \(run)")
                #expect(try CLI.fingerprint(dir) == before, "\(command) changed the store")
            }
        }
    }
}
