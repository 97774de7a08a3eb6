import CCallgrind
import Foundation
import MicroWorkloads

/// Temporary files to remove however the run ends (`fail` removes them too). Touched by the main thread only.
nonisolated(unsafe) var temporaryFiles: [String] = []

/// Prints `message` and exits with status 2, removing the temporary files first.
func fail(_ message: String) -> Never {
    for path in temporaryFiles { try? FileManager.default.removeItem(atPath: path) }
    FileHandle.standardError.write(Data("micro-instructions: \(message)\n".utf8))
    exit(2)
}

/// In the child: sets `workload` up, runs `warmup` operations, then `counted` operations with instrumentation on,
/// and disposes of the workload whatever happened.
func runChild(_ workload: MicroWorkload, warmup: Int, counted: Int) async throws {
    guard micro_running_on_valgrind() == 1 else { fail("--child runs under valgrind only (built without callgrind.h?)") }
    let runner = try await workload.make()
    defer { runner.dispose() }
    if warmup > 0 { try await runner.run(warmup) }
    micro_callgrind_start()
    defer { micro_callgrind_stop() }
    try await runner.run(counted)
}

/// Runs `command`; on failure exits with `what`, how the command ended and the end of its standard error.
func runTool(_ command: [String], environment: [String: String]? = nil, what: String) {
    let errors = NSTemporaryDirectory() + "micro-instructions-\(getpid())-stderr"
    _ = FileManager.default.createFile(atPath: errors, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errors) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    if let environment { process.environment = environment }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle(forWritingAtPath: errors)
    do {
        try process.run()
    } catch {
        fail("\(what): cannot run \(command[0]): \(error)")
    }
    process.waitUntilExit()
    guard process.terminationReason != .exit || process.terminationStatus != 0 else { return }
    let how = process.terminationReason == .uncaughtSignal ? "was killed by signal \(process.terminationStatus)"
        : "exited with status \(process.terminationStatus)"
    let tail = ((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")
        .split(separator: "\n").filter { !$0.hasPrefix("==") }.suffix(5).joined(separator: "\n")
    fail("\(what): \(command[0]) \(how)" + (tail.isEmpty ? "" : ":\n\(tail)"))
}

/// This executable without its debug information, for the children: valgrind 3.19 gives up on the DWARF 5 that clang
/// writes for the engine's C file (CLucidSupport), and callgrind's totals need no symbols. Made once per run, on
/// first use (a static: top-level globals of main.swift are made as the code reaches them, in the children too).
enum Child {
    static let executable: String = {
        let path = NSTemporaryDirectory() + "micro-instructions-child-\(getpid())"
        temporaryFiles.append(path)
        runTool(["strip", "--strip-debug", "-o", path, CommandLine.arguments[0]], what: "stripping the child")
        return path
    }()
}

/// Runs `workload` in a child process under callgrind; returns the instructions it counted.
func count(_ workload: MicroWorkload) -> UInt64 {
    let output = NSTemporaryDirectory() + "micro-instructions-\(getpid())-\(workload.name).out"
    temporaryFiles.append(output)
    defer { try? FileManager.default.removeItem(atPath: output) }
    // Warmed with as many operations as are counted: a workload that draws its keys from a fixed seed on each
    // `run` (a get) then finds them as package-benchmark's later iterations do, cached.
    let warmup = workload.countedOperations
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_DETERMINISTIC_HASHING"] = "1"
    runTool(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=\(output)",
             Child.executable, "--child", workload.name, String(warmup), String(workload.countedOperations)],
            environment: environment, what: workload.name)
    guard let text = try? String(contentsOfFile: output, encoding: .utf8),
          let line = text.split(separator: "\n").last(where: { $0.hasPrefix("totals:") || $0.hasPrefix("summary:") }),
          let total = line.split(separator: " ").last.flatMap({ UInt64($0) })
    else { fail("\(workload.name): no totals line in callgrind's output") }
    return total
}
