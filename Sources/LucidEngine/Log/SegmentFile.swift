import Synchronization

/// One open segment: its handle, identity and salt. Immutable; shared by the writer, readers and snapshots.
/// The handle is closed when the last reference goes (so a snapshot keeps its files readable).
final class SegmentFile: Sendable {
    let id: UInt64
    let path: String
    let header: SegmentHeader
    let handle: any FileHandle
    /// The file's bytes, mapped by ``map(capacity:readingInPlace:)``; none: reads use `pread`.
    let mapping = MappingSlot()
    /// How far reads through the mapping may go: the sealed length, or the active segment's published end
    /// (stored before the records are published, so a location a reader holds never lies past it).
    let readableEnd = Atomic<UInt64>(0)
    /// The segment's record dictionary once known: written by the writer as the segment's first two pages, or read
    /// from there by ``recordDictionary()``. Set once.
    let dictionary = AtomicLazyReference<LZ4.PreparedDictionary>()
    /// Why the segment has no usable dictionary, once ``recordDictionary()`` found out (its first page is not a
    /// dictionary, or neither copy checks out): kept so that a scan of a damaged segment does not read the
    /// dictionary again for every page. Those bytes never change below the published end; a dictionary the
    /// writer installs later (a first group written after recovery cut a torn one) still wins.
    private let dictionaryFailure = AtomicLazyReference<DictionaryFailure>()

    private final class DictionaryFailure: Sendable {
        let error: LucidError
        init(_ error: LucidError) { self.error = error }
    }

