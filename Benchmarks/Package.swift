// swift-tools-version: 6.1
import PackageDescription

// Lucid's comparison with LMDB, RocksDB, SQLite and GRDB (the engine, and the data layer against GRDB), as a package of its own so that the main package (and
// its CI test run) never builds GRDB or links LMDB/RocksDB. The package-benchmark micro-benchmarks live in
// Micro/ (a package of their own too, so this one never builds package-benchmark's tooling).
//
//   swift run -c release --package-path Benchmarks lucid-compare [--records N] [--quick] [--json]
//
// System libraries (Debian): apt-get install -y liblmdb-dev librocksdb-dev libsqlite3-dev pkg-config
let package = Package(
    name: "LucidBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Lucid", path: "../"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        .systemLibrary(name: "CLMDB", path: "Sources/CLMDB", pkgConfig: "lmdb",
                       providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CRocksDB", path: "Sources/CRocksDB", pkgConfig: "rocksdb",
                       providers: [.apt(["librocksdb-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        // The report's arithmetic and formats (medians, paired ratios, tables, JSON), apart so that its tests build
        // without the stores.
        .target(name: "CompareReport"),
        .executableTarget(
            name: "lucid-compare",
            dependencies: [
                "CompareReport",
                .product(name: "LucidEngine", package: "Lucid"),
                .product(name: "Lucid", package: "Lucid"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "CLMDB", "CRocksDB", "CSQLite",
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(name: "CompareReportTests", dependencies: ["CompareReport"]),
    ]
)
