// The checks of the libFuzzer targets in Fuzz/, and the test that replays their inputs without a sanitizer build.
//
// This file is compiled twice: here, in the root test target, where the `FailCasesReplayTests` suite at the bottom
// replays every file of `Fuzz/FailCases/<target>/` and `Fuzz/Corpus/<target>/` through the checks; and in the Fuzz
// package's `FuzzCommon` library (through the symlink `Fuzz/Sources/FuzzCommon/FuzzChecks.swift`), where
// `LUCID_FUZZ_HARNESS` is defined and each fuzz target calls one check per input and traps on its failure.
// So a fuzzer finding and its replay run exactly the same code. Only `@_spi(Fuzzing)` and public API are used.

import LucidEngine
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if !LUCID_FUZZ_HARNESS
import Foundation
import Testing
#endif

// MARK: - Input decoding

/// Reads typed values from the front of fuzzer bytes (in the spirit of LLVM's `FuzzedDataProvider`). Past the end
/// every read returns zeros/empty, so any input decodes to something and short inputs stay meaningful.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var position = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { position >= bytes.count }

    public mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    public mutating func u16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    public mutating func u32() -> UInt32 { UInt32(u16()) | UInt32(u16()) << 16 }

    /// An integer in `range`, from as few bytes as the range needs.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound)
        if span == 0 { return range.lowerBound }
        var value: UInt64 = 0
        var covered: UInt64 = 0
        while covered < span {
            value = value << 8 | UInt64(byte())
            covered = covered << 8 | 0xFF
        }
        return range.lowerBound + Int(value % (span + 1))
    }

    /// One of `choices`.
    public mutating func pick<T>(_ choices: [T]) -> T { choices[int(in: 0...(choices.count - 1))] }

    /// Up to `count` bytes (fewer at the end).
    public mutating func bytes(upTo count: Int) -> [UInt8] {
        let n = min(count, bytes.count - min(position, bytes.count))
        defer { position += n }
        return Array(bytes[position..<(position + n)])
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] { bytes(upTo: bytes.count) }
}

/// A broken invariant. The fuzz targets trap with its message; the replay test records it as an issue.
public struct FuzzCheckFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

@inline(__always)
func fuzzRequire(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw FuzzCheckFailure(message()) }
}

/// The fuzz targets, each with the check it runs on one input.
public enum FuzzTarget: String, CaseIterable, Sendable {
    case page = "FuzzPage"
    case manifest = "FuzzManifest"
    case recovery = "FuzzRecovery"
    case operations = "FuzzOperations"
    case checkpoint = "FuzzCheckpoint"

    public func check(_ input: [UInt8]) throws {
        switch self {
        case .page: try PageChecks.check(input)
        case .manifest: try ManifestChecks.check(input)
        case .recovery: try RecoveryChecks.check(input)
        case .operations: try OperationChecks.check(input)
        case .checkpoint: try CheckpointChecks.check(input)
        }
    }
}

// MARK: - Shared helpers

/// Keyspace -> key -> value: what a store holds.
public typealias StoreModel = [String: [[UInt8]: [UInt8]]]

enum FuzzHelpers {
    static let quietLogger: Logger = {
        var logger = Logger(label: "lucid.fuzz")
        logger.logLevel = .critical
        return logger
    }()

    static func options(_ fs: FaultFileSystem, sync: EngineOptions.SyncMode = .always, pageCacheBytes: Int = 1 << 20,
                        recoveryMode: EngineOptions.RecoveryMode = .pointInTime,
                        compression: EngineOptions.PageCompression = EngineOptions().pageCompression) -> EngineOptions {
        var o = EngineOptions()
        o.pageCompression = compression
        o.fileSystem = fs
        o.pageSize = 4096
        o.segmentSize = 1 << 20
        o.syncMode = sync
        o.pageCacheBytes = pageCacheBytes
        o.recoveryMode = recoveryMode
        o.logger = quietLogger
        return o
    }

    static func le32(_ b: [UInt8], _ at: Int) -> UInt32 {
        guard at + 4 <= b.count else { return 0 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) }
    }

    static func le64(_ b: [UInt8], _ at: Int) -> UInt64 {
        UInt64(le32(b, at)) | UInt64(le32(b, at + 4)) << 32
    }

    /// Deterministic bytes: `count` bytes of SplitMix64 output seeded by `seed` (incompressible).
    static func noise(seed: UInt64, count: Int) -> [UInt8] {
        var state = seed
        var out: [UInt8] = []
        out.reserveCapacity(count + 8)
        while out.count < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            withUnsafeBytes(of: z.littleEndian) { out.append(contentsOf: $0) }
        }
        out.removeLast(out.count - count)
        return out
    }

    static func fnv(_ parts: [UInt8]...) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for b in part { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            h = (h ^ 0xFF) &* 0x100_0000_01b3
        }
        return h
    }

    /// A value that names its keyspace, key and version: `"V" ks 0 hex(key) 0 version 0` then `size` filler
    /// bytes (repetitive when `compressible`, noise otherwise) derived from the same three.
    static func value(_ keyspace: String, _ key: [UInt8], version: Int, size: Int, compressible: Bool) -> [UInt8] {
        let hexKey = key.map { String($0, radix: 16) }.joined(separator: ".")
        var v: [UInt8] = Array("V\(keyspace)\u{0}\(hexKey)\u{0}\(version)\u{0}".utf8)
        let seed = fnv(Array(keyspace.utf8), key, Array(String(version).utf8))
        if compressible {
            let unit = noise(seed: seed, count: 7)
            for i in 0..<size { v.append(unit[i % 7]) }
        } else {
            v += noise(seed: seed, count: size)
        }
        return v
    }

    /// The keyspace, key and version a value names, when it is one ``value(_:_:version:size:compressible:)`` made.
    static func parseValue(_ v: [UInt8]) -> (keyspace: String, hexKey: String, version: Int)? {
        guard v.first == UInt8(ascii: "V") else { return nil }
        let parts = v.dropFirst().split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, let version = Int(String(decoding: parts[2], as: UTF8.self)) else { return nil }
        return (String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), version)
    }

    /// Everything the engine holds, read through `scan` (checking key order and `count`, and that `get` and
    /// `forEach` agree).
    static func readAll(_ engine: Engine, alsoKeyspaces: some Sequence<String> = []) throws -> StoreModel {
        var model = StoreModel()
        for keyspace in Set(engine.keyspaces()).union(alsoKeyspaces) {
            let pairs = try engine.scan(in: keyspace)
            try fuzzRequire(engine.count(in: keyspace) == pairs.count,
                        "count(in: \(keyspace)) = \(engine.count(in: keyspace)) but scan returned \(pairs.count)")
            var keys: [[UInt8]: [UInt8]] = [:]
            for (i, pair) in pairs.enumerated() {
                if i > 0 {
                    try fuzzRequire(pairs[i - 1].key.lexicographicallyPrecedes(pair.key),
                                "scan of \(keyspace) is not in strictly ascending key order at \(i)")
                }
                keys[pair.key] = pair.value
                let direct = try engine.get(pair.key, in: keyspace)
                try fuzzRequire(direct == pair.value, "get and scan disagree on key \(pair.key) in \(keyspace)")
            }
            // The streaming walk (a page held across a run of records, point reads between runs) agrees.
            var walked = 0
            var walkAgrees = true
            try engine.snapshot().forEach(in: keyspace) { record in
                walkAgrees = walked < pairs.count && record.key == pairs[walked].key && same(record.value, pairs[walked].value)
                walked += 1
                return walkAgrees
            }
            try fuzzRequire(walkAgrees && walked == pairs.count, "forEach and scan disagree in \(keyspace) at \(walked)")
            if !keys.isEmpty { model[keyspace] = keys }
        }
        return model
    }

    /// Byte-array equality through `memcmp` (the generic `==` is very slow in unoptimised builds, and the
    /// recovery fixture compares megabyte files and values for every input).
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in
            x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0
        } }
    }

    static func same(_ a: StoreModel, _ b: StoreModel) -> Bool {
        a.count == b.count && a.allSatisfy { ks, pairs in
            guard let other = b[ks], other.count == pairs.count else { return false }
            return pairs.allSatisfy { key, value in other[key].map { same($0, value) } ?? false }
        }
    }

    static func same(_ a: [String: [UInt8]], _ b: [String: [UInt8]]) -> Bool {
        a.count == b.count && a.allSatisfy { name, bytes in b[name].map { same($0, bytes) } ?? false }
    }

    /// `bytes[from...]` as a new array, copied with `memcpy`.
    static func suffix(_ bytes: [UInt8], from: Int) -> [UInt8] {
        guard from < bytes.count else { return [] }
        return bytes.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[from...])) }
    }

    static func describe(_ m: StoreModel) -> String {
        m.keys.sorted().map { "\($0): \(m[$0]!.count) keys" }.joined(separator: ", ")
    }

    static func readFile(_ fs: FaultFileSystem, _ path: String) throws -> [UInt8]? {
        guard fs.fileExists(at: path) else { return nil }
        let h = try fs.openFile(at: path, mode: .readOnly)
        defer { try? h.close() }
        return try h.read(at: 0, count: Int(try h.size()))
    }

    static func writeFile(_ fs: FaultFileSystem, _ path: String, _ bytes: [UInt8]) throws {
        let h = try fs.openFile(at: path, mode: .readWrite(create: true))
        defer { try? h.close() }
        try h.truncate(to: 0)
        try h.write(bytes, at: 0)
        try h.sync()
    }

    /// Every file of a directory with its bytes (the lock file excluded).
    static func files(_ fs: FaultFileSystem, _ dir: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try fs.contentsOfDirectory(at: dir) where name != "LOCK" {
            out[name] = try readFile(fs, dir + "/" + name)
        }
        return out
    }
}

