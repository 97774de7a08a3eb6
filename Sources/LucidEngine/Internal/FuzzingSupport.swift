/// Thin entry points into the engine's internal decoders and encoders, for the libFuzzer targets in `Fuzz/` and
/// the replay test `Tests/LucidEngineTests/Fuzz/FailCasesReplayTests.swift`.
///
/// Nothing here has behaviour of its own: each function feeds bytes to the same code recovery runs
/// (``SegmentScanner``, ``RecordCodec``, ``Manifest/decode(_:file:)``, ``SegmentHeader/decode(_:file:)``) or builds
/// a page with the writer's ``PageBuilder``, and converts the result into plain values. Not API: the SPI may change
/// with any internal change.
@_spi(Fuzzing) public enum FuzzingSupport {
    /// One record as stored in a page. Names are the stored bytes (the format says UTF-8; the decoder does not check).
    public struct Record: Hashable, Sendable {
        /// 1 = put, 2 = delete.
        public var kind: UInt8
        public var sequence: UInt64
        public var keyspace: [UInt8]
        public var key: [UInt8]
        public var value: [UInt8]
        /// (index name, term) pairs, in stored order.
        public var terms: [Term]

        public init(kind: UInt8, sequence: UInt64, keyspace: [UInt8], key: [UInt8], value: [UInt8], terms: [Term]) {
            self.kind = kind
            self.sequence = sequence
            self.keyspace = keyspace
            self.key = key
            self.value = value
            self.terms = terms
        }
    }

    /// One index term of a record: the index name's bytes and the term.
    public struct Term: Hashable, Sendable {
        public var index: [UInt8]
        public var term: [UInt8]
        public init(index: [UInt8], term: [UInt8]) {
            self.index = index
            self.term = term
        }
    }

    /// A page that passed every check the scanner makes.
    public struct Page: Hashable, Sendable {
        public var type: UInt8
        public var isCommit: Bool
        public var isCompressed: Bool
        public var lsn: UInt64
        public var syncedLSN: UInt64
        public var baseSequence: UInt64
        public var rawLength: Int
        /// Header plus stored payload: where the next page would start.
        public var totalLength: Int
        /// The decoded records (empty for a safe-to-ignore page of another type).
        public var records: [Record]
    }

    /// Runs the page at the start of `bytes` through the recovery scanner's full validation (header checks
    /// against the format caps and the bytes present, salt, CRC, LZ4 to exactly `rawLength`, record structure),
    /// as if `bytes` followed a segment header whose salt has low 32 bits `salt`. Returns the page, or the
    /// scanner's reason for rejecting it. Never traps; allocates at most what the header's checked lengths allow.
    public static func decodePage(_ bytes: [UInt8], salt: UInt32) -> Result<Page, PageRejection> {
        var scanner = SegmentScanner(file: segmentFile(bytes, salt: salt),
                                     limit: UInt64(Format.segmentHeaderLength + bytes.count))
        do {
            switch try scanner.page(at: UInt64(Format.segmentHeaderLength)) {
            case .success(let (header, raw)): return .success(page(header: header, raw: raw))
            case .failure(let failure): return .failure(PageRejection(reason: failure.reason))
            }
        } catch {
            return .failure(PageRejection(reason: "unexpected error \(error)"))
        }
    }

    /// The raw payload of the page at the start of `bytes` (read as ``decodePage(_:salt:)`` reads it), through
    /// the engine's read path: whole (`range` nil: `SegmentFile.readPage`, which cached reads use) or only the
    /// bytes `range`, decoded no further than its end (`SegmentFile.readValue`, which uncached point reads use).
    /// Returns the error's message on failure. Never traps.
    public static func readPayload(_ bytes: [UInt8], salt: UInt32, range: Range<Int>?) -> Result<[UInt8], PageRejection> {
        let file = segmentFile(bytes, salt: salt)
        let offset = UInt64(Format.segmentHeaderLength)
        let end = offset + UInt64(bytes.count)
        do {
            guard let range else { return .success(try file.readPage(at: offset, fileEnd: end).1.bytes) }
            return .success(try file.readValue(at: offset, range: range, fileEnd: end).1)
        } catch let error as LucidError {
            return .failure(PageRejection(reason: error.message))
        } catch {
            return .failure(PageRejection(reason: "unexpected error \(error)"))
        }
    }

