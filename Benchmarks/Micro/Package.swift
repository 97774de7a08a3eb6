// swift-tools-version: 6.1
import PackageDescription

// Regression micro-benchmarks of hot paths of LucidEngine (LucidEngineMicro) and of Lucid's data layer
// (LucidDataMicro), with ordo-one's benchmark package (formerly package-benchmark; the same 1.38.1 is mirrored
// under both names, and the plugin asks for the new one).
//
//   swift package --package-path Benchmarks/Micro benchmark                      # run and print
//   swift package --package-path Benchmarks/Micro benchmark baseline update main # store a baseline
//   swift package --package-path Benchmarks/Micro benchmark baseline check main  # compare to it
//
// Malloc counts are checked against the committed Thresholds/ (run from the repository root; see
// Benchmarks/README.md for updating them):
//
//   swift package --package-path Benchmarks/Micro benchmark thresholds check \
//       --metric mallocCountTotal --path Benchmarks/Micro/Thresholds
//
// Instructions are counted under callgrind (valgrind), against the committed Instructions.json:
//
//   swift run -c release --package-path Benchmarks/Micro micro-instructions check
//
// Only the "MallocInterposer" trait is enabled: package-benchmark's default "RuntimeInterposer" trait pulls in a
// package (swift-runtime-interposer) that is not available on this project's machines.
let package = Package(
    name: "LucidMicroBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Lucid", path: "../../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The workloads: fixtures and measured bodies, shared by the benchmark targets and micro-instructions.
        .target(
            name: "MicroWorkloads",
            dependencies: [
                .product(name: "Lucid", package: "Lucid"),
                .product(name: "LucidEngine", package: "Lucid"),
            ],
            path: "Sources/MicroWorkloads"
        ),
        // The metrics and threshold tolerances the benchmark targets share, and their registration of a workload.
        .target(
            name: "MicroSupport",
            dependencies: ["MicroWorkloads", .product(name: "Benchmark", package: "benchmark")],
            path: "Sources/MicroSupport"
        ),
        // Callgrind's client requests (valgrind/callgrind.h), no-ops where the header is missing. DWARF 4: valgrind
        // 3.19 cannot read clang's default DWARF 5 for C (it gives up on the whole executable).
        .target(name: "CCallgrind", path: "Sources/CCallgrind", cSettings: [.unsafeFlags(["-gdwarf-4"])]),
        // Instruction counts of the workloads under callgrind, checked against Instructions.json.
        .executableTarget(
            name: "micro-instructions",
            dependencies: ["MicroWorkloads", "CCallgrind"],
            path: "Sources/micro-instructions"
        ),
        // Wall-clock lookups in a tree larger than the processor's caches (see its header).
        .executableTarget(
            name: "btree-lookup-timing",
            dependencies: ["MicroWorkloads", .product(name: "LucidEngine", package: "Lucid")],
            path: "Sources/btree-lookup-timing"
        ),
        .executableTarget(
            name: "LucidEngineMicro",
            dependencies: [
                "MicroSupport",
                "MicroWorkloads",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LucidEngineMicro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "LucidDataMicro",
            dependencies: [
                "MicroSupport",
                "MicroWorkloads",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LucidDataMicro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
