// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets for LucidEngine: one executable per input surface. Build and run with `./run.sh`
// (swift build --sanitize fuzzer --sanitize address ...). See README.md.
//
// FuzzCommon compiles the checks shared with the root package's replay test: each of its files but `Entry.swift` is a
// symlink to the file of that name in `../Tests/LucidEngineTests/Fuzz/` (where `FailCasesReplayTests` replays them).

let package = Package(
    name: "LucidFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Lucid", path: "../"),
    ],
    targets: [
        .target(
            name: "FuzzCommon",
            dependencies: [
                .product(name: "LucidEngine", package: "Lucid"),
                .product(name: "LucidEngineTestSupport", package: "Lucid"),
            ],
            // -O: the harness (models, fixture, byte comparisons) is ours, not under test; unoptimised it took most
            // of FuzzRecovery's time. The engine itself stays a debug build with LUCID_INTERNAL_CHECKS.
            swiftSettings: [.define("LUCID_FUZZ_HARNESS"), .unsafeFlags(["-O"])]
        ),
        // The Lucid data layer's checks: `EntityCodecChecks.swift` is a symlink to
        // `../Tests/LucidTests/Fuzz/EntityCodecFuzzChecks.swift` (replayed there by `LucidFailCasesReplayTests`).
        .target(
            name: "FuzzLucidCommon",
            dependencies: [
                .product(name: "Lucid", package: "Lucid"),
                .product(name: "LucidEngine", package: "Lucid"),
                .product(name: "LucidEngineTestSupport", package: "Lucid"),
            ],
            swiftSettings: [.define("LUCID_FUZZ_HARNESS"), .unsafeFlags(["-O"])]
        ),
        .executableTarget(name: "FuzzPage", dependencies: ["FuzzCommon"]),
        .executableTarget(name: "FuzzManifest", dependencies: ["FuzzCommon"]),
        .executableTarget(name: "FuzzRecovery", dependencies: ["FuzzCommon"]),
        .executableTarget(name: "FuzzOperations", dependencies: ["FuzzCommon"]),
        .executableTarget(name: "FuzzCheckpoint", dependencies: ["FuzzCommon"]),
        .executableTarget(name: "FuzzEntityCodec", dependencies: ["FuzzCommon", "FuzzLucidCommon"]),
        .executableTarget(name: "FuzzQuery", dependencies: ["FuzzCommon", "FuzzLucidCommon"]),
        // Writes seed corpora from real stores (built without sanitizers; see make-seeds.sh).
        .executableTarget(
            name: "MakeSeeds",
            dependencies: [
                "FuzzCommon",
                "FuzzLucidCommon",
                .product(name: "LucidEngine", package: "Lucid"),
                .product(name: "LucidEngineTestSupport", package: "Lucid"),
            ]
        ),
    ]
)