    /// Why ``decodePage(_:salt:)`` rejected the bytes.
    public struct PageRejection: Error, Hashable, Sendable {
        public var reason: String
    }

    /// What ``scanSegmentBody(_:salt:)`` saw.
    public struct ScanSummary: Hashable, Sendable {
        /// Offsets (in the body) of the valid pages, in order, and their LSNs.
        public var pageOffsets: [Int] = []
        public var pageLSNs: [UInt64] = []
        /// Offsets (in the body) of invalid bytes, after each of which the scan searched for the next valid page.
        public var failures: [Int] = []
    }

    /// Scans `body` as the pages of a segment (after its header) with the scanner's `next()` and, at each failure,
    /// `findValidPage(after:)`, exactly like ``Engine/verify()``. At most `maxSteps` pages and failures.
    public static func scanSegmentBody(_ body: [UInt8], salt: UInt32, maxSteps: Int = 10_000) -> ScanSummary {
        let base = UInt64(Format.segmentHeaderLength)
        var scanner = SegmentScanner(file: segmentFile(body, salt: salt), limit: base + UInt64(body.count))
        var summary = ScanSummary()
        do {
            for _ in 0..<maxSteps {
                switch try scanner.next() {
                case .end: return summary
                case .page(let offset, let header, _):
                    summary.pageOffsets.append(Int(offset - base))
                    summary.pageLSNs.append(header.lsn)
                case .invalid(let offset, _):
                    summary.failures.append(Int(offset - base))
                    guard let next = try scanner.findValidPage(after: offset) else { return summary }
                    scanner.seek(to: next.offset)
                }
            }
        } catch {}
        return summary
    }

    /// The dictionary ``decodeRecordPayload(_:recordCount:range:)`` decodes against: fixed record-like bytes.
    private static let fuzzDictionary = LZ4.PreparedDictionary(
        Array(String(repeating: "{\"keyspace\":\"books\",\"title\":\"The Quiet Mirror\",\"genre\":\"travel\"}", count: 40).utf8))

    /// What ``decodeRecordPayload(_:recordCount:range:)`` gives: the whole raw payload, the bytes `range` of it read
    /// alone (as a point read decodes one record), and the whole payload encoded again from `whole` and decoded.
    public struct RecordPayloadReads: Sendable {
        public var whole: [UInt8]?
        public var part: [UInt8]?
        public var reencoded: [UInt8]?
        /// The raw length the payload's table claims (what the reads were asked to decode to).
        public var rawLength: Int
    }