    init(id: UInt64, path: String, header: SegmentHeader, handle: any FileHandle) {
        self.id = id
        self.path = path
        self.header = header
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// The dictionary the segment's record-compressed pages were written against: its first page
    /// (``Format/pageTypeDictionary``), or the copy right after it when the first does not check out; read the first
    /// time it is needed, then kept. - Throws: ``LucidError/Code/corruption`` at offset 64 when neither copy is a
    /// valid dictionary page, I/O errors.
    func recordDictionary() throws -> LZ4.PreparedDictionary {
        if let known = dictionary.load() { return known }
        if let failure = dictionaryFailure.load() { throw failure.error }
        do {
            return dictionary.storeIfNil(try readDictionary())
        } catch let error as LucidError where error.code == .corruption {
            throw dictionaryFailure.storeIfNil(DictionaryFailure(error)).error
        }
    }

    /// Reads the dictionary from the segment's first two pages (see ``recordDictionary()``).
    private func readDictionary() throws -> LZ4.PreparedDictionary {
        let first = UInt64(Format.segmentHeaderLength)
        let span = Format.pageHeaderLength + Format.maxDictionaryLength
        // A valid first page of another type: no dictionary, without reading further.
        let head = try handle.read(at: first, count: Format.pageHeaderLength)
        if head.count == Format.pageHeaderLength, case .success(let header) = head.withUnsafeBytes({
            PageHeader.decode($0, expectedSalt: self.header.pageSalt, bytesAvailable: UInt64(Format.maxRawPageLength))
        }), header.type != Format.pageTypeDictionary {
            throw LucidError.corruption("records are compressed against a dictionary, but the segment has none",
                                        file: path, offset: first)
        }
        let bytes = try handle.read(at: first, count: 2 * span)
        // The first copy where it must be; else the second, after a first whose header is intact, or found by its
        // magic when that header is damaged too.
        var candidates = [0]
        if let length = Self.dictionaryPageLength(bytes, at: 0, salt: header.pageSalt, checkingPayload: false) {
            candidates.append(length)
        } else {
            let magic = withUnsafeBytes(of: Format.pageMagic.littleEndian) { Array($0) }
            var i = Format.pageHeaderLength + 1
            while i + Format.pageHeaderLength <= bytes.count && i <= span {
                if bytes[i] == magic[0] && Array(bytes[i..<(i + 4)]) == magic { candidates.append(i) }
                i += 1
            }
        }
        for at in candidates {
            if let length = Self.dictionaryPageLength(bytes, at: at, salt: header.pageSalt, checkingPayload: true) {
                return LZ4.PreparedDictionary(Array(bytes[(at + Format.pageHeaderLength)..<(at + length)]))
            }
        }
        throw LucidError.corruption("records are compressed against a dictionary, but neither of the segment's first "
                                    + "two pages is a valid one", file: path, offset: first)
    }

    /// The length (header and payload) of the valid dictionary page at `at` in `bytes`, or nil. Checks the
    /// header as every page's, the type, and, when `checkingPayload`, the whole page's checksum.
    private static func dictionaryPageLength(_ bytes: [UInt8], at: Int, salt: UInt32, checkingPayload: Bool) -> Int? {
        guard at + Format.pageHeaderLength <= bytes.count else { return nil }
        return bytes.withUnsafeBytes { raw -> Int? in
            let headerBytes = UnsafeRawBufferPointer(rebasing: raw[at..<(at + Format.pageHeaderLength)])
            guard case .success(let header) = PageHeader.decode(
                headerBytes, expectedSalt: salt, bytesAvailable: UInt64(bytes.count - at - Format.pageHeaderLength)),
                header.type == Format.pageTypeDictionary, header.recordCount == 0, !header.isCompressed,
                !header.hasCompressedRecords,
                Int(header.storedLength) <= Format.maxDictionaryLength else { return nil }
            let length = Format.pageHeaderLength + Int(header.storedLength)
            if checkingPayload {
                let payload = UnsafeRawBufferPointer(rebasing: raw[(at + Format.pageHeaderLength)..<(at + length)])
                guard PageHeader.computeCRC(headerBytes: headerBytes, payload: payload) == header.maskedCRC else { return nil }
            }
            return length
        }
    }

    /// Makes `prepared` the segment's dictionary (the writer, as it writes it as the first page). Keeps the one
    /// already known, which the writer never changes for a segment it wrote to.
    @discardableResult
    func installDictionary(_ prepared: LZ4.PreparedDictionary) -> LZ4.PreparedDictionary {
        dictionary.storeIfNil(prepared)
    }

    /// Reads and fully verifies the page at `offset` (which must end by `fileEnd`), returning its raw payload.
    /// Throws ``LucidError/Code/corruption`` naming this file and the offset for any failed check, so bytes that
    /// fail their checksum are never returned. From a mapping, a page an earlier read checked is not checked again
    /// (its header is): see ``mappedPage(at:fileEnd:limit:in:_:)``.
    ///
    /// One `pread` covers the header and `expectedStoredLength` payload bytes (the writer's page size is a good
    /// guess: a payload is stored compressed only when that saves 1/8); a larger page costs a second one.
    func readPage(at offset: UInt64, fileEnd: UInt64, expectedStoredLength: Int = 0) throws -> (PageHeader, PageBuffer) {
        try withStoredPage(at: offset, fileEnd: fileEnd, expectedStoredLength: expectedStoredLength) { header, headerBytes, stored, checked in
            let raw = try PageCodec.verifyAndDecode(header: header, headerBytes: headerBytes, stored: stored,
                                                    checked: checked, file: path, offset: offset,
                                                    dictionary: recordDictionary)
            return (header, PageBuffer(raw))
        }
    }

    /// Reads the page at `offset` (which must end by `fileEnd`) as ``readPage(at:fileEnd:expectedStoredLength:)``
    /// does, checking its whole stored payload, but decodes it only as far as `range` ends and returns those
    /// bytes: what a point read that will not cache the page needs. - Throws: as `readPage`, and
    /// ``LucidError/Code/corruption`` when `range` lies outside the page.
    func readValue(at offset: UInt64, range: Range<Int>, fileEnd: UInt64,
                   expectedStoredLength: Int = 0) throws -> (PageHeader, [UInt8]) {
        try withStoredPage(at: offset, fileEnd: fileEnd, expectedStoredLength: expectedStoredLength) { header, headerBytes, stored, checked in
            let value = try PageCodec.verifyAndDecode(header: header, headerBytes: headerBytes, stored: stored,
                                                      checked: checked, range: range, file: path, offset: offset,
                                                      dictionary: recordDictionary)
            return (header, value)
        }
    }

    /// `decode` applied to the header and stored payload of the page at `offset`: from the mapping when the page
    /// lies in it, else read with `pread` (see ``readPage(at:fileEnd:expectedStoredLength:)``). The header is
    /// checked here; `decode` verifies the payload. - Throws: ``LucidError/Code/corruption`` for a bad header or
    /// a page past `fileEnd`, and what `decode` throws.
    private func withStoredPage<R>(at offset: UInt64, fileEnd: UInt64, expectedStoredLength: Int,
                                   _ decode: StoredPageDecoder<R>) throws -> R {
        let fromMapping = try mapping.withCurrent { mapped -> R? in
            guard let mapped else { return nil }
            let limit = min(UInt64(mapped.bytes.count), readableEnd.load(ordering: .acquiring))
            return try mappedPage(at: offset, fileEnd: fileEnd, limit: limit, in: mapped, decode)
        }
        if let fromMapping { return fromMapping }
        let headerLength = Format.pageHeaderLength
        guard offset >= UInt64(Format.segmentHeaderLength), fileEnd >= offset + UInt64(headerLength) else {
            throw LucidError.corruption("page offset out of range", file: path, offset: offset)
        }
        let available = fileEnd - offset - UInt64(headerLength)
        let first = try handle.read(at: offset, count: headerLength + Int(min(UInt64(max(expectedStoredLength, 0)), available)))
        guard first.count >= headerLength else {
            throw LucidError.corruption("page header truncated", file: path, offset: offset)
        }
        let salt = self.header.pageSalt
        let header: PageHeader
        switch first.withUnsafeBytes({
            PageHeader.decode(UnsafeRawBufferPointer(rebasing: $0[0..<headerLength]), expectedSalt: salt,
                              bytesAvailable: available)
        }) {
        case .success(let h): header = h
        case .failure(let why): throw LucidError.corruption("invalid page header: \(why)", file: path, offset: offset)
        }
        let payloadEnd = headerLength + Int(header.storedLength)
        // The rest of a payload longer than the read-ahead: read whole, in a second pread.
        let inFirst = first.count >= payloadEnd
        let rest = inFirst ? [] : try handle.read(at: offset + UInt64(headerLength), count: Int(header.storedLength))
        return try first.withUnsafeBytes { b in
            try rest.withUnsafeBytes { r in
                try decode(header, UnsafeRawBufferPointer(rebasing: b[0..<headerLength]),
                           inFirst ? UnsafeRawBufferPointer(rebasing: b[headerLength..<payloadEnd]) : r, false)
            }
        }
    }
}

/// What a page read does with a page whose header checked out: given the header, its bytes, the stored payload
/// (valid only during the call) and whether a read from the same mapping verified that payload's checksum already
/// (``CheckedPages``), it verifies and decodes the payload (``PageCodec``).
typealias StoredPageDecoder<R> = (PageHeader, UnsafeRawBufferPointer, UnsafeRawBufferPointer, Bool) throws -> R

/// Checksum verification and decompression of a page payload, shared by every reader of pages.
enum PageCodec {
    /// Checks that `stored` is the whole stored payload the header claims and, unless `checked` (a read from the
    /// same mapping verified it: ``CheckedPages``), that the page's checksum (header and payload) matches.
    /// - Throws: ``LucidError/Code/corruption`` at `file`, `offset`.
    static func verify(header: PageHeader, headerBytes: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
                       checked: Bool = false, file: String, offset: UInt64) throws {
        guard stored.count == Int(header.storedLength) else {
            throw LucidError.corruption("page payload truncated", file: file, offset: offset)
        }
        guard checked || PageHeader.computeCRC(headerBytes: headerBytes, payload: stored) == header.maskedCRC else {
            throw LucidError.corruption("page checksum mismatch", file: file, offset: offset)
        }
    }