// MARK: - FuzzPage

/// Input: one mode byte (bit 0: recompute the page CRC first, so mutations reach decompression and record
/// parsing), then the page bytes. The page's own salt field is used as the segment salt.
///
/// Checks: decoding never traps and allocates within the format caps (the run script sets `-malloc_limit_mb`);
/// a valid page decodes the same from exactly its bytes, not from one byte fewer, not under another salt; a
/// valid data page's records, re-encoded with the writer's `PageBuilder`, decode to the same records (and
/// re-encoding is a fixpoint); scanning the bytes as a segment body agrees with the single-page decode; the bytes
/// read as a payload of records compressed one by one decode safely and consistently (`checkRecordPayload`).
enum PageChecks {
    static func check(_ input: [UInt8]) throws {
        guard let mode = input.first else { return }
        var page = Array(input.dropFirst())
        if mode & 1 != 0 { page = FuzzingSupport.withValidPageChecksum(page) }
        let salt = FuzzHelpers.le32(page, 8)
        let result = FuzzingSupport.decodePage(page, salt: salt)
        if case .success(let p) = result {
            try fuzzRequire(p.totalLength >= FuzzingSupport.pageHeaderLength && p.totalLength <= page.count,
                        "page length \(p.totalLength) outside the \(page.count) input bytes")
            try fuzzRequire(p.rawLength <= FuzzingSupport.maxRawPageLength, "rawLength \(p.rawLength) over the cap")
            let exact = Array(page[0..<p.totalLength])
            try fuzzRequire(FuzzingSupport.decodePage(exact, salt: salt) == .success(p),
                        "the page decodes differently without the bytes that follow it")
            if case .success = FuzzingSupport.decodePage(Array(exact.dropLast()), salt: salt) {
                throw FuzzCheckFailure("a page missing its last byte still decodes")
            }
            if case .success = FuzzingSupport.decodePage(exact, salt: salt ^ 0x8000_0001) {
                throw FuzzCheckFailure("a page decodes under another segment's salt")
            }
            if p.type == 1 { try checkRoundTrip(p, salt: salt) }
        }
        try checkPartialRead(page, salt: salt, prefix: 1 + Int(mode >> 1) << 5)
        try checkRecordPayload(page, recordCount: 1 + Int(mode >> 4), at: Int(mode >> 1) << 4)
        let scan = FuzzingSupport.scanSegmentBody(page, salt: salt, maxSteps: 1_000)
        for (a, b) in zip(scan.pageOffsets, scan.pageOffsets.dropFirst()) {
            try fuzzRequire(a < b, "scan returned page offsets out of order: \(a), \(b)")
        }
        try fuzzRequire(scan.pageOffsets.allSatisfy { $0 + FuzzingSupport.pageHeaderLength <= page.count },
                    "scan returned a page past the end")
        switch result {
        case .success: try fuzzRequire(scan.pageOffsets.first == 0, "scan did not find the page decodePage accepted")
        case .failure: try fuzzRequire(page.isEmpty || scan.failures.first == 0, "scan accepted what decodePage rejected")
        }
    }

    /// The bytes read as the payload of a page of records compressed one by one (`FuzzingSupport
    /// .decodeRecordPayload`): whatever they hold, no read traps or reads outside them; a whole read gives exactly
    /// the raw length the table claims; a point read of bytes within it succeeds and agrees with the whole read;
    /// and the records encoded again decode to the same bytes.
    static func checkRecordPayload(_ payload: [UInt8], recordCount: Int, at start: Int) throws {
        let reads = FuzzingSupport.decodeRecordPayload(payload, recordCount: recordCount, range: start..<(start + 40))
        guard let whole = reads.whole else { return }
        try fuzzRequire(whole.count == reads.rawLength, "a whole read of \(whole.count) bytes, not \(reads.rawLength)")
        let lower = min(start, whole.count - 1)
        let range = lower..<max(lower + 1, min(start + 40, whole.count))
        try fuzzRequire(reads.part == Array(whole[range]), "a point read of \(range) differs from the whole read")
        try fuzzRequire(reads.reencoded == whole, "records encoded again decode differently")
    }

    /// A point read that decodes a page only as far as the bytes it wants end (`prefix`; it wants the last two
    /// thirds of them, as a value that does not start the page) returns exactly those bytes of what the whole read
    /// returns, and fails whenever the whole read fails for any reason other than the payload's compressed data
    /// (which the partial read may not reach: the checksum still covers all of it).
    static func checkPartialRead(_ page: [UInt8], salt: UInt32, prefix: Int) throws {
        let range = (prefix / 3)..<prefix
        let whole = FuzzingSupport.readPayload(page, salt: salt, range: nil)
        let partial = FuzzingSupport.readPayload(page, salt: salt, range: range)
        switch (whole, partial) {
        case (.success(let raw), .success(let bytes)):
            try fuzzRequire(prefix <= raw.count && bytes == Array(raw[range]),
                            "a partial read of bytes \(range) differs from the whole read's")
        case (.success(let raw), .failure(let why)):
            try fuzzRequire(prefix > raw.count, "a partial read of bytes \(range) of \(raw.count) failed: \(why.reason)")
        case (.failure(let why), .success):
            try fuzzRequire(why.reason.contains("decompress"),
                            "a partial read succeeded where the whole read failed: \(why.reason)")
        case (.failure, .failure):
            break
        }
    }

    static func checkRoundTrip(_ p: FuzzingSupport.Page, salt: UInt32) throws {
        let records = p.records
        // The writer only produces non-decreasing sequences and UTF-8 names; other pages cannot be rebuilt
        // through the public types (see the report on non-UTF-8 names).
        guard !records.isEmpty,
              zip(records, records.dropFirst()).allSatisfy({ $0.sequence <= $1.sequence }),
              records.allSatisfy({ r in
                  String(validating: r.keyspace, as: UTF8.self) != nil
                      && r.terms.allSatisfy { String(validating: $0.index, as: UTF8.self) != nil }
              })
        else { return }
        let encoded = FuzzingSupport.encodePages(records, salt: salt, firstLSN: p.lsn, syncedLSN: p.syncedLSN,
                                                 pageSize: p.rawLength)
        guard case .success(let q) = FuzzingSupport.decodePage(encoded, salt: salt) else {
            throw FuzzCheckFailure("re-encoded page does not decode: \(FuzzingSupport.decodePage(encoded, salt: salt))")
        }
        try fuzzRequire(q.totalLength == encoded.count, "re-encoding produced more than one page")
        try fuzzRequire(q.records == records, "re-encoded page decodes to different records")
        try fuzzRequire(q.lsn == p.lsn && q.syncedLSN == p.syncedLSN && q.isCommit, "re-encoded page header differs")
        let again = FuzzingSupport.encodePages(q.records, salt: salt, firstLSN: q.lsn, syncedLSN: q.syncedLSN,
                                               pageSize: p.rawLength)
        try fuzzRequire(again == encoded, "encode(decode(encode(x))) != encode(x)")
    }
}

