/// The 64-byte header at the start of every segment file (docs/FORMAT.md, "Segment").
struct SegmentHeader: Sendable, Hashable {
    var segmentId: UInt64
    var salt: UInt64
    var firstLSN: UInt64
    var createdAtMillis: UInt64
    var kind: UInt32
    /// The format version the file was written with (new segments: ``Format/formatVersion``).
    var version: UInt32 = Format.formatVersion

    var pageSalt: UInt32 { UInt32(truncatingIfNeeded: salt) }

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: Format.segmentHeaderLength)
        w.raw(Format.segmentMagic)
        w.u32(version)
        w.u32(UInt32(Format.segmentHeaderLength))
        w.u64(segmentId)
        w.u64(salt)
        w.u64(firstLSN)
        w.u64(createdAtMillis)
        w.u32(kind)
        w.u64(0)
        w.u32(0)
        let crc = w.bytes.withUnsafeBytes {
            CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<Format.segmentHeaderCRCOffset])))
        }
        w.setU32(crc, at: Format.segmentHeaderCRCOffset)
        return w.bytes
    }

    /// Decodes and checks a header; `file` names the segment in errors.
    static func decode(_ bytes: [UInt8], file: String) throws -> SegmentHeader {
        guard bytes.count >= Format.segmentHeaderLength else {
            throw LucidError.corruption("segment header is truncated (\(bytes.count) bytes)", file: file, offset: 0)
        }
        return try bytes.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            guard r.bytes(8) == Format.segmentMagic else {
                throw LucidError.corruption("not a segment: bad magic", file: file, offset: 0)
            }
            let version = r.u32()!
            let headerLength = r.u32()!
            let stored = raw.loadUnaligned(fromByteOffset: Format.segmentHeaderCRCOffset, as: UInt32.self).littleEndian
            let actual = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<Format.segmentHeaderCRCOffset])))
            guard stored == actual else {
                throw LucidError.corruption("segment header checksum mismatch", file: file, offset: 0)
            }
            // After the checksum (every version keeps the header's framing: docs/FORMAT.md), so that damaged version
            // bytes read as the corruption they are, not as a newer format.
            if version > Format.formatVersion {
                throw LucidError(code: .unsupportedFormatVersion,
                                 message: "segment format version \(version) is newer than \(Format.formatVersion)",
                                 file: file, offset: 8)
            }
            guard version >= 1, headerLength == UInt32(Format.segmentHeaderLength) else {
                throw LucidError.corruption("segment header has version \(version), length \(headerLength)", file: file, offset: 8)
            }
            let header = SegmentHeader(segmentId: r.u64()!, salt: r.u64()!, firstLSN: r.u64()!,
                                       createdAtMillis: r.u64()!, kind: r.u32()!, version: version)
            guard header.kind == Format.segmentKindLog || header.kind == Format.segmentKindCompacted else {
                throw LucidError.corruption("unknown segment kind \(header.kind)", file: file, offset: 48)
            }
            return header
        }
    }
}
