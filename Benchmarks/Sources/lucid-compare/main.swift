import CompareReport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// lucid-compare: the same workloads on LucidEngine, LMDB, RocksDB, SQLite and GRDB, and on Lucid's data layer
// (CoreManager over a DiskStore, with or without a CacheStore) for comparison with GRDB.
//
// The parent process re-executes itself once per engine and phase (`--child PHASE --engine E`), so that every
// engine starts from a fresh process: memory figures are its own, and no engine's caches help another.

let usage = """
    usage: lucid-compare [--records N] [--quick] [--json] [--dir DIR] [--engines a,b,...] [--commits N]
                         [--queries N] [--rounds N] [--workloads a,b,...]

      --records N    records to load (default 1,000,000; --quick: 100,000)
      --quick        smoke-test sizes: 100k records, 1,000 durable commits, 2,000 index queries
      --json         print {"records", "machine", "results": [{"workload", "engine", "value", "unit"}]} only
      --dir DIR      parent of the temporary store directory (default /tmp); removed at the end
      --engines L    comma-separated subset of: \(EngineKind.allCases.map(\.rawValue).joined(separator: ","))
      --commits N    single-record durable commits per commit workload (default 10,000; --quick: 1,000)
      --queries N    queries per secondary-index workload (default 10,000; --quick: 2,000)
      --rounds N     rounds of the read and commit phases, the engines taking turns in each (default 3; --quick:
                     1); a figure is its median over the rounds, a ratio the median of the rounds' ratios
      --workloads L  comma-separated subset of the workloads to report; only the phases they need run (e.g.
                     reopen_ms: the random-key load, then the read phase)
    """

struct Options {
    var records: Int?
    var quick = false
    var json = false
    var directory: String?
    var engines = EngineKind.allCases
    /// Workloads to report (nil: all).
    var workloads: Set<String>?
    var commits: Int?
    var queries: Int?
    var rounds: Int?
    var fdatasyncOps: Int?
    var child: String?
    var engine: EngineKind?

    var size: RunSize {
        RunSize(records: records ?? (quick ? 100_000 : 1_000_000),
                commits: commits ?? (quick ? 1_000 : 10_000),
                queries: queries ?? (quick ? 2_000 : 10_000),
                fdatasyncOps: fdatasyncOps ?? (quick ? 500 : 2_000))
    }

    /// Rounds of the read and commit phases (``RunSize`` is what one child runs; this is how often the parent
    /// runs those children).
    var roundCount: Int { rounds ?? (quick ? 1 : 3) }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw BenchError.failed("\(flag) needs a value") }
            return v
        }
        func count(_ flag: String) throws -> Int {
            let text = try value(flag).replacingOccurrences(of: "_", with: "").replacingOccurrences(of: ",", with: "")
            guard let n = Int(text), n > 0 else { throw BenchError.failed("\(flag) needs a positive integer") }
            return n
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--records": options.records = try count(argument)
            case "--quick": options.quick = true
            case "--json": options.json = true
            case "--dir": options.directory = try value(argument)
            case "--commits": options.commits = try count(argument)
            case "--queries": options.queries = try count(argument)
            case "--rounds": options.rounds = try count(argument)
            case "--fdatasync-ops": options.fdatasyncOps = try count(argument)
            case "--engines":
                options.engines = try value(argument).split(separator: ",").map {
                    guard let kind = EngineKind(rawValue: String($0)) else {
                        throw BenchError.failed("unknown engine \($0)")
                    }
                    return kind
                }
            case "--workloads":
                let names = try value(argument).split(separator: ",").map(String.init)
                for name in names where !workloadInfos.contains(where: { $0.name == name }) {
                    throw BenchError.failed("unknown workload \(name); one of: "
                                            + workloadInfos.map(\.name).joined(separator: ", "))
                }
                options.workloads = Set(names)
            case "--engine":
                let name = try value(argument)
                guard let kind = EngineKind(rawValue: name) else { throw BenchError.failed("unknown engine \(name)") }
                options.engine = kind
            case "--child", "--workload": options.child = try value(argument)
            case "-h", "--help":
                print(usage)
                exit(0)
            default: throw BenchError.failed("unknown argument \(argument)\n\(usage)")
            }
        }
        return options
    }
}

