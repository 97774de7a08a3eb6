import Foundation
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Testing

/// Stores corrupted on purpose, a newer format version, and recover.
@Suite("lucidctl on damaged stores")
struct DamageTests {
    /// Flips a byte inside the first page of the oldest (sealed) segment.
    static func corruptFirstPage(_ dir: String) throws -> String {
        let segment = try CLI.firstSegment(dir)
        try CorruptionHelpers.flipBit(path: segment, offset: 64 + 200, bit: 3)
        return segment
    }

    @Test("damage found on open: every inspection command exits 2 naming file and offset; verify lists it")
    func corruptionFoundByRecovery() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 300)
            // Without a checkpoint, open reads the damaged page.
            try FileManager.default.removeItem(atPath: dir + "/CHECKPOINT")
            let segment = try Self.corruptFirstPage(dir)
            let before = try CLI.fingerprint(dir)

            for command in [["stats"], ["dump"], ["compact", "--dry-run"], ["stats", "--json"]] {
                let run = try CLI.run(command + [dir])
                #expect(run.status == 2, "\(command): \(run)")
                #expect(run.stderr.hasPrefix("lucidctl: \(dir): corrupt: \(segment) at offset "), "\(run)")
                #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
            }
            let verify = try CLI.run(["verify", dir])
            #expect(verify.status == 2, "\(verify)")
            #expect(verify.stdoutLines.count == 1, "\(verify)")
            #expect(verify.stdout.hasPrefix("\(segment):64: corruption: "), "\(verify)")

            let json = try CLI.run(["verify", dir, "--json"])
            #expect(json.status == 2, "\(json)")
            let object = try json.json()
            #expect(object["ok"] as? Bool == false)
            let problems = try #require(object["problems"] as? [[String: Any]])
            #expect(problems.count == 1)
            #expect(problems.first?["file"] as? String == segment)
            #expect(problems.first?["offset"] as? Int == 64)
            #expect(problems.first?["kind"] as? String == "corruption")
            #expect((problems.first?["detail"] as? String)?.isEmpty == false)
            #expect(try CLI.fingerprint(dir) == before, "inspection changed a damaged store")
        }
    }

    @Test("damage behind a checkpoint: the store opens and verify reports one line per problem")
    func corruptionFoundByVerify() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 300)
            let segment = try Self.corruptFirstPage(dir)
            let verify = try CLI.run(["verify", dir])
            #expect(verify.status == 2, "\(verify)")
            #expect(!verify.stdoutLines.isEmpty)
            for line in verify.stdoutLines {
                // FILE:OFFSET: KIND: DETAIL
                let parts = line.split(separator: ":", maxSplits: 3).map(String.init)
                #expect(parts.count == 4, "\(line)")
                #expect(["corruption", "missing_or_wrong_length", "index_mismatch", "io"]
                    .contains(parts.count > 2 ? parts[2].trimmingCharacters(in: .whitespaces) : ""), "\(line)")
            }
            #expect(verify.stdout.contains("\(segment):64: corruption:"), "\(verify)")
            #expect(verify.stderr.contains("problem"), "\(verify)")
            let json = try CLI.run(["verify", dir, "--json"]).json()
            #expect(json["ok"] as? Bool == false)
            #expect((json["problems"] as? [Any])?.count == verify.stdoutLines.count)
        }
    }

    @Test("a torn tail fails the strict inspection open (exit 2); compact opens as an application and cuts it")
    func tornTail() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 50)
            let active = try CLI.lastSegment(dir)
            _ = try CorruptionHelpers.appendGarbage(path: active, count: 300, seed: 7)
            let stats = try CLI.run(["stats", dir])
            #expect(stats.status == 2, "\(stats)")
            #expect(stats.stderr.contains("corrupt"), "\(stats)")
            let compact = try CLI.run(["compact", dir])
            #expect(compact.status == 0, "\(compact)")
            #expect(compact.stderr.contains("recovery cut 300 bytes"), "\(compact)")
            let verify = try CLI.run(["verify", dir])
            #expect(verify.status == 0, "\(verify)")
        }
    }

    @Test("a newer format version exits 5 with a one-line message")
    func newerFormatVersion() throws {
        try CLI.withTemporaryDirectory { dir in
            try CLI.makeStore(dir, count: 10)
            for slot in ["MANIFEST-0", "MANIFEST-1"] where FileManager.default.fileExists(atPath: dir + "/" + slot) {
                // A newer version, written as a newer engine would: its checksum holds (a version byte damaged
                // under the old checksum reads as damage instead).
                var bytes = try CorruptionHelpers.readFile(path: dir + "/" + slot)
                bytes[8] = 99
                try CorruptionHelpers.writeFile(path: dir + "/" + slot, bytes: FuzzingSupport.withValidManifestChecksum(bytes))
            }
            for arguments in [["stats", dir], ["verify", dir], ["dump", dir], ["compact", dir], ["import", dir, "-"]] {
                let run = try CLI.run(arguments)
                #expect(run.status == 5, "\(arguments): \(run)")
                #expect(run.stderr.hasPrefix("lucidctl: \(dir): newer format version than this tool reads"), "\(run)")
                #expect(run.stderr.split(separator: "\n").count == 1)
            }
        }
    }

    @Test("recover copies what verifies into a new store, reports the damage and never touches the source")
    func recover() throws {
        try CLI.withTemporaryDirectory { dir in
            let source = dir + "/store", out = dir + "/recovered"
            try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: false)
            try CLI.makeStore(source, count: 300)
            let segment = try Self.corruptFirstPage(source)
            let before = try CLI.fingerprint(source)

            let run = try CLI.run(["recover", source, "--out", out])
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("commit groups lost:"), "\(run)")
            #expect(run.stdout.contains("\(segment) at offset 64"), "\(run)")
            #expect(run.stdout.contains("verify ok"), "\(run)")
            #expect(try CLI.fingerprint(source) == before, "recover changed the source")
            #expect(try CLI.run(["verify", out]).status == 0)
            // The first commit group (50 books, 5 films) was in the damaged page; the rest survived.
            let contents = try CLI.contents(out)
            #expect(contents["books"]?.count ?? 0 >= 200)
            #expect(contents["books"]?[CLI.bytes(CLI.bookKey(299))]?.0 == CLI.bytes(CLI.bookValue(299)))

            // --json, and a second run into the now non-empty directory is refused.
            let again = try CLI.run(["recover", source, "--out", out])
            #expect(again.status == 1, "\(again)")
            #expect(again.stderr.contains("not empty"))
            let json = try CLI.run(["recover", source, "--out", dir + "/second", "--json"]).json()
            #expect((json["groups_lost"] as? Int ?? 0) >= 1)
            #expect((json["damaged"] as? [[String: Any]])?.first?["file"] as? String == segment)
            #expect(json["verified"] as? Bool == true)
        }
    }
}
