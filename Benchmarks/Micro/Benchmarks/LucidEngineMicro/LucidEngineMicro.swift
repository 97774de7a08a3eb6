import Benchmark
import MicroSupport
import MicroWorkloads

// Hot paths of LucidEngine: the workloads of `MicroWorkload.engine` (Sources/MicroWorkloads/EngineWorkloads.swift),
// timed and their mallocs counted. `micro-instructions` counts the same workloads' instructions under callgrind.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = micro()
    for workload in MicroWorkload.engine { register(workload) }
}