    /// Reads `payload` as the payload of a page of `recordCount` records compressed one by one against a fixed
    /// dictionary (``RecordPageCodec``), taking the raw length its table claims (capped at the largest page):
    /// whole, then only `range` (clamped into the raw length), then, when the whole read succeeds, its records
    /// encoded again by the writer's codec and decoded. Never traps; a read that fails gives nil.
    public static func decodeRecordPayload(_ payload: [UInt8], recordCount: Int, range: Range<Int>) -> RecordPayloadReads {
        var rawLength = 0
        payload.withUnsafeBytes { bytes in
            var reader = ByteReader(bytes)
            for _ in 0..<max(0, min(recordCount, Format.maxRecordsPerPage)) {
                guard let raw = reader.length(max: Format.maxRawPageLength - rawLength), reader.varint() != nil else { break }
                rawLength += raw
            }
        }
        var reads = RecordPayloadReads(rawLength: rawLength)
        guard rawLength > 0, recordCount > 0, recordCount <= Format.maxRecordsPerPage else { return reads }
        let header = PageHeader(type: Format.pageTypeData, flags: Format.pageFlagRecordsCompressed,
                                recordCount: UInt16(recordCount), salt: 0, rawLength: UInt32(rawLength),
                                storedLength: UInt32(payload.count), lsn: 1, syncedLSN: 0, baseSequence: 0, maskedCRC: 0)
        let lower = min(range.lowerBound, rawLength - 1)
        let clamped = lower..<max(lower + 1, min(range.upperBound, rawLength))
        payload.withUnsafeBytes { bytes in
            reads.whole = try? RecordPageCodec.decode(bytes, header: header, dictionary: fuzzDictionary, file: "fuzz", offset: 0)
            reads.part = try? RecordPageCodec.bytes(clamped, of: bytes, header: header, dictionary: fuzzDictionary,
                                                    file: "fuzz", offset: 0)
        }
        if let whole = reads.whole {
            // The records' boundaries, from the table.
            var starts: [Int] = []
            payload.withUnsafeBytes { bytes in
                _ = RecordPageCodec.forEachEntry(bytes, recordCount: recordCount, rawLength: rawLength) {
                    starts.append($0.rawStart)
                    return true
                }
            }
            var encoded: [UInt8] = []
            var scratch: [UInt8] = []
            whole.withUnsafeBytes {
                RecordPageCodec.encode($0, recordStarts: starts, dictionary: fuzzDictionary, appendingTo: &encoded,
                                       scratch: &scratch)
            }
            var again = header
            again.storedLength = UInt32(encoded.count)
            reads.reencoded = encoded.withUnsafeBytes {
                try? RecordPageCodec.decode($0, header: again, dictionary: fuzzDictionary, file: "fuzz", offset: 0)
            }
        }
        return reads
    }

    /// Builds one commit group of `records` with the writer's ``PageBuilder`` (LZ4 when it saves 1/8), on pages of
    /// `pageSize` raw bytes. Each record's `sequence` is its commit sequence; sequences must not decrease. Names
    /// are taken as UTF-8. Returns the exact bytes the writer would append.
    public static func encodePages(_ records: [Record], salt: UInt32, firstLSN: UInt64, syncedLSN: UInt64,
                                   pageSize: Int) -> [UInt8] {
        precondition(!records.isEmpty, "a commit group needs at least one record")
        var builder = PageBuilder(pageSize: pageSize, salt: salt, firstLSN: firstLSN, syncedLSN: syncedLSN)
        for r in records {
            let terms = r.terms.map { IndexTerm(index: String(decoding: $0.index, as: UTF8.self), term: $0.term) }
            let op = WriteBatch.Operation(kind: r.kind == Format.recordKindDelete ? .delete : .put,
                                          keyspace: String(decoding: r.keyspace, as: UTF8.self),
                                          key: r.key, value: r.value, terms: terms)
            builder.append(op, sequence: r.sequence)
        }
        builder.finish()
        return builder.output
    }

    /// What ``decodeManifest(_:)`` found.
    public enum ManifestOutcome: Hashable, Sendable {
        /// A valid slot: its canonical re-encoding and the numbers of segments and obsolete segments it lists.
        case valid(reencoded: [UInt8], segments: Int, obsolete: Int)
        /// A damaged slot (recovery would fall back to the other one).
        case invalid(String)
        /// A slot of a newer format version (recovery refuses to open).
        case unsupportedVersion
    }

    /// Decodes a manifest slot exactly as recovery reads one.
    public static func decodeManifest(_ bytes: [UInt8]) -> ManifestOutcome {
        do {
            switch try Manifest.decode(bytes, file: "fuzz") {
            case .valid(let m): return .valid(reencoded: m.encode(), segments: m.segments.count, obsolete: m.obsolete.count)
            case .invalid(let why): return .invalid(why)
            case .missing: return .invalid("missing")
            }
        } catch let error as LucidError where error.code == .unsupportedFormatVersion {
            return .unsupportedVersion
        } catch {
            preconditionFailure("Manifest.decode threw \(error)")
        }
    }

