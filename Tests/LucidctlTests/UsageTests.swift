import Foundation
import Testing

/// Help, usage errors and the "no store here" cases, with their exit codes and one-line messages.
@Suite("lucidctl usage")
struct UsageTests {
    @Test("--help names every subcommand and documents exit codes 0 to 5")
    func help() throws {
        let run = try CLI.run(["--help"])
        #expect(run.status == 0, "\(run)")
        for command in ["stats", "verify", "compact", "dump", "import", "recover"] {
            #expect(run.stdout.contains("  \(command) "), "\(command) missing from --help")
        }
        #expect(run.stdout.contains("Exit codes:"))
        for line in ["0  ok", "1  usage error or bad input", "2  corruption found", "3  store locked by another process",
                     "4  no such store", "5  the store has a newer format version"] {
            #expect(run.stdout.contains(line), "--help lacks \"\(line)\"")
        }
        let sub = try CLI.run(["import", "--help"])
        #expect(sub.status == 0)
        #expect(sub.stdout.contains("--batch"))
        for command in ["stats", "verify", "compact", "dump", "import", "recover"] {
            let help = try CLI.run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("3  store locked by another process"), "\(command) --help lacks the exit codes")
        }
    }

    @Test("usage errors exit 1 with a message and no stack trace", arguments: [
        ["frobnicate"],
        ["stats"],
        ["stats", "/tmp", "--bogus"],
        ["import", "/tmp/x"],
        ["import", "/tmp/x", "-", "--batch", "0"],
        ["dump", "/tmp/x", "--limit", "many"],
        ["recover", "/tmp/x"],
    ])
    func usageErrors(arguments: [String]) throws {
        let run = try CLI.run(arguments)
        #expect(run.status == 1, "\(run)")
        #expect(run.stderr.contains("Error:"), "\(run)")
        #expect(run.stdout.isEmpty)
    }

    @Test("a missing directory, a file and a directory without a store exit 4 with a one-line message")
    func noStore() throws {
        try CLI.withTemporaryDirectory { dir in
            let missing = dir + "/missing"
            let empty = dir + "/empty"
            let other = dir + "/other"
            let file = dir + "/file"
            try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: false)
            try Data("x".utf8).write(to: URL(fileURLWithPath: other + "/notes.txt"))
            try Data("x".utf8).write(to: URL(fileURLWithPath: file))
            let cases: [(String, String)] = [(missing, "no such directory"), (empty, "not a store"),
                                             (other, "not a store"), (file, "not a directory")]
            for (path, message) in cases {
                for command in [["stats"], ["verify"], ["dump"], ["compact"], ["compact", "--dry-run"]] {
                    let run = try CLI.run(command + [path])
                    #expect(run.status == 4, "\(command) \(path): \(run)")
                    #expect(run.stderr == "lucidctl: \(path): \(message)"
                            + (message == "not a store" ? " (no MANIFEST or segment files)" : "") + "\n", "\(run)")
                    #expect(run.stdout.isEmpty)
                }
                let recover = try CLI.run(["recover", path, "--out", dir + "/out"])
                #expect(recover.status == 4, "\(recover)")
            }
            // import creates a store in a missing or empty directory, but refuses other files.
            let refused = try CLI.run(["import", other, "-"], stdin: Array(#"{"keyspace":"k","key":"a","value":1}"#.utf8))
            #expect(refused.status == 4, "\(refused)")
            #expect(refused.stderr.contains("not a store, and not empty"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: other) == ["notes.txt"])
        }
    }
}
