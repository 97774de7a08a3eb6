#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LucidEngine
import Testing

/// A store held open by another process: a running `lucidctl import DIR -` waiting on its standard input.
@Suite("lucidctl and a store held by another process")
struct LockTests {
    @Test("every command exits 3 naming the holder's pid; the holder then finishes its import")
    func lockedByAnotherProcess() throws {
        try CLI.withTemporaryDirectory { dir in
            let store = dir + "/store"
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
            try CLI.makeStore(store, count: 20)

            let holder = Process()
            guard let executable = CLI.executable else {
                Issue.record("lucidctl not found next to the test binary")
                return
            }
            holder.executableURL = executable
            holder.arguments = ["import", store, "-"]
            let input = Pipe()
            holder.standardInput = input
            holder.standardOutput = FileHandle.nullDevice
            holder.standardError = FileHandle.nullDevice
            try holder.run()
            defer {
                if holder.isRunning { kill(holder.processIdentifier, SIGKILL) }
                holder.waitUntilExit()
            }
            let pid = holder.processIdentifier

            // Wait until the holder has opened the store: the engine writes the holder's pid into LOCK once it
            // holds the lock (polling with lucidctl itself could take the lock first and make the holder fail).
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline && holder.isRunning {
                let text = (try? String(contentsOfFile: store + "/LOCK", encoding: .utf8)) ?? ""
                if text == "\(pid)\n" { break }
                usleep(20_000)
            }
            #expect(holder.isRunning, "the holder exited early")
            let first = try CLI.run(["stats", store])
            #expect(first.status == 3, "\(first)")
            #expect(first.stderr == "lucidctl: \(store): locked by another process (pid \(pid))\n", "\(first)")

            let commands: [[String]] = [["verify", store], ["verify", store, "--json"], ["dump", store],
                                        ["compact", store], ["compact", store, "--dry-run"], ["import", store, "-"],
                                        ["recover", store, "--out", dir + "/out"]]
            for arguments in commands {
                let run = try CLI.run(arguments, stdin: Array(#"{"keyspace":"k","key":"x","value":1}"#.utf8))
                #expect(run.status == 3, "\(arguments): \(run)")
                #expect(run.stderr.contains("locked by another process (pid \(pid))"), "\(arguments): \(run)")
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/out/MANIFEST-1"), "recover wrote into --out")

            // The holder goes on: one line, end of input, a clean exit; the record is there.
            input.fileHandleForWriting.write(Data(#"{"keyspace":"late","key":"k1","value":{"ok":true}}"#.utf8 + [0x0A]))
            try input.fileHandleForWriting.close()
            holder.waitUntilExit()
            #expect(holder.terminationStatus == 0)
            let dump = try CLI.run(["dump", store, "--keyspace", "late"])
            #expect(dump.status == 0, "\(dump)")
            #expect(dump.stdout == #"{"keyspace":"late","key":"k1","value":{"ok":true}}"# + "\n")
        }
    }
}