    /// The raw payload of a page whose header and stored payload are `headerBytes` and `stored`, after checking
    /// the length and the checksum and decompressing. - Throws: ``LucidError/Code/corruption`` at `file`, `offset`.
    /// `dictionary` gives the segment's record dictionary, asked for only by a page whose records are compressed
    /// against it (``RecordPageCodec``).
    static func verifyAndDecode(header: PageHeader, headerBytes: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
                                checked: Bool = false, file: String, offset: UInt64,
                                dictionary: () throws -> LZ4.PreparedDictionary) throws -> [UInt8] {
        try verify(header: header, headerBytes: headerBytes, stored: stored, checked: checked, file: file, offset: offset)
        if header.hasCompressedRecords {
            return try RecordPageCodec.decode(stored, header: header, dictionary: try dictionary(), file: file, offset: offset)
        }
        if !header.isCompressed { return Array(stored) }
        guard let raw = LZ4.decompress(stored, rawLength: Int(header.rawLength)) else {
            throw LucidError.corruption("page payload does not decompress to \(header.rawLength) bytes", file: file, offset: offset)
        }
        return raw
    }

    /// The bytes `range` of the raw payload of a page whose header and stored payload are `headerBytes` and
    /// `stored`, copied out, after checking the length and the checksum of the whole stored payload; a compressed
    /// payload is decoded only up to `range.upperBound` (``LZ4/withDecompressedPrefix(_:rawLength:prefixLength:_:)``).
    /// Does not prove that the rest of the payload decodes: a full read or `verify` does.
    /// - Throws: ``LucidError/Code/corruption`` at `file`, `offset` when a check fails or `range` lies outside the
    ///   payload.
    static func verifyAndDecode(header: PageHeader, headerBytes: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
                                checked: Bool = false, range: Range<Int>, file: String, offset: UInt64,
                                dictionary: () throws -> LZ4.PreparedDictionary) throws -> [UInt8] {
        try verify(header: header, headerBytes: headerBytes, stored: stored, checked: checked, file: file, offset: offset)
        let rawLength = header.isCompressed || header.hasCompressedRecords ? Int(header.rawLength) : stored.count
        guard range.lowerBound >= 0, range.upperBound <= rawLength else {
            throw LucidError.corruption("value range lies outside its page", file: file, offset: offset)
        }
        if range.isEmpty { return [] }
        if header.hasCompressedRecords {
            return try RecordPageCodec.bytes(range, of: stored, header: header, dictionary: try dictionary(),
                                             file: file, offset: offset)
        }
        if !header.isCompressed { return Array(stored[range]) }
        guard let value = LZ4.withDecompressedPrefix(stored, rawLength: rawLength, prefixLength: range.upperBound,
                                                     { Array($0[range]) }) else {
            throw LucidError.corruption("page payload does not decompress to \(header.rawLength) bytes", file: file,
                                        offset: offset)
        }
        return value
    }
}