// MARK: - FuzzManifest

/// Input: one mode byte (bit 0: recompute the CRC first; bit 1: the bytes are a segment header, else a manifest
/// slot), then the bytes.
///
/// Checks: decoding never traps or throws anything but the documented errors; a valid manifest's canonical
/// re-encoding is exactly the bytes it was read from when it has the current version (so no field is silently
/// dropped or normalised), and always decodes again to itself; a valid segment header re-encodes to the same 52
/// bytes of fields.
enum ManifestChecks {
    static func check(_ input: [UInt8]) throws {
        guard let mode = input.first else { return }
        var bytes = Array(input.dropFirst())
        if mode & 2 != 0 {
            if mode & 1 != 0 { bytes = FuzzingSupport.withValidSegmentHeaderChecksum(bytes) }
            guard let reencoded = FuzzingSupport.decodeSegmentHeader(bytes) else { return }
            try fuzzRequire(reencoded.count == FuzzingSupport.segmentHeaderLength,
                            "segment header re-encodes to \(reencoded.count) bytes")
            try fuzzRequire(reencoded[0..<52] == bytes[0..<52], "segment header fields change when re-encoded")
            try fuzzRequire(FuzzingSupport.decodeSegmentHeader(reencoded) == reencoded,
                            "re-encoded segment header does not decode")
        } else {
            if mode & 1 != 0 { bytes = FuzzingSupport.withValidManifestChecksum(bytes) }
            guard case .valid(let reencoded, let segments, let obsolete) = FuzzingSupport.decodeManifest(bytes)
            else { return }
            // A slot of the current version re-encodes to exactly its bytes; an older one (version 1) is
            // rewritten in the current layout, which must then be stable.
            if bytes[8..<12].elementsEqual(reencoded[8..<12]) {
                try fuzzRequire(bytes.starts(with: reencoded),
                                "a valid manifest does not re-encode to the bytes it came from")
            }
            try fuzzRequire(reencoded.count == 24 + 12 + 34 * segments + 4 + 8 * obsolete + 4,
                            "manifest of \(segments) segments has \(reencoded.count) bytes")
            try fuzzRequire(FuzzingSupport.decodeManifest(reencoded)
                                == .valid(reencoded: reencoded, segments: segments, obsolete: obsolete),
                        "re-encoded manifest does not decode to itself")
        }
    }
}

// MARK: - FuzzRecovery

/// A small store written by the engine (built once per process, on a `FaultFileSystem`): a sealed segment and an
/// active one, both manifest slots, commits 1...10 synced (`SyncMode.always`) and 11...14 written with
/// `SyncMode.none` and never synced (the image is taken with `crash(policy: .keepAll)`).
public final class RecoveryFixture: Sendable {
    public static let directory = "/store"
    public static let shared: RecoveryFixture = {
        do { return try RecoveryFixture() } catch { fatalError("building the recovery fixture failed: \(error)") }
    }()

    let image: FaultFileSystem
    /// Model after commit i (index 0: empty store).
    let states: [StoreModel]
    /// Paths: sealed segment, active segment, MANIFEST-0, MANIFEST-1, and CHECKPOINT when the engine wrote one
    /// (it covers commits 1...10: written when the synced session closed).
    let paths: [String]
    static let checkpointName = "CHECKPOINT"
    let original: [[UInt8]]
    /// End offset in the active segment of commit i, for every commit whose group is in it; the last commit of
    /// the sealed segment maps to the header length.
    let activeEnds: [Int: Int]
    let firstActiveCommit: Int
    let lastSyncedCommit: Int
    var lastSyncedEnd: Int { activeEnds[lastSyncedCommit]! }
    /// Index in `paths` of the manifest slot with the newest version.
    let newestSlot: Int
    let activeSalt: UInt32

    /// Every (keyspace, key, version) the store was ever given.
    let written: Set<String>

