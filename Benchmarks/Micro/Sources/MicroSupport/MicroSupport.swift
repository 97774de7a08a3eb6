import Benchmark
import Foundation
import MicroWorkloads

/// The metrics every micro-benchmark records: wall clock, CPU time, throughput and mallocs, plus instructions on a
/// machine whose kernel exposes a hardware PMU.
///
/// CPU time is package-benchmark's `cpuTotal`, which on Linux comes from `/proc/self/stat` in scheduler ticks
/// (10 ms): an iteration shorter than that reads 0 or 10 ms, so per-iteration CPU figures mean something only for
/// long iterations, and the wall clock is the time to read.
///
/// package-benchmark counts instructions with `perf_event_open`; where that fails (a VM without a virtual PMU,
/// as on this project's machines: dmesg says "PMU not available due to virtualization", `perf stat -e
/// instructions` says "<not supported>") it reports 0 without a warning, and a threshold of 0 would check
/// nothing. So instructions are recorded only when `/sys/bus/event_source/devices` lists a CPU PMU (`cpu`, or
/// `cpu_core` on hybrid Intel parts).
public let microMetrics: [BenchmarkMetric] =
    [.wallClock, .cpuTotal, .throughput, .mallocCountTotal] + (hardwareCountersAvailable ? [.instructions] : [])

public let hardwareCountersAvailable: Bool = {
    #if os(Linux)
    ["cpu", "cpu_core"].contains { FileManager.default.fileExists(atPath: "/sys/bus/event_source/devices/" + $0) }
    #else
    false
    #endif
}()

/// The configuration of one micro-benchmark.
///
/// - Parameters:
///   - scalingFactor: operations per iteration (the body loops over `benchmark.scaledIterations`). The printed
///     figures are per operation; the stored thresholds are per iteration.
///   - mallocSlack: the tolerance of `thresholds check` on `mallocCountTotal`, in mallocs per iteration at p90,
///     either way (an improvement beyond it fails too, so that the stored figure gets updated). 0 where every
///     iteration allocates exactly the same; for `.kilo` benchmarks it defaults to 100, a tenth of what one extra
///     allocation per operation adds (1000), and above the few allocations by which an iteration of 1000
///     operations can vary (a page cache or B-tree node that grows now and then).
///
/// Only the deterministic metrics are stored in `Thresholds/` (`thresholds update --metric mallocCountTotal`, see
/// Benchmarks/README.md): timings on a shared 2-core machine move by tens of percent between runs, so they are
/// printed, not checked. Instructions get a relative tolerance of 2% at p90 where package-benchmark counts them;
/// this project's machines cannot, so `micro-instructions` counts them under callgrind (`Instructions.json`).
public func micro(_ scalingFactor: BenchmarkScalingFactor = .one, mallocSlack: Int? = nil) -> Benchmark.Configuration {
    var thresholds: [BenchmarkMetric: BenchmarkThresholds] = [
        .mallocCountTotal: .init(absolute: [.p90: mallocSlack ?? (scalingFactor == .one ? 0 : 100)]),
    ]
    if hardwareCountersAvailable { thresholds[.instructions] = .init(relative: [.p90: 2.0]) }
    return .init(
        metrics: microMetrics,
        warmupIterations: 3,
        scalingFactor: scalingFactor,
        maxDuration: .seconds(2),
        maxIterations: 10_000,
        thresholds: thresholds
    )
}

/// Registers `workload` with package-benchmark: set up before the measurement (`make`), one `run` per iteration,
/// disposed of after.
public func register(_ workload: MicroWorkload) {
    let holder = RunnerHolder()
    let scaling: BenchmarkScalingFactor = workload.operationsPerIteration == 1000 ? .kilo : .one
    precondition(workload.operationsPerIteration == scaling.rawValue, "\(workload.name): 1 or 1000 operations")
    let configuration = micro(scaling, mallocSlack: workload.mallocSlack)
    let setup: Benchmark.BenchmarkSetupHook = { holder.runner = try await workload.make() }
    let teardown: Benchmark.BenchmarkTeardownHook = {
        holder.runner?.dispose()
        holder.runner = nil
    }
    // A synchronous body is measured as one (package-benchmark runs an async one in a task per iteration).
    if workload.synchronous {
        Benchmark(workload.name, configuration: configuration, closure: { benchmark in
            try (holder.runner as! any SynchronousMicroRunner).runNow(benchmark.scaledIterations.count)
        }, setup: setup, teardown: teardown)
        return
    }
    Benchmark(workload.name, configuration: configuration, closure: { benchmark in
        try await holder.runner!.run(benchmark.scaledIterations.count)
    }, setup: setup, teardown: teardown)
}

/// Holds a workload's runner between its setup and teardown hooks (teardown takes no state).
private final class RunnerHolder: @unchecked Sendable {
    var runner: (any MicroRunner)?
}
