// Shared helpers of the engine behaviour and recovery tests (Tests/LucidEngineTests/Engine, .../Recovery).
//
// Everything lives in the `EngineTest` namespace so that it cannot collide with other test files of the target.
// Corruption is done with plain POSIX / Foundation file I/O on real files in temporary directories; on-disk
// structures are parsed and forged from the layout in docs/FORMAT.md (only the checksum routine and LZ4 come
// from the engine, through `@testable import`).

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

enum EngineTest {
    // MARK: Deterministic randomness

    /// The shared seeded generator (LucidEngineTestSupport); every randomized test prints its seed.
    typealias SplitMix64 = LucidEngineTestSupport.SplitMix64

    // MARK: Options, temporary directories

    /// A logger that drops everything (recovery warnings would flood the output of the truncation loops).
    static let quietLogger: Logger = {
        var logger = Logger(label: "lucid.tests")
        logger.logLevel = .critical
        return logger
    }()

    /// Small pages (4 KiB) so that multi-page groups and truncation loops stay cheap.
    static func options(sync: EngineOptions.SyncMode = .always, segmentSize: UInt64? = nil,
                        pageCacheBytes: Int? = nil, createIfMissing: Bool = true,
                        recoveryMode: EngineOptions.RecoveryMode = .pointInTime,
                        compression: EngineOptions.PageCompression = EngineOptions().pageCompression) -> EngineOptions {
        var o = EngineOptions()
        o.pageCompression = compression
        o.pageSize = 4096
        o.syncMode = sync
        if let segmentSize { o.segmentSize = segmentSize }
        if let pageCacheBytes { o.pageCacheBytes = pageCacheBytes }
        o.createIfMissing = createIfMissing
        o.recoveryMode = recoveryMode
        o.logger = quietLogger
        return o
    }