    init() throws {
        let fs = FaultFileSystem()
        let dir = Self.directory
        var model = StoreModel()
        var states = [model]
        var written = Set<String>()
        var version = 0
        var ends: [Int: Int] = [:]

        func commit(_ engine: Engine, _ ops: [(String, String, Int, Bool)]) throws {
            // (keyspace, key, value size or -1 for a delete, compressible)
            var batch = WriteBatch()
            for (ks, keyString, size, compressible) in ops {
                let key = Array(keyString.utf8)
                if size < 0 {
                    batch.delete(key, in: ks)
                    model[ks]?[key] = nil
                    if model[ks]?.isEmpty == true { model[ks] = nil }
                } else {
                    version += 1
                    let v = FuzzHelpers.value(ks, key, version: version, size: size, compressible: compressible)
                    batch.put(v, forKey: key, in: ks,
                              indexTerms: size % 3 == 0 ? [IndexTerm(index: "by-size", value: .int(Int64(size)))] : [])
                    model[ks, default: [:]][key] = v
                    written.insert("\(ks)/\(keyString)/\(version)")
                }
            }
            try engine.commitAndWait(batch)
            states.append(model)
        }
        /// Where the log ends in the active segment: the log's bytes less the sealed segments' (while the engine
        /// is open, the file may go on with filler after its last group, FORMAT.md "Filler").
        func activeSize(_ engine: Engine) throws -> Int {
            let segments = try fs.contentsOfDirectory(at: dir).filter { $0.hasSuffix(".seg") }.sorted()
            let sealed = try segments.dropLast().reduce(0) { $0 + (try FuzzHelpers.readFile(fs, dir + "/" + $1)!.count) }
            return Int(engine.statistics.totalBytes) - sealed
        }

        var engine: Engine? = try Engine.open(at: dir, options: FuzzHelpers.options(fs))
        try commit(engine!, [("a", "k1", 10, false), ("a", "k2", 20, true), ("b", "k1", 30, false)])
        try commit(engine!, [("a", "k3", 6000, false)])                      // a page of its own
        try commit(engine!, [("a", "k2", -1, false), ("a", "k1", 40, false)])
        try commit(engine!, (0..<20).map { ("c", "m\($0)", 300, true) })      // a multi-page group
        try commit(engine!, [("big", "k", 1 << 20, false)])                  // passes 1 MiB: rolls
        let firstActive = states.count
        ends[firstActive - 1] = FuzzingSupport.segmentHeaderLength
        try commit(engine!, [("a", "k4", 50, false), ("b", "k1", -1, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, (0..<16).map { ("d", "n\($0)", 400, false) })     // multi-page, incompressible
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("a", "k1", 5000, true)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("c", "m3", -1, false), ("c", "m4", 70, false), ("e", "", 0, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("a", "k5", 80, false)])
        ends[states.count - 1] = try activeSize(engine!)
        let lastSynced = states.count - 1
        try engine!.close()
        engine = nil

        // Commits written but never synced: their pages carry syncedLSN = the last synced page.
        engine = try Engine.open(at: dir, options: FuzzHelpers.options(fs, sync: .none))
        try commit(engine!, [("a", "k6", 90, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, (0..<12).map { ("f", "p\($0)", 500, $0 % 2 == 0) })
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("a", "k1", -1, false), ("a", "k7", 100, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("b", "k2", 110, true)])
        ends[states.count - 1] = try activeSize(engine!)
        let image = fs.crash(policy: .keepAll)
        self.image = image
        try engine!.close()

        let segments = try image.contentsOfDirectory(at: dir).filter { $0.hasSuffix(".seg") }.sorted()
        guard segments.count == 2 else { throw FuzzCheckFailure("fixture: expected 2 segments, found \(segments)") }
        var paths = [dir + "/" + segments[0], dir + "/" + segments[1], dir + "/MANIFEST-0", dir + "/MANIFEST-1"]
        if image.fileExists(at: dir + "/" + Self.checkpointName) { paths.append(dir + "/" + Self.checkpointName) }
        let original = try paths.map { try FuzzHelpers.readFile(image, $0)! }
        self.paths = paths
        self.original = original
        self.states = states
        self.written = written
        activeEnds = ends
        firstActiveCommit = firstActive
        lastSyncedCommit = lastSynced
        newestSlot = FuzzHelpers.le64(original[2], 16) > FuzzHelpers.le64(original[3], 16) ? 2 : 3
        guard let salt = FuzzingSupport.pageSalt(ofSegmentHeader: original[1]) else {
            throw FuzzCheckFailure("fixture: active segment header does not decode")
        }
        activeSalt = salt
        guard ends[states.count - 1] == original[1].count else {
            throw FuzzCheckFailure("fixture: active segment is \(original[1].count) bytes, commits end at \(ends[states.count - 1]!)")
        }
    }

    /// The last commit whose group ends at or before `offset` of the active segment.
    func lastCommit(endingBy offset: Int) -> Int {
        activeEnds.filter { $0.value <= offset }.keys.max() ?? (firstActiveCommit - 1)
    }
}

/// Input: a mode byte (bit 0: open in `strict` mode; bit 1: keep the checkpoint, else delete it so recovery reads
/// the whole log), then up to 6 mutations, each a kind byte, a file byte and kind-specific operands: truncate, flip
/// a bit, zero a range, overwrite with input bytes, append input bytes, copy a range (possibly from another file).
/// Offsets are taken from the file start, the last synced commit's end or the file end.
///
/// Checks, after `Engine.open` on the mutated image: it opens or throws a `LucidError` (never another error, never
/// a trap); it must throw when a sealed segment or the newest manifest changed while data still needs them (with a
/// checkpoint, open may skip the damaged bytes instead, and then `verify()` must report them), and must open with a
/// clean `verify()` when only the checkpoint or bytes after the last synced commit changed (acknowledged-prefix
/// rule: a damaged checkpoint is only ever ignored). When it opens and `verify()` is ok: every value read names the
/// key it is under and a version that was written; the state equals the model after exactly the last commit that
/// ends before the first changed byte; the active file was cut there; a second open changes no file and drops
/// nothing; a commit after recovery survives a reopen. `strict` mode never modifies a file and refuses any change
/// to the active segment.
enum RecoveryChecks {
    enum Kind: Int, CaseIterable { case truncate, flipBit, zero, overwrite, append, copy }

    static func check(_ input: [UInt8]) throws {
        let fixture = RecoveryFixture.shared
        var input = FuzzInput(input)
        let mode = input.byte()
        let strict = mode & 1 == 1
        let keepCheckpoint = mode & 2 == 2 && fixture.paths.count > 4
        var files = fixture.original
        var described: [String] = []
        for _ in 0..<6 where !input.isAtEnd {
            let kind = Kind(rawValue: input.int(in: 0...(Kind.allCases.count - 1)))!
            let f = [1, 1, 1, 0, 2, 3, 4][input.int(in: 0...(keepCheckpoint ? 6 : 5))]
            let offset = pickOffset(&input, size: files[f].count, fixture: fixture, file: f)
            switch kind {
            case .truncate:
                files[f] = Array(files[f].prefix(offset))
            case .flipBit:
                if offset < files[f].count { files[f][offset] ^= 1 << (input.byte() & 7) }
            case .zero:
                let n = min(input.int(in: 1...8192), files[f].count - offset)
                if n > 0 { files[f].replaceSubrange(offset..<(offset + n), with: repeatElement(0, count: n)) }
            case .overwrite:
                let data = input.bytes(upTo: input.int(in: 1...64))
                let n = min(data.count, files[f].count - offset)
                if n > 0 { files[f].replaceSubrange(offset..<(offset + n), with: data[0..<n]) }
            case .append:
                let n = input.int(in: 1...4096)
                let seed = input.u32()
                files[f] += input.bool() ? [UInt8](repeating: 0, count: n) : FuzzHelpers.noise(seed: UInt64(seed), count: n)
            case .copy:
                let src = input.int(in: 0...(files.count - 1))
                let from = pickOffset(&input, size: files[src].count, fixture: fixture, file: src)
                let n = min(input.int(in: 1...8192), files[src].count - from)
                if n > 0 {
                    let chunk = Array(files[src][from..<(from + n)])
                    if offset + n > files[f].count { files[f] += [UInt8](repeating: 0, count: offset + n - files[f].count) }
                    files[f].replaceSubrange(offset..<(offset + n), with: chunk)
                }
            }
            described.append("\(kind)@\(f):\(offset)")
        }
        try run(files: files, strict: strict, keepCheckpoint: keepCheckpoint, fixture: fixture,
                described: described.joined(separator: " "))
    }

    static func pickOffset(_ input: inout FuzzInput, size: Int, fixture: RecoveryFixture, file: Int) -> Int {
        switch input.int(in: 0...2) {
        case 0: return input.int(in: 0...max(0, size))
        case 1:
            let anchor = file == 1 ? fixture.lastSyncedEnd : size / 2
            return max(0, min(size, anchor + input.int(in: -2048...4095)))
        default: return max(0, size - input.int(in: 0...4096))
        }
    }

    /// The first offset where `a` and `b` differ (the shorter length when one is a prefix of the other).
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        let n = min(a.count, b.count)
        let first = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in
            (0..<n).first { x[$0] != y[$0] }
        } }
        return first ?? (a.count == b.count ? nil : n)
    }

    /// True when the segment's header decodes and a valid page starts anywhere after it (FORMAT.md: an unlisted
    /// segment may be removed "only if it holds no valid page").
    static func holdsValidPage(_ segment: [UInt8]) -> Bool {
        guard let salt = FuzzingSupport.pageSalt(ofSegmentHeader: segment) else { return false }
        let body = FuzzHelpers.suffix(segment, from: FuzzingSupport.segmentHeaderLength)
        // Two steps: the first page, or the first failure plus the search for a later valid page.
        return !FuzzingSupport.scanSegmentBody(body, salt: salt, maxSteps: 2).pageOffsets.isEmpty
    }

    static func run(files: [[UInt8]], strict: Bool, keepCheckpoint: Bool, fixture: RecoveryFixture,
                    described: String) throws {
        let fs = fixture.image.copy()
        let changed = fixture.paths.indices.map { !FuzzHelpers.same(files[$0], fixture.original[$0]) }
        for (i, path) in fixture.paths.enumerated() where changed[i] {
            try FuzzHelpers.writeFile(fs, path, files[i])
        }
        if fixture.paths.count > 4 && !keepCheckpoint { try fs.removeFile(at: fixture.paths[4]) }
        let dir = RecoveryFixture.directory
        let before = try FuzzHelpers.files(fs, dir)
        let sealedChanged = changed[0]
        let activeDiff = changed[1] ? firstDifference(files[1], fixture.original[1]) : nil
        // A slot counts as valid when it still decodes to the manifest it held: nobody forges a CRC, but a copy of
        // the other slot's bytes is valid too, and then both slots hold the older manifest.
        let slotValid = [2, 3].map { i -> Bool in
            FuzzingSupport.decodeManifest(files[i]) == FuzzingSupport.decodeManifest(fixture.original[i])
        }
        // Manifest in force: the newest valid slot.
        let newestValid = slotValid[fixture.newestSlot - 2]
        let olderValid = slotValid[(fixture.newestSlot - 2) ^ 1]
        // Only bytes that were never acknowledged durable (or the checkpoint, an accelerator) changed.
        let onlyUnacknowledged = !sealedChanged && (activeDiff ?? Int.max) >= fixture.lastSyncedEnd
            && !changed[2] && !changed[3]
        let context = "[\(strict ? "strict " : "")\(keepCheckpoint ? "checkpoint " : "")\(described); sealedChanged=\(sealedChanged) activeDiff=\(activeDiff.map(String.init) ?? "none") slots=\(slotValid)]"

        // What must happen.
        var mustThrow = false
        var mustOpen = false
        var expected: Int? = nil        // exact commit index the state must equal when it opens
        var allowed = 0...(fixture.states.count - 1)
        if newestValid {
            if sealedChanged || (activeDiff ?? Int.max) < FuzzingSupport.segmentHeaderLength {
                mustThrow = true
            } else if let m = activeDiff {
                expected = fixture.lastCommit(endingBy: m)
                if strict { mustThrow = true } else if m >= fixture.lastSyncedEnd { mustOpen = true }
            } else {
                expected = fixture.states.count - 1
                mustOpen = true
            }
        } else if olderValid {
            // The older slot names only the first segment, as the active one; the second is unlisted.
            if holdsValidPage(files[1]) { mustThrow = true }
            allowed = 0...(fixture.firstActiveCommit - 1)
            if !sealedChanged && !strict { expected = fixture.firstActiveCommit - 1 }
        } else {
            // No valid manifest: only a store whose creation crashed (no segment holds a page) may be recreated.
            if holdsValidPage(files[0]) || holdsValidPage(files[1]) { mustThrow = true }
            allowed = 0...0
        }

        let engine: Engine
        do {
            engine = try Engine.open(at: dir, options: FuzzHelpers.options(fs, recoveryMode: strict ? .strict : .pointInTime))
        } catch let error as LucidError {
            try fuzzRequire(!mustOpen, "open must succeed but threw \(error) \(context)")
            if strict { try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.files(fs, dir), before), "strict open that failed modified files \(context)") }
            return
        } catch {
            throw FuzzCheckFailure("open threw a non-LucidError \(error) \(context)")
        }
        let verify = try engine.verify()
        if !verify.ok {
            // Allowed only when a checkpoint let open skip damaged durable bytes; verify must then report them.
            try fuzzRequire(keepCheckpoint && engine.recoveryReport.checkpointUsed && !onlyUnacknowledged,
                        "verify after recovery: \(verify.problems.prefix(3)) (report \(engine.recoveryReport)) \(context)")
            try engine.close()
            return
        }
        try fuzzRequire(!mustThrow, "open must fail but succeeded (report \(engine.recoveryReport)) \(context)")
        let state: StoreModel
        do { state = try FuzzHelpers.readAll(engine, alsoKeyspaces: ["a", "b", "c", "d", "e", "f", "big"]) } catch let error as LucidError {
            throw FuzzCheckFailure("a read failed although verify() was ok: \(error) \(context)")
        }
        for (ks, pairs) in state {
            for (key, value) in pairs {
                guard let named = FuzzHelpers.parseValue(value), named.keyspace == ks,
                      named.hexKey == key.map({ String($0, radix: 16) }).joined(separator: "."),
                      fixture.written.contains("\(ks)/\(String(decoding: key, as: UTF8.self))/\(named.version)")
                else { throw FuzzCheckFailure("read a value that was never written under \(ks)/\(key) \(context)") }
            }
        }
        guard let commit = allowed.last(where: { FuzzHelpers.same(fixture.states[$0], state) }) else {
            throw FuzzCheckFailure("recovered state is no committed prefix: \(FuzzHelpers.describe(state)) \(context)")
        }
        if let expected {
            try fuzzRequire(commit == expected, "recovered commit \(commit), expected \(expected) \(context)")
        }
        if strict { try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.files(fs, dir), before), "strict open modified files \(context)") }
        if newestValid, let expected, expected >= fixture.firstActiveCommit - 1 {
            let size = try FuzzHelpers.readFile(fs, fixture.paths[1])!.count
            try fuzzRequire(size == fixture.activeEnds[expected]!,
                        "active segment is \(size) bytes after recovery, commit \(expected) ends at \(fixture.activeEnds[expected]!) \(context)")
        }
        try engine.close()

        // A second open (same mode: a pointInTime open after a strict one may still clean up) changes nothing.
        let afterFirst = try FuzzHelpers.files(fs, dir)
        let second = try Engine.open(at: dir, options: FuzzHelpers.options(fs, recoveryMode: strict ? .strict : .pointInTime))
        let report = second.recoveryReport
        try fuzzRequire(report.droppedBytes == 0 && report.removedFiles.isEmpty && !report.created,
                    "second open was not a no-op: \(report) \(context)")
        try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.readAll(second), state), "second open recovered another state \(context)")
        try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.files(fs, dir), afterFirst), "second open modified files \(context)")

        // The recovered store takes new commits that survive a reopen.
        var batch = WriteBatch()
        let fresh = FuzzHelpers.value("post", [1], version: 1_000_000, size: 32, compressible: false)
        batch.put(fresh, forKey: [1], in: "post")
        try second.commitAndWait(batch)
        try second.close()
        let third = try Engine.open(at: dir, options: FuzzHelpers.options(fs))
        var expectedAfter = state
        expectedAfter["post"] = [[1]: fresh]
        try fuzzRequire(FuzzHelpers.same(try FuzzHelpers.readAll(third), expectedAfter), "a commit after recovery was lost on reopen \(context)")
        let verify3 = try third.verify()
        try fuzzRequire(verify3.ok, "verify after a post-recovery commit: \(verify3.problems.prefix(3)) \(context)")
        try third.close()
    }
}

