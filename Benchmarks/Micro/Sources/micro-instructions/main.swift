import CCallgrind
import Foundation
import MicroWorkloads

// Instructions per operation of the micro workloads, counted by callgrind, checked against Instructions.json.
//
// package-benchmark counts instructions with the processor's performance counters, which this project's VMs do not
// have (Benchmarks/README.md). Callgrind counts the instructions a program executes whatever the machine, and the
// count is repeatable: each workload runs in its own process under `valgrind --tool=callgrind --instr-atstart=no`,
// is set up and warmed uninstrumented, and only its counted operations run instrumented (client requests around
// them, `CCallgrind`); Swift's hashing is made deterministic (`SWIFT_DETERMINISTIC_HASHING`). The count covers
// every thread while instrumentation is on (the writer thread's work for a commit, the tasks of an async call).
//
//   swift run -c release --package-path Benchmarks/Micro micro-instructions check    # against Instructions.json
//   swift run -c release --package-path Benchmarks/Micro micro-instructions update   # store what moved
//   swift run -c release --package-path Benchmarks/Micro micro-instructions update --all   # store every figure
//   swift run -c release --package-path Benchmarks/Micro micro-instructions print [--filter REGEX]
//
// Run from the repository root (`--path` changes the file). `check` exits with status 1 when a workload's count
// moved by more than the tolerance (2% unless `--tolerance PCT`) either way: a regression fails, and an improvement
// asks for `update`, so that the stored figure follows the code.

struct Options {
    var command = "print"
    var filter: String?
    var tolerance = 2.0
    var path = "Benchmarks/Micro/Instructions.json"
    var all = false
    var child: (name: String, warmup: Int, counted: Int)?
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var rest = arguments[...]
    func value(_ flag: String) -> String {
        guard let v = rest.popFirst() else { fail("\(flag) needs a value") }
        return v
    }
    while let argument = rest.popFirst() {
        switch argument {
        case "check", "update", "print": options.command = argument
        case "--filter": options.filter = value(argument)
        case "--tolerance":
            guard let tolerance = Double(value(argument)) else { fail("--tolerance takes a percentage") }
            options.tolerance = tolerance
        case "--path": options.path = value(argument)
        case "--all": options.all = true
        case "--child":
            let name = value(argument)
            guard let warmup = Int(value(argument)), let counted = Int(value(argument)) else { fail("--child NAME W N") }
            options.child = (name, warmup, counted)
        default: fail("unknown argument \(argument)")
        }
    }
    return options
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("micro-instructions: \(message)\n".utf8))
    exit(2)
}

/// In the child: sets `workload` up, runs `warmup` operations, then `counted` operations with instrumentation on.
func runChild(_ workload: MicroWorkload, warmup: Int, counted: Int) async throws {
    guard micro_running_on_valgrind() == 1 else { fail("--child runs under valgrind only (built without callgrind.h?)") }
    let runner = try await workload.make()
    if warmup > 0 { try await runner.run(warmup) }
    micro_callgrind_start()
    try await runner.run(counted)
    micro_callgrind_stop()
    runner.dispose()
}

/// Runs `command` and waits for it; exits with a message when it fails.
func runTool(_ command: [String], environment: [String: String]? = nil, what: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    if let environment { process.environment = environment }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { fail("\(what): \(command[0]) exited with status \(process.terminationStatus)") }
}

/// This executable without its debug information, for the children: valgrind 3.19 gives up on the DWARF 5 that clang
/// writes for the engine's C file (CLucidSupport), and callgrind's totals need no symbols. Made once per run, on
/// first use (a static: top-level globals of main.swift are made as the code reaches them, in the children too).
enum Child {
    static let executable: String = {
        let path = NSTemporaryDirectory() + "micro-instructions-child-\(getpid())"
        do {
            try runTool(["strip", "--strip-debug", "-o", path, CommandLine.arguments[0]], what: "stripping the child")
        } catch {
            fail("cannot strip \(CommandLine.arguments[0]): \(error)")
        }
        return path
    }()
}

/// Runs `workload` in a child process under callgrind; returns the instructions it counted.
func count(_ workload: MicroWorkload) throws -> UInt64 {
    let output = NSTemporaryDirectory() + "micro-instructions-\(getpid())-\(workload.name).out"
    defer { try? FileManager.default.removeItem(atPath: output) }
    // Warmed with as many operations as are counted: a workload that draws its keys from a fixed seed on each
    // `run` (a get) then finds them as package-benchmark's later iterations do, cached.
    let warmup = workload.countedOperations
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_DETERMINISTIC_HASHING"] = "1"
    try runTool(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=\(output)",
                 Child.executable, "--child", workload.name, String(warmup), String(workload.countedOperations)],
                environment: environment, what: workload.name)
    let text = try String(contentsOfFile: output, encoding: .utf8)
    guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("totals:") || $0.hasPrefix("summary:") }),
          let total = line.split(separator: " ").last.flatMap({ UInt64($0) })
    else { fail("\(workload.name): no totals line in callgrind's output") }
    return total
}

let options = parse(Array(CommandLine.arguments.dropFirst()))
if let child = options.child {
    guard let workload = MicroWorkload.all.first(where: { $0.name == child.name }) else { fail("no workload \(child.name)") }
    // The main thread waits on a semaphore rather than awaiting at top level: a top-level `await` parks the main
    // thread in dispatch_main's sigsuspend, and valgrind 3.19 then crashes as the first pool thread starts.
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var failure: (any Error)?
    Task.detached {
        do { try await runChild(workload, warmup: child.warmup, counted: child.counted) } catch { failure = error }
        done.signal()
    }
    done.wait()
    if let failure { fail("\(workload.name): \(failure)") }
    exit(0)
}

let selected = try MicroWorkload.all.filter { workload in
    guard let filter = options.filter else { return true }
    return try Regex(filter).firstMatch(in: workload.name) != nil
}
let stored: [String: Double] = (try? JSONDecoder().decode([String: Double].self,
                                                            from: Data(contentsOf: URL(fileURLWithPath: options.path)))) ?? [:]
var measured = stored
var outside: [String] = []
print("workload                              instructions/op      stored    change")
for workload in selected {
    let total = try count(workload)
    let perOperation = (Double(total) / Double(workload.countedOperations)).rounded()
    measured[workload.name] = perOperation
    var change = "new"
    if let before = stored[workload.name], before > 0 {
        let percent = (perOperation - before) / before * 100
        change = String(format: "%+.2f%%", percent)
        if abs(percent) > options.tolerance {
            outside.append("\(workload.name) (\(change))")
        } else if !options.all {
            measured[workload.name] = before   // within the tolerance: `update` keeps the stored figure
        }
    } else {
        outside.append("\(workload.name) (no stored figure)")
    }
    let storedText = stored[workload.name].map { String(Int($0)) } ?? "-"
    print(workload.name.padding(toLength: 36, withPad: " ", startingAt: 0)
          + String(Int(perOperation)).leftPadded(to: 17) + storedText.leftPadded(to: 12) + change.leftPadded(to: 10))
}
if !selected.isEmpty { try? FileManager.default.removeItem(atPath: Child.executable) }

switch options.command {
case "update":
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(measured).write(to: URL(fileURLWithPath: options.path))
    print("wrote \(options.path)")
case "check":
    if outside.isEmpty {
        print("every workload within \(options.tolerance)% of \(options.path)")
    } else {
        print("outside \(options.tolerance)% of \(options.path) (a regression, or an improvement to store with `update`): "
              + outside.joined(separator: ", "))
        exit(1)
    }
default:
    break
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
