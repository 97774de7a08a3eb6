#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LucidEngine
import LucidEngineTestSupport
import Logging
import Testing

/// Runs the built `lucidctl` binary and builds, damages and fingerprints stores for the command tests.
enum CLI {
    /// What one run printed and how it ended.
    struct Run: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String

        var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }

        /// The standard output parsed as one JSON object.
        func json() throws -> [String: Any] {
            let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
            return try #require(object as? [String: Any], "stdout is not a JSON object: \(stdout)")
        }

        var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
    }

    // MARK: Finding the binary

    static func productsDirectories() -> [String] { BuiltProducts.directories() }

    /// The `lucidctl` binary next to the test binary (the test target depends on it, so `swift build` and
    /// `swift test` build it first); `LUCIDCTL` in the environment overrides.
    static let executable: URL? = BuiltProducts.executable(named: "lucidctl", override: "LUCIDCTL")

    // MARK: Running it

    /// Runs `lucidctl arguments` to completion (in `directory` when given) with `stdin` as its standard input
    /// (empty when nil); output is collected through files, so nothing can block on a full pipe.
    static func run(_ arguments: [String], stdin: [UInt8]? = nil, in directory: String? = nil) throws -> Run {
        let binary = try #require(executable, "lucidctl not found next to the test binary")
        let scratch = try CorruptionHelpers.makeTemporaryDirectory(prefix: "lucidctl-run")
        defer { try? CorruptionHelpers.removeDirectory(scratch) }
        let inPath = scratch + "/stdin", outPath = scratch + "/stdout", errPath = scratch + "/stderr"
        try CorruptionHelpers.writeFile(path: inPath, bytes: stdin ?? [])
        try CorruptionHelpers.writeFile(path: outPath, bytes: [])
        try CorruptionHelpers.writeFile(path: errPath, bytes: [])
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        try? input.close()
        try? output.close()
        try? errors.close()
        #expect(process.terminationReason == .exit, "lucidctl \(arguments) died of a signal")
        return Run(status: process.terminationStatus,
                   stdout: String(decoding: try CorruptionHelpers.readFile(path: outPath), as: UTF8.self),
                   stderr: String(decoding: try CorruptionHelpers.readFile(path: errPath), as: UTF8.self))
    }

    // MARK: Stores

    /// A fresh directory removed (with everything in it) after `body`.
    static func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
        let dir = try CorruptionHelpers.makeTemporaryDirectory(prefix: "lucidctl-tests")
        defer { try? CorruptionHelpers.removeDirectory(dir) }
        return try body(dir)
    }

    static let quietLogger: Logger = {
        var logger = Logger(label: "lucidctl.tests")
        logger.logLevel = .critical
        return logger
    }()

    /// Engine options for building stores in tests: 1 MiB segments, no automatic compaction, no logging.
    static func options() -> EngineOptions {
        var options = EngineOptions()
        options.segmentSize = 1 << 20
        options.autoCompaction = nil
        options.logger = quietLogger
        return options
    }

    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// The key of book `i`: `b-000042`.
    static func bookKey(_ i: Int) -> String {
        let digits = String(i)
        return "b-" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// A book's JSON value (about 200 bytes, with 64 pseudo-random hex digits that LZ4 cannot squeeze much).
    static func bookValue(_ i: Int, version: Int = 0) -> String {
        var state = UInt64(i) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(version) &* 0xBF58_476D_1CE4_E5B9
        var digest = ""
        for _ in 0..<4 {
            state = (state ^ (state >> 31)) &* 0x94D0_49BB_1331_11EB &+ 0x2545_F491_4F6C_DD1D
            let hex = String(state, radix: 16)
            digest += String(repeating: "0", count: 16 - hex.count) + hex
        }
        return #"{"title":"Book \#(i)","version":\#(version),"author":"Author \#(i % 37)","digest":"\#(digest)","text":"lorem ipsum dolor sit amet"}"#
    }

    /// A store of `count` books in keyspace `books` (with genre and rating terms) and `count / 10` films, all in
    /// sealed segments, closed cleanly (so with a checkpoint).
    static func makeStore(_ dir: String, count: Int = 300) throws {
        let engine = try Engine.open(at: dir, options: options())
        var batch = WriteBatch()
        for i in 0..<count {
            batch.put(bytes(bookValue(i)), forKey: bytes(bookKey(i)), in: "books", indexTerms: [
                IndexTerm(index: "genre", value: .string(["fantasy", "history", "poetry"][i % 3])),
                IndexTerm(index: "rating", value: i % 2 == 0 ? .int(Int64(i % 5)) : .double(Double(i % 50) / 10)),
            ])
            if i % 10 == 0 { batch.put(bytes("film \(i)"), forKey: bytes("f-\(i)"), in: "films") }
            if batch.count >= 50 {
                try engine.commitAndWait(batch)
                batch = WriteBatch()
            }
        }
        if !batch.isEmpty { try engine.commitAndWait(batch) }
        try engine.sealActiveSegment()
        try engine.close()
    }

    /// Path of the first segment file (the oldest, sealed by ``makeStore(_:count:)``).
    static func firstSegment(_ dir: String) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".seg") }.sorted()
        return dir + "/" + (try #require(names.first))
    }

    /// Path of the newest segment file (the active one).
    static func lastSegment(_ dir: String) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".seg") }.sorted()
        return dir + "/" + (try #require(names.last))
    }

    /// Every file of a store with its bytes, but `LOCK` (which holds the last opener's pid).
    static func fingerprint(_ dir: String) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name != "LOCK" {
            files[name] = try CorruptionHelpers.readFile(path: dir + "/" + name)
        }
        return files
    }

    /// Every record of a store, with its index terms, read through the engine.
    static func contents(_ dir: String) throws -> [String: [[UInt8]: ([UInt8], [IndexTerm])]] {
        let engine = try Engine.open(at: dir, options: options())
        defer { try? engine.close() }
        let snapshot = engine.snapshot()
        var result: [String: [[UInt8]: ([UInt8], [IndexTerm])]] = [:]
        for keyspace in snapshot.keyspaces() {
            try snapshot.forEach(in: keyspace) { record in
                result[keyspace, default: [:]][record.key] =
                    (record.value, try snapshot.indexTerms(forKey: record.key, in: keyspace) ?? [])
                return true
            }
        }
        return result
    }
}