// MARK: - FuzzOperations

/// Input: a header byte (sync mode `always` or `none`; no page cache, a tiny one or 1 MiB; pages compressed whole or
/// records compressed one by one against each segment's dictionary), then operations: puts, deletes,
/// batches, large puts of up to 128 KiB (a few roll the 1 MiB segments), reopen (close + open), crash
/// (`FaultFileSystem.crash` with one of the four policies, then open), sync, verify, seal (`sealActiveSegment`) and
/// compaction (every sealed segment, or a fuzzer-chosen adjacent run of them, so deletions are sometimes kept).
///
/// Checks after every step: the engine's contents (scan, count, get) equal the model. After a crash, open succeeds
/// and yields the model after some commit between the last durable one and the last acknowledged one (exactly the
/// last acknowledged one with `keepAll`); `verify()` is ok after every reopen and at the end.
/// After a compaction the contents are unchanged and `verify()` is ok; crashes after compactions use the same rule.
enum OperationChecks {
    static let keyspaces = ["a", "b", "ü-keyspace"]

    static func check(_ bytes: [UInt8]) throws {
        var input = FuzzInput(bytes)
        let header = input.byte()
        let sync: EngineOptions.SyncMode = header & 1 == 0 ? .always : .none
        // No cache (every read decodes only its value), 64 KiB (a page per shard: full at once, so reads take
        // every path: value only, cached on a second miss, hit) or 1 MiB (small stores fit).
        let cache = header & 2 != 0 ? 0 : header & 4 != 0 ? 64 << 10 : 1 << 20
        // Pages compressed whole, or records compressed one by one against each segment's dictionary.
        let compression: EngineOptions.PageCompression = header & 8 != 0 ? .lz4Records : .lz4
        var fs = FaultFileSystem()
        let dir = "/ops"
        func open() throws -> Engine {
            try Engine.open(at: dir, options: FuzzHelpers.options(fs, sync: sync, pageCacheBytes: cache, compression: compression))
        }
        var engine = try open()
        var model = StoreModel()
        // Models after each acknowledged commit since the last one known durable (index 0 = durable).
        var history: [StoreModel] = [model]
        var version = 0
        var log: [String] = []
        var segments = engine.statistics.segments

        func markDurable() { history = [model] }
        func compare(_ what: String) throws {
            let actual = try FuzzHelpers.readAll(engine, alsoKeyspaces: keyspaces)
            try fuzzRequire(FuzzHelpers.same(actual, model), "state differs from the model after \(what): engine \(FuzzHelpers.describe(actual)), model \(FuzzHelpers.describe(model)) [\(log.joined(separator: " "))]")
        }
        func key(_ input: inout FuzzInput) -> [UInt8] {
            (0..<input.int(in: 0...3)).map { _ in UInt8(ascii: "a") + input.byte() % 4 }
        }

        var steps = 0
        while !input.isAtEnd && steps < 48 {
            steps += 1
            let op = input.int(in: 0...13)
            switch op {
            case 0...6:
                // 0-2: put, 3: delete, 4-5: batch, 6: large put
                var batch = WriteBatch()
                var next = model
                let count = op == 4 || op == 5 ? input.int(in: 1...8) : 1
                for _ in 0..<count {
                    let ks = input.pick(keyspaces)
                    let k = key(&input)
                    if op == 3 || (count > 1 && input.int(in: 0...3) == 0) {
                        batch.delete(k, in: ks)
                        next[ks]?[k] = nil
                        if next[ks]?.isEmpty == true { next[ks] = nil }
                    } else {
                        version += 1
                        let size = op == 6 ? input.int(in: 1...8) << 14 : input.int(in: 0...1) == 0 ? input.int(in: 0...64) : input.int(in: 0...6000)
                        let v = FuzzHelpers.value(ks, k, version: version, size: size, compressible: input.bool())
                        let terms = (0..<input.int(in: 0...2)).map { i in IndexTerm(index: "i\(i)", value: .identifier(Array(v.prefix(i + 3)))) }
                        batch.put(v, forKey: k, in: ks, indexTerms: terms)
                        next[ks, default: [:]][k] = v
                    }
                }
                try engine.commitAndWait(batch)
                let before = model
                model = next
                history.append(model)
                log.append("commit(\(batch.count))")
                if sync == .always { markDurable() }
                let now = engine.statistics.segments
                if now != segments {
                    // A full segment rolls before the next group is written: the roll synced every commit before
                    // this one, which went into the new segment and is durable only with `always`.
                    history = sync == .always ? [model] : [before, model]
                    segments = now
                    log.append("rolled")
                }
                try compare("commit")
            case 7:
                try engine.close()
                engine = try open()
                markDurable()
                log.append("reopen")
                try compare("reopen")
                try requireVerify(engine, log)
            case 8:
                let policy = input.pick(FaultFileSystem.CrashPolicy.allCases)
                let seed = UInt64(input.u16())
                let crashed = fs.crash(policy: policy, seed: seed)
                try engine.close()
                fs = crashed
                log.append("crash(\(policy),\(seed))")
                do { engine = try open() } catch {
                    throw FuzzCheckFailure("open after a crash failed: \(error) [\(log.joined(separator: " "))]")
                }
                let actual = try FuzzHelpers.readAll(engine, alsoKeyspaces: keyspaces)
                if policy == .keepAll {
                    try fuzzRequire(FuzzHelpers.same(actual, model), "keepAll crash lost commits [\(log.joined(separator: " "))]")
                } else {
                    try fuzzRequire(history.contains { FuzzHelpers.same($0, actual) },
                                "after a crash the store is not the state after a commit between the last durable (\(FuzzHelpers.describe(history[0]))) and the last acknowledged; got \(FuzzHelpers.describe(actual)) [\(log.joined(separator: " "))]")
                }
                model = actual
                markDurable()
                segments = engine.statistics.segments
                try requireVerify(engine, log)
            case 9:
                try engine.sync()
                markDurable()
                log.append("sync")
            case 10:
                log.append("verify")
                try requireVerify(engine, log)
            case 12:
                // Sealing syncs the active segment first: everything acknowledged is durable.
                try engine.sealActiveSegment()
                markDurable()
                segments = engine.statistics.segments
                log.append("seal")
                try compare("seal")
            case 13:
                // Compact every sealed segment, or an adjacent run of them (deletions may then be kept).
                let sealed = try engine.storeStatistics().segments.filter(\.sealed).map(\.id)
                var run: [UInt64]?
                if !sealed.isEmpty && input.bool() {
                    let first = input.int(in: 0...(sealed.count - 1))
                    let last = input.int(in: first...(sealed.count - 1))
                    run = Array(sealed[first...last])
                }
                let summary = try engine.compactAndWait(CompactionOptions(segments: run))
                segments = engine.statistics.segments
                log.append("compact(\(run.map { "\($0.count) of \(sealed.count)" } ?? "all \(sealed.count)"), kept \(summary.tombstonesKept))")
                try compare("compaction")
                try requireVerify(engine, log)
            default:
                let ks = input.pick(keyspaces)
                let k = key(&input)
                try fuzzRequire(try engine.get(k, in: ks) == model[ks]?[k], "get(\(k), in: \(ks)) differs from the model [\(log.joined(separator: " "))]")
            }
        }
        try requireVerify(engine, log)
        try engine.close()
    }

