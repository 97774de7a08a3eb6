import Synchronization

/// One open segment: its handle, identity and salt. Immutable; shared by the writer, readers and snapshots.
/// The handle is closed when the last reference goes (so a snapshot keeps its files readable).
final class SegmentFile: Sendable {
    let id: UInt64
    let path: String
    let header: SegmentHeader
    let handle: any FileHandle

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
    func readPage(at offset: UInt64, fileEnd: UInt64) throws -> (PageHeader, PageBuffer) {
        guard offset >= UInt64(Format.segmentHeaderLength),
              fileEnd >= offset + UInt64(Format.pageHeaderLength) else {
            throw LucidError.corruption("page offset out of range", file: path, offset: offset)
        }
        let headerBytes = try handle.read(at: offset, count: Format.pageHeaderLength)
        guard headerBytes.count == Format.pageHeaderLength else {
            throw LucidError.corruption("page header truncated", file: path, offset: offset)
        }
        let available = fileEnd - offset - UInt64(Format.pageHeaderLength)
        let salt = self.header.pageSalt
        let header: PageHeader
        switch headerBytes.withUnsafeBytes({ PageHeader.decode($0, expectedSalt: salt, bytesAvailable: available) }) {
        case .success(let h): header = h
        case .failure(let why): throw LucidError.corruption("invalid page header: \(why)", file: path, offset: offset)
        }
        let stored = try handle.read(at: offset + UInt64(Format.pageHeaderLength), count: Int(header.storedLength))
        let raw = try PageCodec.verifyAndDecode(header: header, headerBytes: headerBytes, stored: stored,
                                                file: path, offset: offset)
        return (header, PageBuffer(raw))
    }
}

/// Checksum verification and decompression of a page payload, shared by every reader of pages.
enum PageCodec {
    static func verifyAndDecode(header: PageHeader, headerBytes: [UInt8], stored: [UInt8],
                                file: String, offset: UInt64) throws -> [UInt8] {
        guard stored.count == Int(header.storedLength) else {
            throw LucidError.corruption("page payload truncated", file: file, offset: offset)
        }
        let crc = headerBytes.withUnsafeBytes { h in stored.withUnsafeBytes { PageHeader.computeCRC(headerBytes: h, payload: $0) } }
        guard crc == header.maskedCRC else {
            throw LucidError.corruption("page checksum mismatch", file: file, offset: offset)
        }
        if !header.isCompressed { return stored }
        guard let raw = stored.withUnsafeBytes({ LZ4.decompress($0, rawLength: Int(header.rawLength)) }) else {
            throw LucidError.corruption("page payload does not decompress to \(header.rawLength) bytes", file: file, offset: offset)
        }
        return raw
    }
}
