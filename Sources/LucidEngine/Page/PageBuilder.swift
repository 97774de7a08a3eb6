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
    /// The LZ4 level pages are compressed with (0: the fast compressor; see ``LZ4/compress(_:appendingTo:level:)``).
    let compressionLevel: Int
    /// Whether pages are offered to LZ4 at all (``EngineOptions/PageCompression``); false stores them as they are.
    let compressing: Bool
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

    /// A builder for pages of `pageSize` raw bytes. `expectedBytes` (the records' approximate raw size, when
    /// known) sizes ``output`` up front, so that appending the sealed pages does not reallocate and copy it.
    init(pageSize: Int, salt: UInt32, firstLSN: UInt64, syncedLSN: UInt64, mode: Mode = .commitGroup,
         expectedBytes: Int = 0, compressionLevel: Int = 0, compressing: Bool = true) {
        self.mode = mode
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
        if recordCount == 0 && mode == .commitGroup { baseSequence = sequence }
        var delta = sequence - baseSequence
        let size = RecordCodec.encodedSize(op, seqDelta: delta)
        if recordCount > 0 && (raw.count + size > pageSize || recordCount == Format.maxRecordsPerPage) {
            sealPage(commit: mode == .compacted)
            if mode == .commitGroup {
                baseSequence = sequence
                delta = 0
            }
        }
        let valueOffset = RecordCodec.encode(op, seqDelta: delta, into: &raw)
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

    private mutating func sealPage(commit: Bool) {
        let start = drainedBytes + output.count
        let rawBytes = raw.bytes
        compressed.removeAll(keepingCapacity: true)
        let compressedSize = !compressing ? nil
            : rawBytes.withUnsafeBytes { LZ4.compress($0, appendingTo: &compressed, level: compressionLevel) }
        let useCompressed = compressedSize.map {
            $0 < rawBytes.count - rawBytes.count / Format.compressionMinimumSavingDivisor
        } ?? false
        var header = PageHeader(
            type: Format.pageTypeData,
            flags: (useCompressed ? Format.pageFlagCompressed : 0) | (commit ? Format.pageFlagCommit : 0)
                | (pageCount == 0 || mode == .compacted ? Format.pageFlagGroupStart : 0),
            recordCount: UInt16(recordCount), salt: salt, rawLength: UInt32(rawBytes.count),
            storedLength: UInt32(useCompressed ? compressed.count : rawBytes.count),
            lsn: nextLSN, syncedLSN: syncedLSN, baseSequence: baseSequence, maskedCRC: 0)
        var headerWriter = ByteWriter(capacity: Format.pageHeaderLength)
        header.encode(into: &headerWriter)
        let payload = useCompressed ? compressed : rawBytes
        header.maskedCRC = headerWriter.bytes.withUnsafeBytes { h in
            payload.withUnsafeBytes { PageHeader.computeCRC(headerBytes: h, payload: $0) }
        }
        headerWriter.setU32(header.maskedCRC, at: Format.pageHeaderCRCOffset)
        output.append(contentsOf: headerWriter.bytes)
        output.append(contentsOf: payload)
        rawPayloadBytes += rawBytes.count
        storedPayloadBytes += payload.count
        if mode == .commitGroup { rawPages.append((start, rawBytes)) }
        for i in pending { placements[i].pageStart = start }
        pending.removeAll(keepingCapacity: true)
        nextLSN += 1
        pageCount += 1
        raw = ByteWriter(capacity: pageSize)
        recordCount = 0
    }
}
