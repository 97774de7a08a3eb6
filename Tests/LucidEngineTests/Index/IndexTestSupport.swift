// Shared helpers of the secondary-index tests (Tests/LucidEngineTests/Index).
//
// Everything lives in the `IndexTest` namespace so that it cannot collide with other test files of the target,
// and so that these tests do not depend on helpers other suites may change. The reference order of index values
// (`IndexTest.compare`) is written from the documented order (IndexValue's doc comment and docs/FORMAT.md,
// "Index terms"), never from the encoding, so that the encoding is checked against it.

import Foundation
import Logging
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

enum IndexTest {
    // MARK: Deterministic randomness

    /// The shared seeded generator (LucidEngineTestSupport); every randomized test prints its seed.
    typealias SplitMix64 = LucidEngineTestSupport.SplitMix64

    // MARK: The documented order of index values

    /// The rank of a value's type: null < bool < int < double < date < string < identifier.
    static func typeRank(_ v: IndexValue) -> Int {
        switch v {
        case .null: 0
        case .bool: 1
        case .int: 2
        case .double: 3
        case .date: 4
        case .string: 5
        case .identifier: 6
        }
    }

    /// -1, 0 or 1 as `a` is before, equal to or after `b` in the documented order (types by rank; false < true;
    /// numbers numerically with -0.0 == 0.0 and every NaN equal and above +infinity; dates by time; strings by
    /// their UTF-8 bytes and identifiers by their bytes, a prefix before a longer value).
    static func compare(_ a: IndexValue, _ b: IndexValue) -> Int {
        let ra = typeRank(a), rb = typeRank(b)
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.int(let x), .int(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.double(let x), .double(let y)):
            switch (x.isNaN, y.isNaN) {
            case (true, true): return 0
            case (true, false): return 1
            case (false, true): return -1
            case (false, false): return x == y ? 0 : (x < y ? -1 : 1)
            }
        case (.date(let x), .date(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)):
            if x.utf8.elementsEqual(y.utf8) { return 0 }
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : 1
        case (.identifier(let x), .identifier(let y)): return compareBytes(x, y)
        default: fatalError("unreachable: same rank, different types")
        }
    }

    /// Unsigned bytewise comparison, a prefix before a longer array.
    static func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    /// True when `a` and `b` hold the same value structurally (strings compared by their UTF-8 bytes, not by
    /// Unicode canonical equivalence; doubles by the documented equality, -0.0 == 0.0 and NaN == NaN).
    static func sameValue(_ a: IndexValue, _ b: IndexValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return Array(x.utf8) == Array(y.utf8)
        default: return compare(a, b) == 0
        }
    }

    // MARK: Descriptions for failure messages

    static func hex(_ bytes: [UInt8], max: Int = 48) -> String {
        let digits = bytes.prefix(max).map { b -> String in
            let s = String(b, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: " ")
        return bytes.count > max ? digits + " …(\(bytes.count) bytes)" : digits
    }

    static func describe(_ v: IndexValue) -> String {
        switch v {
        case .null: "null"
        case .bool(let b): "bool(\(b))"
        case .int(let i): "int(\(i))"
        case .double(let d): "double(\(d), bits 0x\(String(d.bitPattern, radix: 16)))"
        case .date(let us): "date(\(us)µs)"
        case .string(let s): "string(\(s.debugDescription) utf8 [\(hex(Array(s.utf8)))])"
        case .identifier(let b): "identifier([\(hex(b))])"
        }
    }

    static func describe(_ keys: [[UInt8]], max: Int = 12) -> String {
        let shown = keys.prefix(max).map { "[" + hex($0, max: 12) + "]" }.joined(separator: ", ")
        return "\(keys.count) keys: " + shown + (keys.count > max ? ", …" : "")
    }

    // MARK: Engines and directories

    /// A logger that drops everything below critical (recovery notices would flood the output).
    static let quietLogger: Logger = {
        var logger = Logger(label: "lucid.index-tests")
        logger.logLevel = .critical
        return logger
    }()

    /// Small pages (4 KiB) so that multi-page groups and values larger than a page are common.
    static func options(sync: EngineOptions.SyncMode = .none, segmentSize: UInt64? = nil,
                        pageCacheBytes: Int? = nil) -> EngineOptions {
        var o = EngineOptions()
        o.pageSize = 4096
        o.syncMode = sync
        if let segmentSize { o.segmentSize = segmentSize }
        if let pageCacheBytes { o.pageCacheBytes = pageCacheBytes }
        o.logger = quietLogger
        return o
    }

    /// A fresh, empty directory, removed with everything in it when `body` returns or throws.
    static func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
        let base = FileManager.default.temporaryDirectory.path
        let dir = base + "/lucid-index-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        return try body(dir)
    }

    /// Copies every file of a store except its LOCK (a "crash image" of an idle, synced store).
    static func copyStore(from source: String, to destination: String) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for name in try fm.contentsOfDirectory(atPath: source) where name != "LOCK" {
            try fm.copyItem(atPath: source + "/" + name, toPath: destination + "/" + name)
        }
    }

    /// Syncs and closes `engine`, leaves in `copy` what a crash of the idle store would leave (``copyStore``),
    /// removes the original directory `dir`, and returns `copy`, which the caller opens next.
    static func replaceWithCrashImage(_ engine: Engine, dir: String, copy: String) throws -> String {
        try engine.sync()
        try copyStore(from: dir, to: copy)
        try engine.close()
        try FileManager.default.removeItem(atPath: dir)
        return copy
    }

    /// The segment files of a store.
    static func segmentCount(_ dir: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".seg") }.count
    }

    /// Ends a randomized run after its first reported difference (one report per run is enough).
    struct Stop: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func lucidErrorCode(_ error: any Error) -> LucidError.Code? { (error as? LucidError)?.code }
}


