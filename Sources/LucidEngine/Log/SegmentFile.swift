import Synchronization

/// One open segment: its handle, identity and salt. Immutable; shared by the writer, readers and snapshots.
/// The handle is closed when the last reference goes (so a snapshot keeps its files readable).
final class SegmentFile: Sendable {
    let id: UInt64
    let path: String
    let header: SegmentHeader
    let handle: any FileHandle
    /// The file's bytes, mapped by ``map(capacity:)``; nil reads with `pread`.
    let mapping = Mutex<FileMapping?>(nil)
    /// How far reads through the mapping may go: the sealed length, or the active segment's published end
    /// (stored before the records are published, so a location a reader holds never lies past it).
    let readableEnd = Atomic<UInt64>(0)

    init(id: UInt64, path: String, header: SegmentHeader, handle: any FileHandle) {
        self.id = id
        self.path = path
        self.header = header
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// Reads and fully verifies the page at `offset` (which must end by `fileEnd`), returning its raw payload.
    /// Throws ``LucidError/Code/corruption`` naming this file and the offset for any failed check, so bytes that
    /// fail their checksum are never returned.
    ///
    /// One `pread` covers the header and `expectedStoredLength` payload bytes (the writer's page size is a good
    /// guess: a payload is stored compressed only when that saves 1/8); a larger page costs a second one.
    func readPage(at offset: UInt64, fileEnd: UInt64, expectedStoredLength: Int = 0) throws -> (PageHeader, PageBuffer) {
        if let mapped = mapping.withLock({ $0 }) {
            let limit = min(UInt64(mapped.bytes.count), readableEnd.load(ordering: .acquiring))
            if let page = try readPage(at: offset, fileEnd: fileEnd, limit: limit, in: mapped.bytes) { return page }
        }
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
        let raw = try first.withUnsafeBytes { b in
            try rest.withUnsafeBytes { r in
                try PageCodec.verifyAndDecode(header: header, headerBytes: UnsafeRawBufferPointer(rebasing: b[0..<headerLength]),
                                              stored: inFirst ? UnsafeRawBufferPointer(rebasing: b[headerLength..<payloadEnd]) : r,
                                              file: path, offset: offset)
            }
        }
        return (header, PageBuffer(raw))
    }
}

/// Checksum verification and decompression of a page payload, shared by every reader of pages.
enum PageCodec {
    /// The raw payload of a page whose header and stored payload are `headerBytes` and `stored`, after checking
    /// the length and the checksum and decompressing. - Throws: ``LucidError/Code/corruption`` at `file`, `offset`.
    static func verifyAndDecode(header: PageHeader, headerBytes: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
                                file: String, offset: UInt64) throws -> [UInt8] {
        guard stored.count == Int(header.storedLength) else {
            throw LucidError.corruption("page payload truncated", file: file, offset: offset)
        }
        guard PageHeader.computeCRC(headerBytes: headerBytes, payload: stored) == header.maskedCRC else {
            throw LucidError.corruption("page checksum mismatch", file: file, offset: offset)
        }
        if !header.isCompressed { return Array(stored) }
        guard let raw = LZ4.decompress(stored, rawLength: Int(header.rawLength)) else {
            throw LucidError.corruption("page payload does not decompress to \(header.rawLength) bytes", file: file, offset: offset)
        }
        return raw
    }
}
