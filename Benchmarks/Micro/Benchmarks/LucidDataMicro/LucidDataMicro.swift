import Benchmark
import MicroSupport
import MicroWorkloads

// Hot paths of Lucid's data layer: the workloads of `MicroWorkload.data` (Sources/MicroWorkloads/DataWorkloads.swift),
// timed and their mallocs counted. `micro-instructions` counts the same workloads' instructions under callgrind.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = micro()
    for workload in MicroWorkload.data { register(workload) }
}