    static func requireVerify(_ engine: Engine, _ log: [String]) throws {
        let report = try engine.verify()
        try fuzzRequire(report.ok, "verify: \(report.problems.prefix(3)) [\(log.joined(separator: " "))]")
    }
}

// MARK: - FuzzCheckpoint

/// Input: a mode byte, then either (bit 1 clear) bytes taken as a `CHECKPOINT` file, with bit 0 recomputing its
/// trailer (length and CRC) so mutations reach the decoder, or (bit 1 set) a program describing a checkpoint
/// (header, segments, keyspaces with primary entries, bulk key runs of at most 800 entries in all and index
/// entries, some fields possibly just
/// past a format cap), optionally followed by a byte flip applied to its encoding.
///
/// Checks: decoding never traps and allocates within `-malloc_limit_mb` whatever the bytes claim; a decoded
/// checkpoint's primary keys are strictly increasing per keyspace and so are each index's entries, the trees'
/// counts equal what they iterate, and every field is within the caps the loader enforces; a decoded checkpoint
/// re-encoded with `CheckpointWriter` decodes to the same entries (empty index trees are not written), and
/// re-encoding that is a fixpoint. A program's checkpoint encodes and decodes to exactly its entries (sorted, a
/// repeated key keeping its last location) when every field is within the caps, and is rejected otherwise.
enum CheckpointChecks {
    typealias CP = FuzzingSupport.Checkpoint
    typealias KS = FuzzingSupport.CheckpointKeyspace

    static func check(_ bytes: [UInt8]) throws {
        guard let mode = bytes.first else { return }
        if mode & 2 != 0 {
            try checkProgram(Array(bytes.dropFirst()))
        } else {
            var file = Array(bytes.dropFirst())
            if mode & 1 != 0 { file = FuzzingSupport.withValidCheckpointChecksum(file) }
            try checkBytes(file)
        }
    }

    /// Decodes arbitrary bytes; a valid checkpoint must be well formed and survive a re-encode.
    static func checkBytes(_ file: [UInt8]) throws {
        guard case .valid(let cp) = FuzzingSupport.decodeCheckpoint(file) else { return }
        try checkWellFormed(cp)
        try fuzzRequire(cp.entryCount + cp.indexEntryCount <= file.count,
                        "decoded \(cp.entryCount) + \(cp.indexEntryCount) entries from \(file.count) bytes")
        let fs = MemoryFileSystem()
        let again = try FuzzingSupport.encodeCheckpoint(cp, directory: "/ckp", fileSystem: fs)
        guard case .valid(let back) = FuzzingSupport.decodeCheckpoint(again) else {
            throw FuzzCheckFailure("a decoded checkpoint, re-encoded, is rejected: \(FuzzingSupport.decodeCheckpoint(again))")
        }
        try fuzzRequire(back == canonical(cp), "a decoded checkpoint, re-encoded, decodes differently \(diff(canonical(cp), back))")
        let third = try FuzzingSupport.encodeCheckpoint(back, directory: "/ckp", fileSystem: fs)
        try fuzzRequire(FuzzHelpers.same(third, again), "re-encoding a checkpoint is not a fixpoint")
    }

    /// The invariants every loaded checkpoint must satisfy.
    static func checkWellFormed(_ cp: CP) throws {
        let ids = Set(cp.segments.map { UInt32(truncatingIfNeeded: $0.id) })
        for (name, ks) in cp.keyspaces {
            // The loader checks a name's stored length, then repairs it with String(decoding:as:), so stored bytes
            // that are not UTF-8 grow (each bad byte becomes U+FFFD, 3 bytes) past the cap, and the engine's own
            // next checkpoint of that state is rejected.
            try fuzzRequire(!name.isEmpty && name.utf8.count <= FuzzingSupport.maxNameLength,
                            "loaded keyspace name is \(name.utf8.count) UTF-8 bytes, over the cap: stored name not UTF-8")
            try fuzzRequire(ks.primaryCount == ks.primary.count,
                            "keyspace \(name): tree count \(ks.primaryCount), iterated \(ks.primary.count)")
            for (i, e) in ks.primary.enumerated() {
                if i > 0 {
                    try fuzzRequire(ks.primary[i - 1].key.lexicographicallyPrecedes(e.key),
                                    "keyspace \(name): primary keys not strictly increasing at \(i)")
                }
                try fuzzRequire(e.key.count <= FuzzingSupport.maxKeyLength, "key of \(e.key.count) bytes")
                try fuzzRequire(ids.contains(e.segment), "entry in segment \(e.segment), not listed")
                try fuzzRequire(Int(e.valueOffset) <= FuzzingSupport.maxRawPageLength, "valueOffset \(e.valueOffset)")
                try fuzzRequire(Int(e.valueLength) <= FuzzingSupport.maxValueLength, "valueLength \(e.valueLength)")
                try fuzzRequire(e.sequence <= cp.lastSequence, "sequence \(e.sequence) after lastSequence \(cp.lastSequence)")
            }
            for (index, entries) in ks.indexes {
                try fuzzRequire(!index.isEmpty && index.utf8.count <= FuzzingSupport.maxNameLength,
                                "loaded index name is \(index.utf8.count) UTF-8 bytes, over the cap: stored name not UTF-8")
                try fuzzRequire(ks.indexCounts[index] == entries.count,
                                "index \(name)/\(index): tree count \(ks.indexCounts[index] ?? -1), iterated \(entries.count)")
                for (i, e) in entries.enumerated() {
                    if i > 0 {
                        try fuzzRequire(entries[i - 1].entry.lexicographicallyPrecedes(e.entry),
                                        "index \(name)/\(index): entries not strictly increasing at \(i)")
                    }
                    try fuzzRequire(e.termLength <= e.entry.count && e.termLength <= FuzzingSupport.maxIndexTermLength
                                        && e.entry.count <= FuzzingSupport.maxIndexTermLength + FuzzingSupport.maxKeyLength,
                                    "index entry of \(e.entry.count) bytes with a term of \(e.termLength)")
                }
            }
        }
    }