    /// Decodes a segment header. Returns the re-encoded header when valid, nil when it is rejected (with a
    /// ``LucidError``; any other error type traps, since the contract is `LucidError` only).
    public static func decodeSegmentHeader(_ bytes: [UInt8]) -> [UInt8]? {
        do {
            return try SegmentHeader.decode(bytes, file: "fuzz").encode()
        } catch is LucidError {
            return nil
        } catch {
            preconditionFailure("SegmentHeader.decode threw a non-LucidError: \(error)")
        }
    }

    /// The low 32 bits of the salt of the segment header at the start of `bytes`, when it decodes.
    public static func pageSalt(ofSegmentHeader bytes: [UInt8]) -> UInt32? {
        (try? SegmentHeader.decode(Array(bytes.prefix(Format.segmentHeaderLength)), file: "fuzz"))?.pageSalt
    }

    // MARK: Checksums, so that fuzzed bytes get past the CRC checks and reach the decoders behind them

    /// `bytes` (a page at offset 0) with its header CRC recomputed over the stored payload its header claims
    /// (cut to the bytes present). Unchanged when shorter than a page header.
    public static func withValidPageChecksum(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= Format.pageHeaderLength else { return bytes }
        var out = bytes
        let stored = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 16, as: UInt32.self).littleEndian })
        let end = Format.pageHeaderLength + min(stored, bytes.count - Format.pageHeaderLength)
        let crc = bytes.withUnsafeBytes {
            PageHeader.computeCRC(headerBytes: UnsafeRawBufferPointer(rebasing: $0[0..<Format.pageHeaderLength]),
                                  payload: UnsafeRawBufferPointer(rebasing: $0[Format.pageHeaderLength..<end]))
        }
        out.replaceSubrange(Format.pageHeaderCRCOffset..<(Format.pageHeaderCRCOffset + 4), with: littleEndian(crc))
        return out
    }

    /// `bytes` (a manifest slot) with its CRC recomputed for the body length it claims, when the bytes hold it.
    public static func withValidManifestChecksum(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= Format.manifestHeaderLength + 4 else { return bytes }
        let bodyLength = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 12, as: UInt32.self).littleEndian })
        let end = Format.manifestHeaderLength + bodyLength
        guard bodyLength <= Format.manifestMaxBodyLength, end + 4 <= bytes.count else { return bytes }
        var out = bytes
        out.replaceSubrange(end..<(end + 4), with: littleEndian(CRC32C.mask(CRC32C.checksum(Array(bytes[0..<end])))))
        return out
    }

    /// `bytes` (a segment header) with its CRC recomputed.
    public static func withValidSegmentHeaderChecksum(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= Format.segmentHeaderLength else { return bytes }
        var out = bytes
        let crc = CRC32C.mask(CRC32C.checksum(Array(bytes[0..<Format.segmentHeaderCRCOffset])))
        out.replaceSubrange(Format.segmentHeaderCRCOffset..<(Format.segmentHeaderCRCOffset + 4), with: littleEndian(crc))
        return out
    }

    private static func littleEndian(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }

    /// The format's length caps, so harnesses can check allocations against them.
    public static let maxRawPageLength = Format.maxRawPageLength
    public static let segmentHeaderLength = Format.segmentHeaderLength
    public static let pageHeaderLength = Format.pageHeaderLength

    // MARK: Plumbing

    private static func segmentFile(_ body: [UInt8], salt: UInt32) -> SegmentFile {
        let header = SegmentHeader(segmentId: 1, salt: UInt64(salt), firstLSN: 1, createdAtMillis: 0,
                                   kind: Format.segmentKindLog)
        let handle = MemoryFileHandle(bytes: header.encode() + body)
        return SegmentFile(id: 1, path: "fuzz", header: header, handle: handle)
    }

    private static func page(header: PageHeader, raw: PageBuffer) -> Page {
        var records: [Record] = []
        if header.type == Format.pageTypeData {
            raw.bytes.withUnsafeBytes { payload in
                _ = RecordCodec.decodeAll(payload, expectedCount: Int(header.recordCount),
                                          baseSequence: header.baseSequence) { r in
                    let value = Array(UnsafeRawBufferPointer(rebasing: payload[r.valueOffset..<(r.valueOffset + r.valueLength)]))
                    // Same walk as RecordCodec.terms(of:in:), keeping the name's bytes.
                    var terms: [Term] = []
                    var reader = ByteReader(payload, offset: r.termsOffset)
                    for _ in 0..<r.termCount {
                        let name = reader.bytes(reader.length(max: Format.maxIndexNameLength)!)!
                        terms.append(Term(index: name, term: reader.bytes(reader.length(max: Format.maxIndexTermLength)!)!))
                    }
                    records.append(Record(kind: r.kind.rawValue, sequence: r.sequence, keyspace: Array(r.keyspace),
                                          key: Array(r.key), value: value, terms: terms))
                }
            }
        }
        return Page(type: header.type, isCommit: header.isCommit, isCompressed: header.isCompressed,
                    lsn: header.lsn, syncedLSN: header.syncedLSN, baseSequence: header.baseSequence,
                    rawLength: Int(header.rawLength), totalLength: header.totalLength, records: records)
    }

    /// A read-only in-memory file, so the scanner runs unchanged on fuzzer bytes.
    private final class MemoryFileHandle: FileHandle, Sendable {
        let path = "fuzz"
        let bytes: [UInt8]
        init(bytes: [UInt8]) { self.bytes = bytes }
        func read(at offset: UInt64, count: Int) throws -> [UInt8] {
            guard offset < UInt64(bytes.count), count > 0 else { return [] }
            let start = Int(offset)
            return Array(bytes[start..<(start + min(count, bytes.count - start))])
        }
        func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
            throw LucidError(code: .io, message: "read-only", file: path)
        }
        func size() throws -> UInt64 { UInt64(bytes.count) }
        func truncate(to size: UInt64) throws { throw LucidError(code: .io, message: "read-only", file: path) }
        func sync() throws {}
        func close() throws {}
    }
}

