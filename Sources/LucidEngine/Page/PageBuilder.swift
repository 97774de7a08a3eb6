/// Builds the pages of one commit group: records are appended to a raw page; a full page is sealed into
/// header + (possibly LZ4-compressed) payload and appended to ``output``, the exact bytes to write.
///
/// In ``Mode/compacted`` (a compaction's output) every page is a group of its own (GROUP_START and COMMIT),
/// records keep their original sequences (the page's base sequence is 0), no raw copies are kept, and
/// ``drain()`` hands out the sealed bytes as they accumulate.
struct PageBuilder {
    enum Mode {
        case commitGroup
        case compacted
    }

    /// Where each record's value landed: page start within ``output`` and value offset within the raw page.
    struct Placement {
        var pageStart: Int
        var valueOffset: Int
    }

    let pageSize: Int
    let salt: UInt32
    let syncedLSN: UInt64
    let mode: Mode
    /// The LZ4 level pages are compressed with (0: the fast compressor, ``LZ4/BlockCompressor``; 1...12: LZ4HC,
    /// ``LZ4/compress(_:appendingTo:level:)``).
    let compressionLevel: Int
    /// Whether pages are offered to LZ4 at all (``EngineOptions/PageCompression``); false stores them as they are.
    let compressing: Bool
    /// When set, each record is compressed alone against this dictionary (``RecordPageCodec``), instead of the
    /// page as one block; the segment's first two pages must hold it (``appendDictionaryPages(_:)``).
    let dictionary: LZ4.PreparedDictionary?
    /// Whether sealed pages give ``samples``.
    let sampling: Bool
    /// The first record of each sealed page, when ``sampling``: what the writer builds later dictionaries from.
    private(set) var samples: [[UInt8]] = []
    private(set) var nextLSN: UInt64
    /// Bytes already handed out by ``drain()``; page starts in ``placements`` count them.
    private(set) var drainedBytes = 0
    /// Raw and stored payload bytes of the sealed pages (for compression statistics).
    private(set) var rawPayloadBytes = 0
    private(set) var storedPayloadBytes = 0
    private(set) var output: [UInt8] = []
    private(set) var pageCount = 0
    /// Raw payloads of the sealed pages, keyed by their start within ``output`` (to warm the page cache).
    private(set) var rawPages: [(start: Int, raw: [UInt8])] = []

    private var raw = ByteWriter()
    private var recordCount = 0
    private var baseSequence: UInt64 = 0
    private var pending: [Int] = []   // indices into placements waiting for this page's start
    private(set) var placements: [Placement] = []
    private var compressed: [UInt8] = []
    /// Where each record of the page being filled starts in it (for per-record compression and samples; kept
    /// only when ``tracksRecords``).
    private var recordStarts: [Int] = []
    /// Whether pages need their records' starts: compressed one by one, or sampled.
    private var tracksRecords: Bool { dictionary != nil || sampling }
    private var entryScratch: [UInt8] = []
    /// Compresses pages with the fast compressor (``compressionLevel`` 0): the one given, else one made for the
    /// first page that needs it, so that pages after the first reuse its state.
    private var compressor: LZ4.BlockCompressor?

    /// A builder for pages of `pageSize` raw bytes. `expectedBytes` (the records' approximate raw size, when
    /// known) sizes ``output`` up front, so that appending the sealed pages does not reallocate and copy it.
    /// `compressor`, when given, compresses the pages (the writer keeps one across commit groups); the builder
    /// must then be its only user while it builds.
    init(pageSize: Int, salt: UInt32, firstLSN: UInt64, syncedLSN: UInt64, mode: Mode = .commitGroup,
         expectedBytes: Int = 0, compressionLevel: Int = 0, compressing: Bool = true,
         dictionary: LZ4.PreparedDictionary? = nil, sampling: Bool = false, compressor: LZ4.BlockCompressor? = nil) {
        self.compressor = compressor
        self.mode = mode
        self.dictionary = dictionary
        self.sampling = sampling
        self.compressionLevel = compressionLevel
        self.compressing = compressing
        self.pageSize = pageSize
        self.salt = salt
        self.nextLSN = firstLSN
        self.syncedLSN = syncedLSN
        raw = ByteWriter(capacity: pageSize)
        if expectedBytes > 0 {
            output.reserveCapacity(expectedBytes + (expectedBytes / pageSize + 1) * Format.pageHeaderLength)
        }
    }

    /// Appends one operation with commit sequence `sequence`; returns its index in ``placements``.
    @discardableResult
    mutating func append(_ op: WriteBatch.Operation, sequence: UInt64) -> Int {
        appendRecord(sequence: sequence, size: { RecordCodec.encodedSize(op, seqDelta: $0) },
                     encode: { RecordCodec.encode(op, seqDelta: $0, into: &$1) })
    }

    /// Appends a batch's operation `i` with commit sequence `sequence` (its record body copied whole); returns its
    /// index in ``placements``.
    @discardableResult
    mutating func append(_ ops: WriteBatch.Packed, _ i: Int, sequence: UInt64) -> Int {
        appendRecord(sequence: sequence, size: { RecordCodec.encodedSize(ops[i], seqDelta: $0) },
                     encode: { RecordCodec.encode(ops, i, seqDelta: $0, into: &$1) })
    }