func log(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Runs one phase in a child process; returns its results, or nil when it failed. Context figures (measured
/// alongside, not results) are appended to `context`. Every figure is marked with `round` (0-based).
func runChild(phase: String, engine: EngineKind?, directory: String, size: RunSize, round: Int,
              context: inout [Figure]) -> [Figure]? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executablePath())
    var arguments = ["--child", phase, "--dir", directory, "--records", String(size.records),
                     "--commits", String(size.commits), "--queries", String(size.queries),
                     "--fdatasync-ops", String(size.fdatasyncOps)]
    if let engine { arguments += ["--engine", engine.rawValue] }
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    do { try process.run() } catch {
        log("  cannot start child: \(error)")
        return nil
    }
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    var results: [Figure] = []
    for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == "result" || fields[0] == "context",
              let value = Double(fields[2]) else { continue }
        let result = Figure(workload: String(fields[1]), engine: engine?.rawValue ?? "os", value: value,
                            unit: String(fields[3]), round: round)
        if fields[0] == "result" { results.append(result) } else { context.append(result) }
    }
    guard process.terminationStatus == 0 else {
        log("  \(engine?.rawValue ?? "os") \(phase): child failed (status \(process.terminationStatus))")
        return nil
    }
    return results
}

/// The phases that measure `workloads` (and those they depend on: the read and compaction phases use the store
/// the random-key load leaves).
func phasesNeeded(_ workloads: Set<String>) -> Set<String> {
    var phases = Set<String>()
    for workload in workloads {
        switch workload {
        case "fdatasync_4k": phases.insert("fdatasync")
        case "load_seq": phases.insert("load_seq")
        case "load_random", "size_after_load_bytes", "memory_per_record_bytes": phases.insert("load_random")
        case "size_after_compaction_bytes": phases.formUnion(["load_random", "compact"])
        case "commit_single", "commit_8_writers": phases.insert("commit")
        default: phases.formUnion(["load_random", "read"])   // get_random, scan, reopen_ms, index_eq, index_range
        }
    }
    return phases
}

func runParent(_ options: Options) -> Int32 {
    let size = options.size
    let parent = options.directory ?? "/tmp"
    var template = Array((parent + "/lucid-compare-XXXXXX").utf8CString)
    guard (try? makeDirectory(parent)) != nil, let made = mkdtemp(&template) else {
        log("cannot create a temporary directory under \(parent)")
        return 1
    }
    let directory = String(cString: made)
    defer { removeTree(directory) }
    let machine = machineDescription(directory: parent)

    log("lucid-compare: \(size.records) records, \(size.commits) durable commits per commit workload, "
        + "\(size.queries) queries per index workload; stores in \(directory)")
    var results: [Figure] = []
    var context: [Figure] = []
    var failures = 0
    let started = now()
    func phase(_ name: String, _ engine: EngineKind?, round: Int = 0) {
        let t0 = now()
        log("[\(engine?.rawValue ?? "os")] \(name)")
        if let r = runChild(phase: name, engine: engine, directory: directory, size: size, round: round,
                             context: &context) {
            results += r
        } else {
            failures += 1
        }
        log(String(format: "  %.1f s", now() - t0))
    }
    let phases = options.workloads.map(phasesNeeded) ?? Set(["fdatasync"] + enginePhases)
    if phases.contains("fdatasync") { phase("fdatasync", nil) }
    // Every engine loads first; then the rounds, in each of which every engine reads and commits in turn (so that
    // the figures a ratio divides were taken minutes apart, whatever the VM does over the run); compaction last,
    // as it rewrites the store the reads use.
    for engine in options.engines {
        for name in loadPhases where phases.contains(name) { phase(name, engine) }
    }
    for round in 0 ..< options.roundCount {
        if options.roundCount > 1 { log("round \(round + 1) of \(options.roundCount)") }
        for engine in options.engines {
            for name in roundPhases where phases.contains(name) { phase(name, engine, round: round) }
        }
    }
    for engine in options.engines where phases.contains("compact") { phase("compact", engine) }
    log(String(format: "total %.1f s", now() - started))
    if let wanted = options.workloads { results.removeAll { !wanted.contains($0.workload) } }

    let command = (["swift run -c release --package-path Benchmarks lucid-compare"]
        + CommandLine.arguments.dropFirst()).joined(separator: " ")
    let report = Report(records: size.records, machine: machine, command: command,
                        valueLength: Records.averageValueLength(), results: results, context: context,
                        engines: options.engines.map(\.reportEngine), commits: size.commits, queries: size.queries,
                        rounds: options.roundCount)
    print(options.json ? report.json() : report.text())
    if failures > 0 {
        log("\(failures) phase(s) failed; their workloads are missing from the results")
        return 1
    }
    return 0
}

do {
    let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
    if let phase = options.child {
        guard let directory = options.directory else { throw BenchError.failed("--child needs --dir") }
        try PhaseRunner(engine: options.engine, directory: directory, size: options.size).run(phase)
        exit(0)
    }
    exit(runParent(options))
} catch {
    log("lucid-compare: \(error)")
    exit(2)
}