/// Test-specific generators on top of the shared SplitMix64.
extension SplitMix64 {

    /// `count` bytes biased towards the bytes that matter to the escaping (0x00, 0x01, 0xFF).
    mutating func trickyBytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in
            chance(0.6) ? pick([0x00, 0x01, 0xFF, 0xFE, 0x02, 0x7F, 0x80]) : UInt8(truncatingIfNeeded: next())
        }
    }


    /// A random string mixing ASCII, NUL, multi-byte scalars and emoji.
    mutating func string(maxScalars: Int) -> String {
        let alphabet: [Unicode.Scalar] = ["\0", "\u{1}", "a", "b", "z", "\u{7F}", "é", "ÿ", "ß", "日", "本",
                                          "😀", "\u{FFFF}", "\u{10FFFF}", "\u{301}"]
        var s = String.UnicodeScalarView()
        for _ in 0..<int(0...maxScalars) { s.append(pick(alphabet)) }
        return String(s)
    }


    /// A random index value of any type, biased towards edge cases.
    mutating func indexValue() -> IndexValue {
        switch int(0..<7) {
        case 0: return .null
        case 1: return .bool(chance(0.5))
        case 2:
            return .int(chance(0.3) ? pick([.min, .min + 1, -1, 0, 1, .max - 1, .max])
                                    : Int64(bitPattern: next()) >> UInt64(int(0...63)))
        case 3:
            if chance(0.3) {
                return .double(pick([-.infinity, -1.5, -0.0, 0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
                                     .leastNormalMagnitude, 1e300, .infinity, .nan, -.nan,
                                     .greatestFiniteMagnitude, -.greatestFiniteMagnitude]))
            }
            return .double(Double(bitPattern: next()))   // any pattern: NaNs with payloads, subnormals, ...
        case 4:
            return .date(microsecondsSince1970: chance(0.3) ? pick([.min, -1, 0, 1, .max])
                                                             : Int64(bitPattern: next()) >> UInt64(int(0...63)))
        case 5: return .string(string(maxScalars: 6))
        default: return .identifier(trickyBytes(int(0...8)))
        }
    }
}