    /// What decoding the encoding of `cp` must give: entries sorted, a repeated key keeping its last value, index
    /// trees without entries dropped, tree counts equal to the entries.
    static func canonical(_ cp: CP) -> CP {
        var out = cp
        out.keyspaces = cp.keyspaces.mapValues { ks in
            var last: [[UInt8]: FuzzingSupport.CheckpointEntry] = [:]
            for e in ks.primary { last[e.key] = e }
            let primary = last.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            var indexes: [String: [FuzzingSupport.CheckpointIndexEntry]] = [:]
            for (name, entries) in ks.indexes where !entries.isEmpty {
                var l: [[UInt8]: FuzzingSupport.CheckpointIndexEntry] = [:]
                for e in entries { l[e.entry] = e }
                indexes[name] = l.values.sorted { $0.entry.lexicographicallyPrecedes($1.entry) }
            }
            return KS(primary: primary, indexes: indexes)
        }
        return out
    }

    static func diff(_ a: CP, _ b: CP) -> String {
        if a.segments != b.segments || a.lastSequence != b.lastSequence || a.nextLSN != b.nextLSN
            || a.coveredSegment != b.coveredSegment || a.coveredOffset != b.coveredOffset { return "(header differs)" }
        if Set(a.keyspaces.keys) != Set(b.keyspaces.keys) {
            return "(keyspaces \(a.keyspaces.keys.sorted()) vs \(b.keyspaces.keys.sorted()))"
        }
        for name in a.keyspaces.keys.sorted() where a.keyspaces[name] != b.keyspaces[name] {
            let x = a.keyspaces[name]!, y = b.keyspaces[name]!
            return "(keyspace \(name): \(x.primary.count)/\(x.primaryCount) vs \(y.primary.count)/\(y.primaryCount) entries, "
                + "indexes \(x.indexCounts.sorted { $0.key < $1.key }) vs \(y.indexCounts.sorted { $0.key < $1.key }))"
        }
        return "(?)"
    }

    static let names = ["a", "b", "ü", "e\u{301}", "\u{E9}", "keyspace-with-a-longer-name",
                        String(repeating: "n", count: 255)]
    static let invalidNames = ["", String(repeating: "x", count: 256)]

    /// Builds a checkpoint from the program, encodes it, decodes it, compares; then flips one byte of the
    /// encoding (CRC fixed) when the input asks for it and checks the result as arbitrary bytes.
    static func checkProgram(_ bytes: [UInt8]) throws {
        var input = FuzzInput(bytes)
        var valid = true
        var why: [String] = []
        func invalid(_ reason: String) { valid = false; why.append(reason) }

        let lastSequence = UInt64(input.u16())
        var segments: [FuzzingSupport.CheckpointSegment] = []
        for i in 0..<input.int(in: 0...3) {
            let high: UInt64 = input.int(in: 0...7) == 0 ? 1 << 32 : 0   // truncated to the low 32 bits by the loader
            segments.append(.init(id: high | UInt64(i + 1 + input.int(in: 0...3)), salt: UInt64(input.u32()),
                                  firstLSN: UInt64(input.u16())))
        }
        let ids = segments.map { UInt32(truncatingIfNeeded: $0.id) }
        var cp = CP(coveredSegment: segments.last?.id ?? 0, coveredOffset: UInt64(input.u16()),
                    nextLSN: UInt64(input.u16()), lastSequence: lastSequence, segments: segments, keyspaces: [:])

        func key(_ input: inout FuzzInput) -> [UInt8] {
            switch input.int(in: 0...15) {
            case 0: return Array(repeating: input.byte(), count: FuzzingSupport.maxKeyLength)
            case 1: return Array(repeating: input.byte(), count: FuzzingSupport.maxKeyLength + 1)
            case 2: return input.bytes(upTo: input.int(in: 0...24))
            default: return (0..<input.int(in: 0...4)).map { _ in UInt8(ascii: "a") + input.byte() % 5 }
            }
        }
        func location(_ input: inout FuzzInput, key: [UInt8]) -> FuzzingSupport.CheckpointEntry {
            var segment = ids.isEmpty ? 1 : input.pick(ids)
            var valueOffset = UInt32(input.u16())
            var valueLength = UInt32(input.u16())
            var sequence = lastSequence == 0 ? 0 : UInt64(input.int(in: 0...Int(lastSequence)))
            switch input.int(in: 0...15) {
            case 0: valueOffset = UInt32(FuzzingSupport.maxRawPageLength)
            case 1: valueOffset = UInt32(FuzzingSupport.maxRawPageLength + 1)
            case 2: valueLength = UInt32(FuzzingSupport.maxValueLength)
            case 3: valueLength = UInt32(FuzzingSupport.maxValueLength + 1)
            case 4: sequence = lastSequence + 1
            case 5: segment = (ids.max() ?? 0) &+ 1
            default: break
            }
            return .init(key: key, segment: segment, pageOffset: input.u32(), valueOffset: valueOffset,
                         valueLength: valueLength, hasTerms: input.bool(), sequence: sequence)
        }
        func checkLocation(_ e: FuzzingSupport.CheckpointEntry) {
            if !ids.contains(e.segment) { invalid("segment \(e.segment) not listed") }
            if Int(e.valueOffset) > FuzzingSupport.maxRawPageLength { invalid("valueOffset") }
            if Int(e.valueLength) > FuzzingSupport.maxValueLength { invalid("valueLength") }
            if e.sequence > lastSequence { invalid("sequence") }
            if e.key.count > FuzzingSupport.maxKeyLength { invalid("key length") }
        }

        var flip: (position: Int, mask: UInt8)? = nil
        var budget = 800   // generated entries over the whole program (bulk runs), to keep an input fast
        var steps = 0
        while !input.isAtEnd && steps < 64 {
            steps += 1
            let op = input.int(in: 0...7)
            if op == 7 {   // stop: the rest is a byte flip of the encoding
                let position = Int(input.u16())
                let mask = input.byte()
                if mask != 0 { flip = (position, mask) }
                break
            }
            let nameChoice = input.int(in: 0...15)
            let name = nameChoice < names.count ? names[nameChoice]
                : nameChoice < 14 ? "ks\(nameChoice)" : invalidNames[nameChoice - 14]
            var ks = cp.keyspaces[name] ?? KS(primary: [], indexes: [:])
            switch op {
            case 0...2:   // a few primary entries
                for _ in 0..<input.int(in: 0...6) {
                    let k = key(&input)
                    ks.primary.append(location(&input, key: k))
                }
            case 3:   // a bulk run of generated keys: multi-level trees, built by insertion
                let count = min(input.int(in: 0...800), budget)
                budget -= count
                // A long prefix (up to 1,000 bytes: 3-4 keys a leaf) reaches trees of three levels within the budget.
                let prefix = Array(key(&input).prefix(1000))
                let template = location(&input, key: [])
                let stride = input.int(in: 1...7)
                for i in 0..<count {
                    var e = template
                    e.key = prefix + Array(String(i * stride, radix: 36).utf8)
                    e.sequence = min(e.sequence, UInt64(i) % (lastSequence + 1))
                    ks.primary.append(e)
                }
            case 4...5:   // index entries
                let indexChoice = input.int(in: 0...9)
                let index = indexChoice < 7 ? "idx\(indexChoice)" : indexChoice == 7 ? String(repeating: "i", count: 255)
                    : indexChoice == 8 ? String(repeating: "i", count: 256) : ""
                let bulk = op == 5 ? min(input.int(in: 0...800), budget) : 0
                budget -= bulk
                var entries = ks.indexes[index] ?? []
                for _ in 0..<(op == 4 ? input.int(in: 0...6) : 1) {
                    var term: [UInt8]
                    switch input.int(in: 0...15) {
                    case 0: term = Array(repeating: 6, count: FuzzingSupport.maxIndexTermLength)
                    case 1: term = Array(repeating: 6, count: FuzzingSupport.maxIndexTermLength + 1)
                    default: term = [6] + input.bytes(upTo: input.int(in: 0...6))
                    }
                    // Mostly a key of the keyspace (as in a real index), sometimes one it lacks.
                    let pk = !ks.primary.isEmpty && input.int(in: 0...7) != 0 ? input.pick(ks.primary).key : key(&input)
                    var termLength = term.count
                    if input.int(in: 0...15) == 0 { termLength = term.count + pk.count + 1 }
                    if bulk > 0 {
                        for i in 0..<bulk {
                            let bulkTerm = term + Array(String(i, radix: 36).utf8)
                            entries.append(.init(entry: bulkTerm + pk,
                                                 termLength: termLength == term.count ? bulkTerm.count : termLength))
                        }
                    } else {
                        entries.append(.init(entry: term + pk, termLength: termLength))
                    }
                }
                ks.indexes[index] = entries
            default:   // just the keyspace
                break
            }
            cp.keyspaces[name] = ks
        }

        // What the loader must do with it: entries are checked only as they end up in the trees.
        let expected = canonical(cp)
        for (name, ks) in expected.keyspaces {
            if name.utf8.isEmpty || name.utf8.count > FuzzingSupport.maxNameLength { invalid("keyspace name") }
            ks.primary.forEach(checkLocation)
            for (index, entries) in ks.indexes {
                if index.utf8.isEmpty || index.utf8.count > FuzzingSupport.maxNameLength { invalid("index name") }
                for e in entries where e.entry.count > FuzzingSupport.maxIndexTermLength + FuzzingSupport.maxKeyLength
                    || e.termLength > min(e.entry.count, FuzzingSupport.maxIndexTermLength) {
                    invalid("index entry")
                }
            }
        }

        let fs = MemoryFileSystem()
        let encoded = try FuzzingSupport.encodeCheckpoint(cp, directory: "/ckp", fileSystem: fs)
        let outcome = FuzzingSupport.decodeCheckpoint(encoded)
        switch outcome {
        case .valid(let back):
            try fuzzRequire(valid, "a checkpoint with \(why.prefix(3)) was accepted")
            try checkWellFormed(back)
            try fuzzRequire(back == expected, "checkpoint round trip differs \(diff(expected, back))")
            let again = try FuzzingSupport.encodeCheckpoint(back, directory: "/ckp", fileSystem: fs)
            try fuzzRequire(FuzzHelpers.same(again, encoded), "re-encoding a decoded checkpoint changed its bytes")
        case .invalid(let reason):
            try fuzzRequire(!valid, "a valid checkpoint (\(expected.entryCount) entries, \(expected.indexEntryCount) index entries) was rejected: \(reason)")
        }
        if let flip, !encoded.isEmpty {
            var mutated = encoded
            mutated[flip.position % mutated.count] ^= flip.mask
            try checkBytes(FuzzingSupport.withValidCheckpointChecksum(mutated))
        }
    }

