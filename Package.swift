// swift-tools-version: 6.1
import PackageDescription

/// `LUCID_INTERNAL_CHECKS` turns on `checkInvariants()` validators (B-tree shape, page builders, ...)
/// in debug builds. They are expensive (a full tree walk after mutations in tests) and invalidate every
/// documented performance figure; release builds compile them out entirely.
let internalChecks: [SwiftSetting] = [.define("LUCID_INTERNAL_CHECKS", .when(configuration: .debug))]

let package = Package(
    name: "Lucid",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LucidEngine", targets: ["LucidEngine"]),
        .library(name: "LucidEngineTestSupport", targets: ["LucidEngineTestSupport"]),
        .library(name: "Lucid", targets: ["Lucid"]),
        .executable(name: "lucid-demo", targets: ["lucid-demo"]),
        .executable(name: "lucidctl", targets: ["lucidctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
    ],
    targets: [
        // Debian's liblz4 (block API only). Never appears in a public API.
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        // Small audited C helpers: hardware CRC32C with a portable fallback, prefetch hints, atomic bit arrays.
        .target(name: "CLucidSupport"),
        .target(
            name: "LucidEngine",
            dependencies: ["CLZ4", "CLucidSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: internalChecks
        ),
        // Fault-injecting in-memory file system and corruption helpers, shared by tests and Fuzz/.
        .target(
            name: "LucidEngineTestSupport",
            dependencies: ["LucidEngine"],
            swiftSettings: internalChecks
        ),
        // The data layer users import: entities, queries, stores, CoreManager.
        .target(name: "Lucid", dependencies: ["LucidEngine", "CLucidSupport", .product(name: "Logging", package: "swift-log")]),
        .executableTarget(name: "lucid-demo", dependencies: ["Lucid", "LucidEngine"]),
        // Child process for the kill -9 crash tests.
        .executableTarget(name: "lucid-crash-child", dependencies: ["LucidEngine", "LucidEngineTestSupport"]),
        // The command-line tool (stats, verify, compact, dump, import, recover).
        .executableTarget(
            name: "lucidctl",
            dependencies: [
                "LucidEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LucidEngineTests",
            dependencies: ["LucidEngine", "LucidEngineTestSupport", "lucid-crash-child", "lucidctl"],
            swiftSettings: internalChecks
        ),
        // Child process for the request queue's kill -9 test.
        .executableTarget(name: "lucid-queue-child", dependencies: ["Lucid", "LucidEngine"]),
        .testTarget(name: "LucidTests", dependencies: ["Lucid", "LucidEngine", "LucidEngineTestSupport", "lucid-queue-child"]),
        // Runs the built lucidctl binary (depending on it makes `swift build` build it first).
        .testTarget(
            name: "LucidctlTests",
            dependencies: ["lucidctl", "LucidEngine", "LucidEngineTestSupport"]
        ),
    ]
)
