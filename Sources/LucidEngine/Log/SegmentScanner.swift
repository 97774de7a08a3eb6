/// Reads a segment's pages in order, verifying each one completely (header, salt, checksum, decompression and
/// record structure). Used by recovery, ``Engine/verify()`` and salvage. Reads through a 1 MiB window, so a
/// scan costs one `pread` per MiB, and never allocates more than a page's checked length.
struct SegmentScanner {
    /// One step of a scan.
    enum Step {
        /// A fully verified page.
        case page(offset: UInt64, header: PageHeader, raw: PageBuffer)
        /// Clean end: the previous page ended exactly at the end of the scanned range.
        case end
        /// The bytes at `offset` are not a valid page (or are a torn one at the end).
        case invalid(offset: UInt64, reason: String)
    }

    let file: SegmentFile
    /// The scan stops here (the file length, or a sealed/visible length).
    let limit: UInt64
    private(set) var offset: UInt64
    private var window: [UInt8] = []
    private var windowStart: UInt64 = 0
    private static let windowSize = 1 << 20

    init(file: SegmentFile, limit: UInt64, from offset: UInt64 = UInt64(Format.segmentHeaderLength)) {
        self.file = file
        self.limit = limit
        self.offset = offset
    }

    /// Bytes `[at, at+count)`, which must lie below `limit`.
    private mutating func bytes(at position: UInt64, count: Int) throws -> [UInt8] {
        if position >= windowStart, position + UInt64(count) <= windowStart + UInt64(window.count) {
            let start = Int(position - windowStart)
            return Array(window[start..<(start + count)])
        }
        if count > Self.windowSize / 2 { return try file.handle.read(at: position, count: count) }
        let length = Int(min(UInt64(Self.windowSize), limit - position))
        window = try file.handle.read(at: position, count: length)
        windowStart = position
        guard window.count >= count else { return Array(window) }
        return Array(window[0..<count])
    }

    /// Verifies the page at `position` without moving the scan. Throws only I/O errors.
    mutating func page(at position: UInt64) throws -> Result<(PageHeader, PageBuffer), PageFailure> {
        guard position + UInt64(Format.pageHeaderLength) <= limit else { return .failure(.init("torn page header")) }
        let headerBytes = try bytes(at: position, count: Format.pageHeaderLength)
        guard headerBytes.count == Format.pageHeaderLength else { return .failure(.init("short read")) }
        let available = limit - position - UInt64(Format.pageHeaderLength)
        let header: PageHeader
        switch headerBytes.withUnsafeBytes({
            PageHeader.decode($0, expectedSalt: file.header.pageSalt, bytesAvailable: available)
        }) {
        case .success(let h): header = h
        case .failure(let why): return .failure(.init("invalid page header (\(why))"))
        }
        let stored = try bytes(at: position + UInt64(Format.pageHeaderLength), count: Int(header.storedLength))
        let raw: [UInt8]
        // The segment's dictionary, for a page of records compressed against it: an I/O error reading it is this
        // call's I/O error; a damaged dictionary makes the page undecodable, not damaged (`PageFailure.intact`).
        var dictionaryDamage: LucidError?
        let segment = file
        func dictionary() throws -> LZ4.PreparedDictionary {
            do {
                return try segment.recordDictionary()
            } catch let error as LucidError where error.code == .corruption {
                dictionaryDamage = error
                throw error
            } catch let error as LucidError {
                throw DictionaryReadError(error: error)
            }
        }
        do {
            raw = try headerBytes.withUnsafeBytes { h in
                try stored.withUnsafeBytes {
                    try PageCodec.verifyAndDecode(header: header, headerBytes: h, stored: $0, file: file.path, offset: position,
                                                  dictionary: dictionary)
                }
            }
        } catch let error as DictionaryReadError {
            throw error.error
        } catch let error as LucidError {
            if let damage = dictionaryDamage {
                return .failure(.init("the page's records need a damaged dictionary (\(damage.message))", intact: header))
            }
            return .failure(.init(error.message))
        }
        guard header.type == Format.pageTypeData else {
            return .success((header, PageBuffer(raw)))   // a safe-to-ignore page of a future type
        }
        let wellFormed = raw.withUnsafeBytes {
            RecordCodec.decodeAll($0, expectedCount: Int(header.recordCount), baseSequence: header.baseSequence) { _ in }
        }
        guard wellFormed else { return .failure(.init("malformed records")) }
        return .success((header, PageBuffer(raw)))
    }

    /// Why a page was rejected.
    struct PageFailure: Error {
        var reason: String
        /// Set when the page itself is intact (its header and checksum hold) but its records are compressed against
        /// a dictionary that is damaged or missing: proof that the writer wrote it, though it cannot be read.
        var intact: PageHeader?
        init(_ reason: String, intact: PageHeader? = nil) {
            self.reason = reason
            self.intact = intact
        }
    }

    /// An I/O error met reading a segment's dictionary, carried past the scanner's handling of damage.
    private struct DictionaryReadError: Error {
        var error: LucidError
    }

    /// The next page, the end, or the first invalid bytes. Throws only I/O errors.
    mutating func next() throws -> Step {
        if offset == limit { return .end }
        switch try page(at: offset) {
        case .success(let (header, raw)):
            let at = offset
            offset += UInt64(header.totalLength)
            return .page(offset: at, header: header, raw: raw)
        case .failure(let failure):
            return .invalid(offset: offset, reason: failure.reason)
        }
    }

    /// Moves the scan to `position` (after a failure, to resume at a page found by ``findValidPage(after:)``).
    mutating func seek(to position: UInt64) { offset = position }

    /// The first offset after `position` where a complete valid page of this segment starts, trying every
    /// byte offset (bounded by the segment's size). Used to tell a torn tail from damaged durable data, so an intact
    /// page whose records need a damaged dictionary counts too (returned with an empty payload; reading it with
    /// ``next()`` reports it invalid): a damaged dictionary must not make the acknowledged groups after it look
    /// like a torn tail.
    mutating func findValidPage(after position: UInt64) throws -> (offset: UInt64, header: PageHeader, raw: PageBuffer)? {
        var candidate = position + 1
        let magic = withUnsafeBytes(of: Format.pageMagic.littleEndian) { Array($0) }
        while candidate + UInt64(Format.pageHeaderLength) <= limit {
            let chunkLength = Int(min(UInt64(Self.windowSize), limit - candidate))
            let chunk = try file.handle.read(at: candidate, count: chunkLength)
            guard chunk.count >= 4 else { return nil }
            var i = 0
            while i + 4 <= chunk.count {
                if chunk[i] == magic[0] && chunk[i + 1] == magic[1] && chunk[i + 2] == magic[2] && chunk[i + 3] == magic[3] {
                    let at = candidate + UInt64(i)
                    switch try page(at: at) {
                    case .success(let (header, raw)): return (at, header, raw)
                    case .failure(let failure):
                        if let header = failure.intact { return (at, header, PageBuffer([])) }
                    }
                }
                i += 1
            }
            candidate += UInt64(max(1, chunk.count - 3))
        }
        return nil
    }
}