    /// A minimal in-memory file system for writing checkpoints: `FaultFileSystem` (a debug build, with its
    /// durability model) took half of each input's time. No durability, no faults; directories are not tracked.
    final class MemoryFileSystem: FileSystem {
        final class File: @unchecked Sendable {   // guarded by the file system's mutex
            var bytes: [UInt8] = []
        }
        let files = Mutex<[String: File]>([:])

        func createDirectory(at path: String) throws {}
        func directoryExists(at path: String) -> Bool { true }
        func fileExists(at path: String) -> Bool { files.withLock { $0[path] != nil } }
        func contentsOfDirectory(at path: String) throws -> [String] {
            files.withLock { $0.keys.filter { $0.hasPrefix(path + "/") }.map { String($0.dropFirst(path.count + 1)) } }
        }
        func openFile(at path: String, mode: FileOpenMode) throws -> any LucidEngine.FileHandle {
            let file: File = try files.withLock { files in
                if let f = files[path] { return f }
                guard mode == .readWrite(create: true) else { throw LucidError(code: .notFound, message: "no file", file: path) }
                let f = File()
                files[path] = f
                return f
            }
            return Handle(path: path, file: file, fs: self)
        }
        func rename(from: String, to: String) throws {
            try files.withLock { files in
                guard let f = files.removeValue(forKey: from) else { throw LucidError(code: .notFound, message: "no file", file: from) }
                files[to] = f
            }
        }
        func removeFile(at path: String) throws { _ = files.withLock { $0.removeValue(forKey: path) } }
        func syncDirectory(at path: String) throws {}
        func lockFile(at path: String, pid: Int32) throws -> any FileLock { throw LucidError(code: .io, message: "no locks", file: path) }

        final class Handle: LucidEngine.FileHandle {
            let path: String
            let file: File
            let fs: MemoryFileSystem
            init(path: String, file: File, fs: MemoryFileSystem) { self.path = path; self.file = file; self.fs = fs }
            func read(at offset: UInt64, count: Int) throws -> [UInt8] {
                fs.files.withLock { _ in
                    let b = file.bytes
                    guard offset < UInt64(b.count), count > 0 else { return [] }
                    return Array(b[Int(offset)..<min(b.count, Int(offset) + count)])
                }
            }
            func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
                fs.files.withLock { _ in
                    let end = Int(offset) + bytes.count
                    if file.bytes.count < end { file.bytes += [UInt8](repeating: 0, count: end - file.bytes.count) }
                    file.bytes.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: Int(offset)).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
                }
            }
            func size() throws -> UInt64 { fs.files.withLock { _ in UInt64(file.bytes.count) } }
            func truncate(to size: UInt64) throws {
                fs.files.withLock { _ in
                    let n = Int(size)
                    if file.bytes.count > n { file.bytes.removeLast(file.bytes.count - n) } else {
                        file.bytes += [UInt8](repeating: 0, count: n - file.bytes.count)
                    }
                }
            }
            func sync() throws {}
            func close() throws {}
        }
    }
}

// MARK: - Replay test (root test target only)

#if !LUCID_FUZZ_HARNESS
@Suite("Fuzz FailCases replay")
struct FailCasesReplayTests {
    /// `Fuzz/` of this checkout, found from this file's path.
    static let fuzzDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(_ folder: String, _ target: FuzzTarget) -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
    }

    /// `Fuzz/FailCases/KNOWN-ISSUES`: "<target>/<file> <reason>" for findings whose engine fix is pending.
    static let knownIssues: [String: String] = {
        let url = fuzzDirectory.appendingPathComponent("FailCases/KNOWN-ISSUES")
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        var issues: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if let name = parts.first { issues[String(name)] = parts.count > 1 ? String(parts[1]) : "known issue" }
        }
        return issues
    }()

    /// Every input that ever crashed a target or broke one of its checks, and the committed seed corpus. Inputs
    /// listed in KNOWN-ISSUES are expected to fail (and this test fails when one no longer does).
    @Test(arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let failCases = Self.inputs("FailCases", target)
        let seeds = Self.inputs("Corpus", target)
        var known = 0
        for url in failCases + seeds {
            let bytes = try [UInt8](Data(contentsOf: url))
            if let reason = Self.knownIssues["\(target.rawValue)/\(url.lastPathComponent)"] {
                known += 1
                withKnownIssue(Comment(rawValue: reason)) { try target.check(bytes) }
                continue
            }
            do {
                try target.check(bytes)
            } catch let failure as FuzzCheckFailure {
                Issue.record("\(target.rawValue) \(url.lastPathComponent): \(failure)")
            }
        }
        print("\(target.rawValue): replayed \(failCases.count) FailCases (\(known) known issues) and \(seeds.count) corpus inputs")
    }
}
#endif
