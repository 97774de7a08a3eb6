/// Thin entry points into the engine's internal decoders and encoders, for the libFuzzer targets in `Fuzz/` and
/// the checks they share with the replay test (`Tests/LucidEngineTests/Fuzz/`), and into its B-tree and pages for
/// the micro-benchmarks in `Benchmarks/Micro`.
///
/// Nothing here has behaviour of its own: each function feeds bytes to the same code recovery runs
/// (``SegmentScanner``, ``RecordCodec``, ``Manifest/decode(_:file:)``, ``SegmentHeader/decode(_:file:)``) or builds
/// a page with the writer's ``PageBuilder``, and converts the result into plain values; ``PrimaryTree`` holds the
/// engine's primary-index tree behind a few of its own calls. Not API: the SPI may change with any internal change.
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