    /// A fresh, empty directory that is removed (with everything in it) when `body` returns or throws.
    static func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        return try body(dir)
    }

    static func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        return try await body(dir)
    }

    static func makeTemporaryDirectory() throws -> String {
        let base = FileManager.default.temporaryDirectory.path
        let dir = base + "/lucid-engine-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    // MARK: Plain file I/O

    static func readFile(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw TestFailure("cannot read \(path)")
        }
        return [UInt8](data)
    }

    /// Replaces the file's contents in place (same inode), creating it when missing.
    static func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw TestFailure("open \(path) failed: errno \(errno)") }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            guard n > 0 else { throw TestFailure("write \(path) failed: errno \(errno)") }
            written += n
        }
    }

    static func fileSize(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.intValue ?? -1
    }

    static func fileExists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    static func truncateFile(_ path: String, to length: Int) throws {
        guard truncate(path, off_t(length)) == 0 else { throw TestFailure("truncate \(path) failed: errno \(errno)") }
    }

    /// Overwrites bytes in place (pwrite on a separate descriptor, like a disk going bad under the engine).
    static func overwrite(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { throw TestFailure("open \(path) failed: errno \(errno)") }
        defer { close(fd) }
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard n == bytes.count else { throw TestFailure("pwrite \(path) failed: errno \(errno)") }
    }

    /// Flips one bit of a file in place.
    static func flipBit(_ path: String, byte offset: Int, bit: Int) throws {
        var bytes = try readFile(path)
        guard offset >= 0, offset < bytes.count else {
            throw TestFailure("cannot flip byte \(offset) of \(path): the file has \(bytes.count) bytes")
        }
        bytes[offset] ^= UInt8(1) << UInt8(bit)
        try overwrite(path, at: offset, with: [bytes[offset]])
    }

    static func append(_ path: String, _ bytes: [UInt8]) throws {
        let size = try fileSize(path)
        try overwrite(path, at: size, with: bytes)
    }

    /// Inserts bytes at `offset`, moving everything after it.
    static func insert(_ path: String, at offset: Int, _ bytes: [UInt8]) throws {
        var all = try readFile(path)
        all.insert(contentsOf: bytes, at: offset)
        try writeFile(path, all)
    }

    /// Removes the checkpoint a clean close writes (it lets open skip the log it covers), so that the next open
    /// replays the log exactly as docs/FORMAT.md "Recovery" describes — as after a crash, where no close-time
    /// checkpoint covers the last groups.
    static func removeCheckpoints(_ dir: String) throws {
        for name in try fileNames(dir) where name.hasPrefix("CHECKPOINT") {
            try FileManager.default.removeItem(atPath: dir + "/" + name)
        }
    }

    static func copyDirectory(_ source: String, to destination: String) throws {
        try FileManager.default.copyItem(atPath: source, toPath: destination)
    }

    /// Every regular file of a directory (name → bytes), for "the source is unchanged" checks.
    static func directoryContents(_ dir: String, excluding: Set<String> = []) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where !excluding.contains(name) {
            out[name] = try readFile(dir + "/" + name)
        }
        return out
    }

    static func fileNames(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
    }

    // MARK: Store layout

    static func segmentName(_ id: UInt64) -> String { Format.segmentFileName(id) }

    /// The segment files of a store, in id order.
    static func segmentPaths(_ dir: String) throws -> [String] {
        try fileNames(dir).filter { Format.segmentId(fromFileName: $0) != nil }.map { dir + "/" + $0 }
    }

    /// The active segment of a store written by one engine: the one with the highest id.
    static func activeSegmentPath(_ dir: String) throws -> String {
        guard let last = try segmentPaths(dir).last else { throw TestFailure("no segment in \(dir)") }
        return last
    }

    // MARK: Little-endian access

    static func u16(_ b: [UInt8], _ o: Int) -> UInt16 { UInt16(b[o]) | UInt16(b[o + 1]) << 8 }
    static func u32(_ b: [UInt8], _ o: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[o + $1]) << (8 * UInt32($1)) } }
    static func u64(_ b: [UInt8], _ o: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[o + $1]) << (8 * UInt64($1)) } }
    static func put32(_ b: inout [UInt8], _ o: Int, _ v: UInt32) { for i in 0..<4 { b[o + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(i))) } }
    static func put64(_ b: inout [UInt8], _ o: Int, _ v: UInt64) { for i in 0..<8 { b[o + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) } }
    static func le32(_ v: UInt32) -> [UInt8] { var b = [UInt8](repeating: 0, count: 4); put32(&b, 0, v); return b }
    static func le64(_ v: UInt64) -> [UInt8] { var b = [UInt8](repeating: 0, count: 8); put64(&b, 0, v); return b }

    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value
        var out: [UInt8] = []
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
        return out
    }

    /// Masked CRC32C of `bytes` (FORMAT.md: CRCs are stored masked).
    static func maskedCRC(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        CRC32C.mask(CRC32C.checksum(Array(bytes)))
    }

    // MARK: Pages on disk (FORMAT.md "Page")

    /// A page header as parsed from disk, with where it sits.
    struct DiskPage: Equatable {
        var offset: Int
        var type: UInt8
        var flags: UInt8
        var recordCount: UInt16
        var salt: UInt32
        var rawLength: UInt32
        var storedLength: UInt32
        var lsn: UInt64
        var syncedLSN: UInt64
        var baseSequence: UInt64
        var end: Int { offset + Format.pageHeaderLength + Int(storedLength) }
        var isCommit: Bool { flags & Format.pageFlagCommit != 0 }
        var isGroupStart: Bool { flags & Format.pageFlagGroupStart != 0 }
        var isCompressed: Bool { flags & Format.pageFlagCompressed != 0 }
        var hasCompressedRecords: Bool { flags & Format.pageFlagRecordsCompressed != 0 }
    }

    static func parseHeader(_ b: [UInt8], at o: Int) -> DiskPage? {
        guard o + Format.pageHeaderLength <= b.count, u32(b, o) == Format.pageMagic else { return nil }
        return DiskPage(offset: o, type: b[o + 4], flags: b[o + 5], recordCount: u16(b, o + 6),
                        salt: u32(b, o + 8), rawLength: u32(b, o + 12), storedLength: u32(b, o + 16),
                        lsn: u64(b, o + 20), syncedLSN: u64(b, o + 28), baseSequence: u64(b, o + 36))
    }

    /// The pages of a (valid) segment's bytes, walking from the 64-byte header while complete pages follow.
    static func pages(ofSegment bytes: [UInt8]) -> [DiskPage] {
        var out: [DiskPage] = []
        var o = Format.segmentHeaderLength
        while let page = parseHeader(bytes, at: o), page.end <= bytes.count {
            out.append(page)
            o = page.end
        }
        return out
    }

    /// The low 32 bits of a segment's salt (what its pages carry).
    static func pageSalt(ofSegment bytes: [UInt8]) -> UInt32 { UInt32(truncatingIfNeeded: u64(bytes, 24)) }

    /// A decoded record (FORMAT.md "record").
    struct DiskRecord: Equatable {
        var kind: UInt8
        var sequence: UInt64
        var keyspace: String
        var key: [UInt8]
        var value: [UInt8]
    }

    /// Decodes the records of the page at `page.offset` of `bytes` (decompressing with the engine's LZ4).
    static func records(of page: DiskPage, in bytes: [UInt8]) throws -> [DiskRecord] {
        let stored = Array(bytes[(page.offset + Format.pageHeaderLength)..<page.end])
        var raw = stored
        if page.isCompressed {
            guard let r = stored.withUnsafeBytes({ LZ4.decompress($0, rawLength: Int(page.rawLength)) }) else {
                throw TestFailure("page at \(page.offset) does not decompress")
            }
            raw = r
        }
        if page.hasCompressedRecords {
            // Against the dictionary the segment's first page holds.
            guard let first = pages(ofSegment: bytes).first, first.type == Format.pageTypeDictionary else {
                throw TestFailure("page at \(page.offset) has compressed records but the segment no dictionary")
            }
            let dictionary = LZ4.PreparedDictionary(Array(bytes[(first.offset + Format.pageHeaderLength)..<first.end]))
            let header = PageHeader(type: page.type, flags: page.flags, recordCount: page.recordCount, salt: page.salt,
                                    rawLength: page.rawLength, storedLength: page.storedLength, lsn: page.lsn,
                                    syncedLSN: page.syncedLSN, baseSequence: page.baseSequence, maskedCRC: 0)
            raw = try stored.withUnsafeBytes {
                try RecordPageCodec.decode($0, header: header, dictionary: dictionary, file: "test", offset: UInt64(page.offset))
            }
        }
        var i = 0
        func readVarint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard i < raw.count, shift < 64 else { throw TestFailure("bad varint") }
                let b = raw[i]
                i += 1
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return result }
                shift += 7
            }
        }
        func take(_ n: Int) throws -> [UInt8] {
            guard n >= 0, i + n <= raw.count else { throw TestFailure("record runs past the payload") }
            defer { i += n }
            return Array(raw[i..<(i + n)])
        }
        var out: [DiskRecord] = []
        while i < raw.count {
            let kind = try take(1)[0]
            let delta = try readVarint()
            let keyspace = String(decoding: try take(Int(try readVarint())), as: UTF8.self)
            let key = try take(Int(try readVarint()))
            let value = try take(Int(try readVarint()))
            let terms = try readVarint()
            for _ in 0..<terms {
                _ = try take(Int(try readVarint()))
                _ = try take(Int(try readVarint()))
            }
            out.append(DiskRecord(kind: kind, sequence: page.baseSequence + delta, keyspace: keyspace, key: key,
                                  value: value))
        }
        return out
    }

    /// Encodes one record exactly as FORMAT.md describes it (no index terms).
    static func encodeRecord(kind: UInt8, seqDelta: UInt64 = 0, keyspace: [UInt8], key: [UInt8],
                             value: [UInt8], termCount: UInt64 = 0) -> [UInt8] {
        var out: [UInt8] = [kind]
        out += varint(seqDelta)
        out += varint(UInt64(keyspace.count)) + keyspace
        out += varint(UInt64(key.count)) + key
        out += varint(UInt64(value.count)) + value
        out += varint(termCount)
        return out
    }

    /// A forged page: the 48-byte header with the given fields, then `payload`; the CRC is computed with the
    /// engine's own routine unless `crc` is given.
    static func forgePage(type: UInt8 = Format.pageTypeData, flags: UInt8 = Format.pageFlagCommit | Format.pageFlagGroupStart,
                          recordCount: UInt16 = 1, salt: UInt32, rawLength: UInt32? = nil,
                          storedLength: UInt32? = nil, lsn: UInt64, syncedLSN: UInt64, baseSequence: UInt64,
                          payload: [UInt8], crc: UInt32? = nil) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: Format.pageHeaderLength)
        put32(&h, 0, Format.pageMagic)
        h[4] = type
        h[5] = flags
        h[6] = UInt8(truncatingIfNeeded: recordCount)
        h[7] = UInt8(truncatingIfNeeded: recordCount >> 8)
        put32(&h, 8, salt)
        put32(&h, 12, rawLength ?? UInt32(payload.count))
        put32(&h, 16, storedLength ?? UInt32(payload.count))
        put64(&h, 20, lsn)
        put64(&h, 28, syncedLSN)
        put64(&h, 36, baseSequence)
        let sum = crc ?? h.withUnsafeBytes { hb in payload.withUnsafeBytes { PageHeader.computeCRC(headerBytes: hb, payload: $0) } }
        put32(&h, 44, sum)
        return h + payload
    }

    /// Recomputes the CRC of the page starting at `offset` of `bytes` in place (after patching a field).
    static func refreshPageCRC(_ bytes: inout [UInt8], pageAt offset: Int) {
        guard let page = parseHeader(bytes, at: offset) else { return }
        let header = Array(bytes[offset..<(offset + Format.pageHeaderLength)])
        let payload = Array(bytes[(offset + Format.pageHeaderLength)..<page.end])
        let sum = header.withUnsafeBytes { hb in payload.withUnsafeBytes { PageHeader.computeCRC(headerBytes: hb, payload: $0) } }
        put32(&bytes, offset + Format.pageHeaderCRCOffset, sum)
    }

    // MARK: Manifest and segment headers

    /// A manifest slot as parsed from disk.
    struct DiskManifest {
        var formatVersion: UInt32
        var version: UInt64
        var nextSegmentId: UInt64
        var segments: [(id: UInt64, state: UInt8, sealedLength: UInt64, firstLSN: UInt64)]
    }

    static func parseManifest(_ b: [UInt8]) -> DiskManifest? {
        guard b.count >= 28, Array(b[0..<8]) == Format.manifestMagic else { return nil }
        let bodyLength = Int(u32(b, 12))
        guard b.count >= 24 + bodyLength + 4, bodyLength >= 12 else { return nil }
        let count = Int(u32(b, 32))
        let v1 = u32(b, 8) == 1
        let entry = v1 ? 25 : 34
        let field = v1 ? 9 : 10     // version 2 adds a kind byte after the state, and an end LSN
        var segments: [(id: UInt64, state: UInt8, sealedLength: UInt64, firstLSN: UInt64)] = []
        for i in 0..<count {
            let o = 36 + i * entry
            guard o + entry <= 24 + bodyLength else { return nil }
            segments.append((u64(b, o), b[o + 8], u64(b, o + field), u64(b, o + field + 8)))
        }
        return DiskManifest(formatVersion: u32(b, 8), version: u64(b, 16), nextSegmentId: u64(b, 24),
                            segments: segments)
    }

    /// The path of the manifest slot with the highest valid version (what the engine uses).
    static func newestManifestSlot(_ dir: String) throws -> (path: String, manifest: DiskManifest) {
        var best: (String, DiskManifest)?
        for name in Format.manifestSlotNames {
            let path = dir + "/" + name
            guard fileExists(path), let m = parseManifest(try readFile(path)) else { continue }
            if best == nil || m.version > best!.1.version { best = (path, m) }
        }
        guard let best else { throw TestFailure("no manifest in \(dir)") }
        return best
    }

    /// Rewrites a manifest slot's trailing CRC after patching it.
    static func refreshManifestCRC(_ b: inout [UInt8]) {
        let end = 24 + Int(u32(b, 12))
        put32(&b, end, maskedCRC(b[0..<end]))
    }

    /// Rewrites a segment header's CRC (bytes 60..<64 over 0..<60) after patching it.
    static func refreshSegmentHeaderCRC(_ b: inout [UInt8]) {
        put32(&b, Format.segmentHeaderCRCOffset, maskedCRC(b[0..<Format.segmentHeaderCRCOffset]))
    }

    /// A thread-safe list of failure messages, for loops and threads that report once at the end.
    final class FailureLog: Sendable {
        private let messages = Mutex<[String]>([])
        func add(_ message: String) { messages.withLock { $0.append(message) } }
        var all: [String] { messages.withLock { $0 } }
        var count: Int { messages.withLock { $0.count } }
    }

    // MARK: Errors

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs `body`, which must throw a `LucidError` with `code`; returns it (or nil after recording an issue).
    @discardableResult
    static func expectLucidError<T>(_ code: LucidError.Code, _ context: @autoclosure () -> String = "",
                                    sourceLocation: SourceLocation = #_sourceLocation,
                                    _ body: () throws -> T) -> LucidError? {
        do {
            let value = try body()
            if let engine = value as? Engine { try? engine.close() }
            Issue.record("expected LucidError \(code), but nothing was thrown. \(context())", sourceLocation: sourceLocation)
            return nil
        } catch let error as LucidError {
            #expect(error.code == code, "expected \(code), got \(error). \(context())", sourceLocation: sourceLocation)
            return error.code == code ? error : nil
        } catch {
            Issue.record("expected LucidError \(code), got \(error). \(context())", sourceLocation: sourceLocation)
            return nil
        }
    }

    @discardableResult
    static func expectLucidError<T>(_ code: LucidError.Code, _ context: @autoclosure () -> String = "",
                                    sourceLocation: SourceLocation = #_sourceLocation,
                                    _ body: () async throws -> T) async -> LucidError? {
        do {
            _ = try await body()
            Issue.record("expected LucidError \(code), but nothing was thrown. \(context())", sourceLocation: sourceLocation)
            return nil
        } catch let error as LucidError {
            #expect(error.code == code, "expected \(code), got \(error). \(context())", sourceLocation: sourceLocation)
            return error.code == code ? error : nil
        } catch {
            Issue.record("expected LucidError \(code), got \(error). \(context())", sourceLocation: sourceLocation)
            return nil
        }
    }

    // MARK: The model

    /// One operation of a batch, applied both to a `WriteBatch` and to the model.
    enum Op: Sendable, Hashable {
        case put(keyspace: String, key: [UInt8], value: [UInt8])
        case delete(keyspace: String, key: [UInt8])
    }

    /// What the store must contain: keyspace → key → value. Empty keyspaces are not kept (the engine lists
    /// only keyspaces that hold a key).
    struct Model: Equatable, Sendable {
        var spaces: [String: [[UInt8]: [UInt8]]] = [:]

        mutating func apply(_ ops: [Op]) {
            for op in ops {
                switch op {
                case .put(let ks, let key, let value):
                    spaces[ks, default: [:]][key] = value
                case .delete(let ks, let key):
                    spaces[ks]?[key] = nil
                    if spaces[ks]?.isEmpty == true { spaces[ks] = nil }
                }
            }
        }

        func applying(_ ops: [Op]) -> Model {
            var copy = self
            copy.apply(ops)
            return copy
        }

        var liveKeys: Int { spaces.values.reduce(0) { $0 + $1.count } }

        /// The sorted records of a keyspace (unsigned byte order).
        func sorted(_ keyspace: String) -> [KeyValue] {
            (spaces[keyspace] ?? [:]).map { KeyValue(key: $0.key, value: $0.value) }
                .sorted { $0.key.lexicographicallyPrecedes($1.key) }
        }
    }

    /// Where one committed batch (= one commit group, when batches are committed one at a time) lies on disk.
    struct CommittedGroup: Equatable {
        var segment: String
        var start: Int
        var end: Int
    }

    /// Commits `batches` one at a time (so each is its own commit group) and returns the model after each batch
    /// (index 0: before the first) and where each group was written.
    static func commitAll(_ batches: [[Op]], to engine: Engine, dir: String,
                          startingFrom model: Model = Model()) throws -> (models: [Model], groups: [CommittedGroup]) {
        var models = [model]
        var groups: [CommittedGroup] = []
        for ops in batches {
            let before = logLengths(engine, dir: dir)
            try engine.commitAndWait(batch(ops))
            // The group is in the segment that grew (a roll, before or after the group, adds a segment that starts
            // with just its header).
            var found: CommittedGroup?
            for (path, end) in logLengths(engine, dir: dir) {
                let start = before[path] ?? Format.segmentHeaderLength
                if end > start {
                    guard found == nil else { throw TestFailure("two segments grew during one commit") }
                    found = CommittedGroup(segment: path, start: start, end: end)
                }
            }
            guard let found else { throw TestFailure("no segment grew during a commit") }
            groups.append(found)
            models.append(models.last!.applying(ops))
        }
        return (models, groups)
    }

    /// The length of the log in each segment file of an open engine, by path: the active segment's ends at its
    /// last group (the file may go on with filler, FORMAT.md "Filler"); a sealed one's is its file's length.
    static func logLengths(_ engine: Engine, dir: String) -> [String: Int] {
        let state = engine.core.currentState()
        var lengths: [String: Int] = [:]
        for id in state.segments.keys { lengths[dir + "/" + segmentName(id)] = Int(state.visibleLength(of: id)) }
        return lengths
    }

    /// The model obtained by replaying `batches` except those at `skipping`.
    static func replay(_ batches: [[Op]], skipping: Set<Int>) -> Model {
        var model = Model()
        for (i, ops) in batches.enumerated() where !skipping.contains(i) { model.apply(ops) }
        return model
    }

    static func batch(_ ops: [Op]) -> WriteBatch {
        var b = WriteBatch()
        for op in ops {
            switch op {
            case .put(let ks, let key, let value): b.put(value, forKey: key, in: ks)
            case .delete(let ks, let key): b.delete(key, in: ks)
            }
        }
        return b
    }

    /// The records of `sorted` (ascending) that `range` admits.
    static func filter(_ sorted: [KeyValue], _ range: KeyRange) -> [KeyValue] {
        sorted.filter { kv in
            switch range.lower {
            case .none: break
            case .included(let k): if kv.key.lexicographicallyPrecedes(k) { return false }
            case .excluded(let k): if !k.lexicographicallyPrecedes(kv.key) { return false }
            }
            switch range.upper {
            case .none: break
            case .included(let k): if k.lexicographicallyPrecedes(kv.key) { return false }
            case .excluded(let k): if !kv.key.lexicographicallyPrecedes(k) { return false }
            }
            return true
        }
    }

    static func describe(_ key: [UInt8]) -> String {
        key.count <= 24 ? key.map { String(format: "%02x", $0) }.joined() : "\(key.prefix(24).map { String(format: "%02x", $0) }.joined())…(\(key.count) B)"
    }

    /// Every difference between an open engine and the model: gets of all model keys and of `absentKeys`,
    /// counts, keyspace names, full scans both ways, snapshot reads. Empty when they agree.
    static func differences(_ engine: Engine, _ model: Model, absentKeys: [[UInt8]] = [],
                            keyspaces extra: [String] = []) throws -> [String] {
        var diffs: [String] = []
        let expectedNames = model.spaces.keys.sorted()
        let names = engine.keyspaces()
        if names != expectedNames { diffs.append("keyspaces() = \(names), expected \(expectedNames)") }
        let snapshot = engine.snapshot()
        for ks in Set(expectedNames).union(extra).union(names).sorted() {
            let expected = model.sorted(ks)
            let count = engine.count(in: ks)
            if count != expected.count { diffs.append("count(in: \(ks)) = \(count), expected \(expected.count)") }
            if snapshot.count(in: ks) != expected.count { diffs.append("snapshot count(in: \(ks)) differs") }
            for kv in expected {
                let got = try engine.get(kv.key, in: ks)
                if got != kv.value {
                    diffs.append("get(\(describe(kv.key)), \(ks)) = \(got.map { "\($0.count) B" } ?? "nil"), expected \(kv.value.count) B")
                    if diffs.count > 20 { return diffs }
                }
            }
            for key in absentKeys where model.spaces[ks]?[key] == nil {
                if let got = try engine.get(key, in: ks) {
                    diffs.append("get(\(describe(key)), \(ks)) = \(got.count) B, expected nil")
                }
            }
            let forward = try engine.scan(in: ks)
            if forward != expected { diffs.append("scan(\(ks)) differs: \(forward.count) records, expected \(expected.count)") }
            let backward = try engine.scan(in: ks, reverse: true)
            if backward != expected.reversed() { diffs.append("reverse scan(\(ks)) differs") }
            if snapshot.keys(in: ks) != expected.map(\.key) { diffs.append("snapshot keys(\(ks)) differ") }
        }
        let stats = engine.statistics
        if stats.liveKeys != model.liveKeys { diffs.append("statistics.liveKeys = \(stats.liveKeys), expected \(model.liveKeys)") }
        return diffs
    }

    /// Random bounded scans (random bounds, inclusive or exclusive, either direction, with and without limits)
    /// compared with the model. Returns the differences.
    static func boundedScanDifferences(_ engine: Engine, _ model: Model, keyspace: String, rounds: Int,
                                       rng: inout SplitMix64) throws -> [String] {
        let sorted = model.sorted(keyspace)
        var diffs: [String] = []
        func randomKey(_ rng: inout SplitMix64) -> [UInt8] {
            if !sorted.isEmpty && rng.chance(0.7) {
                var k = sorted[rng.int(0..<sorted.count)].key
                if rng.chance(0.3) { k.append(UInt8(rng.int(0...255))) }   // just after an existing key
                return k
            }
            return rng.bytes(rng.int(0...3))
        }
        func randomBound(_ rng: inout SplitMix64) -> KeyBound? {
            switch rng.int(0..<5) {
            case 0: nil
            case 1, 2: .included(randomKey(&rng))
            default: .excluded(randomKey(&rng))
            }
        }
        for _ in 0..<rounds {
            var range = KeyRange(lower: randomBound(&rng), upper: randomBound(&rng))
            if rng.chance(0.2), !sorted.isEmpty {
                let k = sorted[rng.int(0..<sorted.count)].key
                range = .prefix(Array(k.prefix(rng.int(0...min(2, k.count)))))
            }
            let reverse = rng.chance(0.5)
            let limit: Int? = rng.chance(0.5) ? rng.int(0...6) : nil
            var expected = filter(sorted, range)
            if reverse { expected.reverse() }
            if let limit { expected = Array(expected.prefix(limit)) }
            let got = try engine.scan(in: keyspace, range: range, reverse: reverse, limit: limit)
            if got != expected {
                diffs.append("scan(\(keyspace), \(range), reverse: \(reverse), limit: \(String(describing: limit))) "
                             + "gave \(got.count) records, expected \(expected.count)")
            }
        }
        return diffs
    }
}


/// Test-specific generators on top of the shared SplitMix64.
extension SplitMix64 {

    /// `count` bytes that LZ4 compresses well (a short random pattern repeated).
    mutating func compressibleBytes(_ count: Int) -> [UInt8] {
        let pattern = bytes(int(1...16))
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count { out.append(contentsOf: pattern.prefix(count - out.count)) }
        return out
    }
}