// MARK: - Checkpoint

@_spi(Fuzzing) extension FuzzingSupport {
    /// One segment a checkpoint names: id, salt, first LSN.
    public struct CheckpointSegment: Hashable, Sendable {
        public var id: UInt64
        public var salt: UInt64
        public var firstLSN: UInt64
        public init(id: UInt64, salt: UInt64, firstLSN: UInt64) {
            self.id = id
            self.salt = salt
            self.firstLSN = firstLSN
        }
    }

    /// One primary entry of a checkpoint: a key and its record's location.
    public struct CheckpointEntry: Hashable, Sendable {
        public var key: [UInt8]
        public var segment: UInt32
        public var pageOffset: UInt32
        public var valueOffset: UInt32
        public var valueLength: UInt32
        public var hasTerms: Bool
        public var sequence: UInt64
        public init(key: [UInt8], segment: UInt32, pageOffset: UInt32, valueOffset: UInt32, valueLength: UInt32,
                    hasTerms: Bool, sequence: UInt64) {
            self.key = key
            self.segment = segment
            self.pageOffset = pageOffset
            self.valueOffset = valueOffset
            self.valueLength = valueLength
            self.hasTerms = hasTerms
            self.sequence = sequence
        }
    }

    /// One secondary-index entry: `term ‖ primary key` and the term's length.
    public struct CheckpointIndexEntry: Hashable, Sendable {
        public var entry: [UInt8]
        public var termLength: Int
        public init(entry: [UInt8], termLength: Int) {
            self.entry = entry
            self.termLength = termLength
        }
    }

    /// One keyspace of a checkpoint. Decoded: entries in the order the loaded trees iterate them, and the counts
    /// the trees report. For encoding only the entries are used (inserted one by one, a later duplicate key wins).
    public struct CheckpointKeyspace: Hashable, Sendable {
        public var primary: [CheckpointEntry]
        public var indexes: [String: [CheckpointIndexEntry]]
        /// `BTree.count` of the loaded trees (decoding only; equal to the entry counts when the trees are sound).
        public var primaryCount: Int
        public var indexCounts: [String: Int]
        public init(primary: [CheckpointEntry], indexes: [String: [CheckpointIndexEntry]]) {
            self.primary = primary
            self.indexes = indexes
            self.primaryCount = primary.count
            self.indexCounts = indexes.mapValues(\.count)
        }
    }

