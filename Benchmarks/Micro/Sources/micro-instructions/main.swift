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
            guard let tolerance = Double(value(argument)), tolerance.isFinite, tolerance >= 0 else {
                fail("--tolerance takes a percentage (a finite number, 0 or more)")
            }
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

let selected: [MicroWorkload]
do {
    let filter = try options.filter.map { try Regex($0) }
    selected = MicroWorkload.all.filter { workload in filter.map { workload.name.firstMatch(of: $0) != nil } ?? true }
} catch {
    fail("--filter: not a regular expression: \(error)")
}
guard !selected.isEmpty else { fail("no workload matches --filter \(options.filter ?? "")") }

// The stored figures: a missing file holds none (`update` creates it); an unreadable one is an error.
var stored: [String: Double] = [:]
if FileManager.default.fileExists(atPath: options.path) {
    do {
        stored = try JSONDecoder().decode([String: Double].self, from: Data(contentsOf: URL(fileURLWithPath: options.path)))
    } catch {
        fail("\(options.path): not a JSON object of instruction counts: \(error)")
    }
} else if options.command == "check" {
    fail("\(options.path): no such file (run from the repository root, or pass --path)")
}

var measured = stored
var outside: [String] = []
print("workload                              instructions/op      stored    change")
for workload in selected {
    let total = count(workload)
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
for path in temporaryFiles { try? FileManager.default.removeItem(atPath: path) }

// Figures stored for workloads that no longer exist: reported by `check`, dropped by an unfiltered `update`.
let known = Set(MicroWorkload.all.map(\.name))
let stale = stored.keys.filter { !known.contains($0) }.sorted()
if !stale.isEmpty && options.filter == nil {
    outside += stale.map { "\($0) (stored, but no such workload)" }
    for name in stale { measured[name] = nil }
}

switch options.command {
case "update":
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    do {
        try encoder.encode(measured).write(to: URL(fileURLWithPath: options.path))
    } catch {
        fail("cannot write \(options.path): \(error)")
    }
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