    /// Appends a record of `size(delta)` bytes that `encode(delta, &raw)` writes (returning its value's offset),
    /// sealing the page first when the record does not fit.
    @inline(__always)
    private mutating func appendRecord(sequence: UInt64, size: (UInt64) -> Int,
                                       encode: (UInt64, inout ByteWriter) -> Int) -> Int {
        if recordCount == 0 && mode == .commitGroup { baseSequence = sequence }
        var delta = sequence - baseSequence
        if recordCount > 0 && (raw.count + size(delta) > pageSize || recordCount == Format.maxRecordsPerPage) {
            sealPage(commit: mode == .compacted)
            if mode == .commitGroup {
                baseSequence = sequence
                delta = 0
            }
        }
        if tracksRecords { recordStarts.append(raw.count) }
        let valueOffset = encode(delta, &raw)
        recordCount += 1
        placements.append(Placement(pageStart: -1, valueOffset: valueOffset))
        pending.append(placements.count - 1)
        return placements.count - 1
    }

    /// Seals the last page with the COMMIT flag. Call once, after the last append.
    mutating func finish() {
        precondition(recordCount > 0, "a commit group needs at least one record")
        sealPage(commit: true)
    }

    /// Records appended to the page being filled.
    var unsealedRecords: Int { recordCount }

    /// Takes the sealed bytes written so far (``Mode/compacted`` only).
    mutating func drain() -> [UInt8] {
        precondition(mode == .compacted, "only a compaction drains its pages")
        let bytes = output
        drainedBytes += output.count
        output = []
        return bytes
    }

    /// Writes `bytes` as the dictionary the records of this segment are compressed against: two dictionary pages
    /// (``Format/pageTypeDictionary``), the second a copy that readers fall back to when the first is damaged.
    /// Call first, before any record, and only for a segment's first pages.
    mutating func appendDictionaryPages(_ bytes: [UInt8]) {
        precondition(pageCount == 0 && recordCount == 0 && !bytes.isEmpty && bytes.count <= Format.maxDictionaryLength)
        for copy in 0..<2 {
            let groupFlags = mode == .compacted ? Format.pageFlagGroupStart | Format.pageFlagCommit
                : copy == 0 ? Format.pageFlagGroupStart : 0
            emit(type: Format.pageTypeDictionary, flags: groupFlags, recordCount: 0, rawLength: bytes.count, payload: bytes)
        }
    }

    /// `raw` compressed into ``compressed``: its size, or nil when LZ4 could not compress it.
    private mutating func compress(_ raw: [UInt8]) -> Int? {
        if compressionLevel > 0 {
            return raw.withUnsafeBytes { LZ4.compress($0, appendingTo: &compressed, level: compressionLevel) }
        }
        let compressor = self.compressor ?? LZ4.BlockCompressor()
        self.compressor = compressor
        return raw.withUnsafeBytes { compressor.compress($0, appendingTo: &compressed) }
    }

    private mutating func sealPage(commit: Bool) {
        let start = drainedBytes + output.count
        let rawBytes = raw.bytes
        compressed.removeAll(keepingCapacity: true)
        var flags: UInt8 = 0
        if let dictionary {
            rawBytes.withUnsafeBytes {
                RecordPageCodec.encode($0, recordStarts: recordStarts, dictionary: dictionary, appendingTo: &compressed,
                                       scratch: &entryScratch)
            }
            flags = Format.pageFlagRecordsCompressed
        } else {
            let compressedSize = !compressing ? nil : compress(rawBytes)
            let useCompressed = compressedSize.map {
                Self.savesEnough(compressed: $0, raw: rawBytes.count)
            } ?? false
            flags = useCompressed ? Format.pageFlagCompressed : 0
        }
        if sampling, let first = recordStarts.first {
            samples.append(Array(rawBytes[first..<(recordStarts.count > 1 ? recordStarts[1] : rawBytes.count)]))
        }
        emit(type: Format.pageTypeData,
             flags: flags | (commit ? Format.pageFlagCommit : 0)
                | (pageCount == 0 || mode == .compacted ? Format.pageFlagGroupStart : 0),
             recordCount: recordCount, rawLength: rawBytes.count, payload: flags == 0 ? rawBytes : compressed)
        if mode == .commitGroup { rawPages.append((start, rawBytes)) }
        for i in pending { placements[i].pageStart = start }
        pending.removeAll(keepingCapacity: true)
        raw = ByteWriter(capacity: pageSize)
        recordCount = 0
        recordStarts.removeAll(keepingCapacity: true)
    }

    /// Whether a payload of `raw` bytes is stored as its `compressed` LZ4 form: when that saves at least 1/8 of it
    /// (docs/FORMAT.md), exactly: `raw - compressed >= raw / 8` in rationals, that is `8 × compressed <= 7 × raw`.
    @inline(__always)
    static func savesEnough(compressed: Int, raw: Int) -> Bool {
        compressed * Format.compressionMinimumSavingDivisor
            <= raw * (Format.compressionMinimumSavingDivisor - 1)
    }

    /// Appends one page (header, with its checksum, then `payload`) to ``output``.
    private mutating func emit(type: UInt8, flags: UInt8, recordCount: Int, rawLength: Int, payload: [UInt8]) {
        var header = PageHeader(
            type: type, flags: flags, recordCount: UInt16(recordCount), salt: salt, rawLength: UInt32(rawLength),
            storedLength: UInt32(payload.count), lsn: nextLSN, syncedLSN: syncedLSN,
            baseSequence: type == Format.pageTypeData ? baseSequence : 0, maskedCRC: 0)
        var headerWriter = ByteWriter(capacity: Format.pageHeaderLength)
        header.encode(into: &headerWriter)
        header.maskedCRC = headerWriter.bytes.withUnsafeBytes { h in
            payload.withUnsafeBytes { PageHeader.computeCRC(headerBytes: h, payload: $0) }
        }
        headerWriter.setU32(header.maskedCRC, at: Format.pageHeaderCRCOffset)
        output.append(contentsOf: headerWriter.bytes)
        output.append(contentsOf: payload)
        rawPayloadBytes += rawLength
        storedPayloadBytes += payload.count
        nextLSN += 1
        pageCount += 1
    }
}