    /// A whole checkpoint: header fields, segment list and keyspaces.
    public struct Checkpoint: Hashable, Sendable {
        public var coveredSegment: UInt64
        public var coveredOffset: UInt64
        public var nextLSN: UInt64
        public var lastSequence: UInt64
        public var segments: [CheckpointSegment]
        public var keyspaces: [String: CheckpointKeyspace]
        public init(coveredSegment: UInt64, coveredOffset: UInt64, nextLSN: UInt64, lastSequence: UInt64,
                    segments: [CheckpointSegment], keyspaces: [String: CheckpointKeyspace]) {
            self.coveredSegment = coveredSegment
            self.coveredOffset = coveredOffset
            self.nextLSN = nextLSN
            self.lastSequence = lastSequence
            self.segments = segments
            self.keyspaces = keyspaces
        }

        /// Primary entries over all keyspaces.
        public var entryCount: Int { keyspaces.values.reduce(0) { $0 + $1.primary.count } }
        /// Secondary-index entries over all keyspaces and indexes.
        public var indexEntryCount: Int {
            keyspaces.values.reduce(0) { $0 + $1.indexes.values.reduce(0) { $0 + $1.count } }
        }
    }

    /// What ``decodeCheckpoint(_:)`` found.
    public enum CheckpointOutcome: Hashable, Sendable {
        case valid(Checkpoint)
        /// Rejected (open would ignore the checkpoint and scan the log): the loader's reason.
        case invalid(String)
    }

    /// Decodes `bytes` as a `CHECKPOINT` file exactly as open loads one (``CheckpointLoader/load(directory:fileSystem:)``:
    /// its size guard, then ``CheckpointLoader/decode(_:)``), and converts the loaded trees to plain values by
    /// iterating them. Never traps; allocates at most what the bytes present allow.
    public static func decodeCheckpoint(_ bytes: [UInt8]) -> CheckpointOutcome {
        // The same guard as CheckpointLoader.load: decode(_:) itself assumes at least a trailer's worth of bytes.
        guard bytes.count >= Format.checkpointTrailerLength + 8 else {
            return .invalid("checkpoint of \(bytes.count) bytes")
        }
        let result = bytes.withUnsafeBytes { CheckpointLoader.decode($0) }
        switch result {
        case .failure(let rejection): return .invalid(rejection.description)
        case .success(let loaded): return .valid(checkpoint(loaded))
        }
    }

    /// Writes `checkpoint` with the engine's ``CheckpointWriter`` into `directory` on `fileSystem` (created when
    /// missing; any previous `CHECKPOINT` there is replaced) and returns the file's bytes. Each keyspace's trees
    /// are built by inserting its entries in the given order (a repeated key keeps the last location); term
    /// lengths are clamped to `UInt16`. Index trees without entries are not written (as the engine does).
    public static func encodeCheckpoint(_ checkpoint: Checkpoint, directory: String,
                                        fileSystem: any FileSystem = PosixFileSystem()) throws -> [UInt8] {
        if !fileSystem.directoryExists(at: directory) { try fileSystem.createDirectory(at: directory) }
        var keyspaces: [String: KeyspaceState] = [:]
        for (name, ks) in checkpoint.keyspaces {
            var state = KeyspaceState()
            for e in ks.primary {
                _ = state.primary.updateValue(
                    RecordLocation(segment: e.segment, pageOffset: e.pageOffset, valueOffset: e.valueOffset,
                                   valueLength: e.valueLength, hasTerms: e.hasTerms, sequence: e.sequence),
                    forKey: e.key)
            }
            for (indexName, entries) in ks.indexes {
                var tree = BTree<UInt16>()
                for e in entries { _ = tree.updateValue(UInt16(clamping: e.termLength), forKey: e.entry) }
                state.indexes[indexName] = tree
            }
            keyspaces[name] = state
        }
        let header = CheckpointHeader(
            coveredSegment: checkpoint.coveredSegment, coveredOffset: checkpoint.coveredOffset,
            nextLSN: checkpoint.nextLSN, lastSequence: checkpoint.lastSequence,
            segments: checkpoint.segments.map { .init(id: $0.id, salt: $0.salt, firstLSN: $0.firstLSN) })
        // Chunks of a few entries, so that inputs of a few hundred entries reach the loading of many chunks.
        let writer = CheckpointWriter(directory: directory, fileSystem: fileSystem, chunkEntries: fuzzChunkEntries)
        try writer.write(header: header, keyspaces: keyspaces)
        let handle = try fileSystem.openFile(at: writer.path, mode: .readOnly)
        defer { try? handle.close() }
        return try handle.read(at: 0, count: Int(try handle.size()))
    }

