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
        // The metrics and threshold tolerances the benchmark targets share.
        .target(
            name: "MicroSupport",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            path: "Sources/MicroSupport"
        ),
        .executableTarget(
            name: "LucidEngineMicro",
            dependencies: [
                "MicroSupport",
                .product(name: "LucidEngine", package: "Lucid"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LucidEngineMicro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "LucidDataMicro",
            dependencies: [
                "MicroSupport",
                .product(name: "Lucid", package: "Lucid"),
                .product(name: "LucidEngine", package: "Lucid"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LucidDataMicro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