    /// `bytes` (a checkpoint file) with its trailer (length of everything before it, masked CRC32C) recomputed,
    /// so fuzzed bytes reach the decoder behind the checksum. Unchanged when shorter than the trailer.
    public static func withValidCheckpointChecksum(_ bytes: [UInt8]) -> [UInt8] {
        let trailer = Format.checkpointTrailerLength
        guard bytes.count >= trailer else { return bytes }
        var out = bytes
        let bodyEnd = bytes.count - trailer
        out.replaceSubrange(bodyEnd..<(bodyEnd + 8),
                            with: withUnsafeBytes(of: UInt64(bodyEnd).littleEndian) { Array($0) })
        let crc = CRC32C.mask(CRC32C.checksum(Array(out[0..<(bodyEnd + 8)])))
        out.replaceSubrange((bodyEnd + 8)..<(bodyEnd + 12), with: littleEndian(crc))
        return out
    }

    /// The most entries ``encodeCheckpoint(_:directory:fileSystem:)`` writes in one chunk (the engine writes
    /// `Format.checkpointChunkEntries`).
    public static let fuzzChunkEntries = 37

    /// The format's caps a checkpoint entry is checked against.
    public static let maxKeyLength = Format.maxKeyLength
    public static let maxValueLength = Format.maxValueLength
    public static let maxIndexTermLength = Format.maxIndexTermLength
    public static let maxNameLength = Format.maxKeyspaceNameLength
    public static let checkpointTrailerLength = Format.checkpointTrailerLength

    private static func checkpoint(_ loaded: CheckpointLoader.Loaded) -> Checkpoint {
        var keyspaces: [String: CheckpointKeyspace] = [:]
        for (name, state) in loaded.keyspaces {
            var primary: [CheckpointEntry] = []
            state.primary.forEach { key, l in
                primary.append(CheckpointEntry(key: Array(key), segment: l.segment, pageOffset: l.pageOffset,
                                               valueOffset: l.valueOffset, valueLength: l.valueLength,
                                               hasTerms: l.hasTerms, sequence: l.sequence))
                return true
            }
            var indexes: [String: [CheckpointIndexEntry]] = [:]
            for (indexName, tree) in state.indexes {
                var entries: [CheckpointIndexEntry] = []
                tree.forEach { entry, termLength in
                    entries.append(CheckpointIndexEntry(entry: Array(entry), termLength: Int(termLength)))
                    return true
                }
                indexes[indexName] = entries
            }
            var ks = CheckpointKeyspace(primary: primary, indexes: indexes)
            ks.primaryCount = state.primary.count
            ks.indexCounts = state.indexes.mapValues(\.count)
            keyspaces[name] = ks
        }
        let h = loaded.header
        return Checkpoint(coveredSegment: h.coveredSegment, coveredOffset: h.coveredOffset, nextLSN: h.nextLSN,
                          lastSequence: h.lastSequence,
                          segments: h.segments.map { CheckpointSegment(id: $0.id, salt: $0.salt, firstLSN: $0.firstLSN) },
                          keyspaces: keyspaces)
    }
}
