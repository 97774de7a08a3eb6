/// The 48-byte header in front of every page (docs/FORMAT.md, "Page").
struct PageHeader: Sendable, Hashable {
    var type: UInt8
    var flags: UInt8
    var recordCount: UInt16
    var salt: UInt32
    var rawLength: UInt32
    var storedLength: UInt32
    var lsn: UInt64
    var syncedLSN: UInt64
    var baseSequence: UInt64
    var maskedCRC: UInt32

    /// The payload is one LZ4 block (flag bit 0).
    var isCompressed: Bool { flags & Format.pageFlagCompressed != 0 }
    /// The payload is records compressed one by one against the segment's dictionary (flag bit 3).
    var hasCompressedRecords: Bool { flags & Format.pageFlagRecordsCompressed != 0 }
    var isCommit: Bool { flags & Format.pageFlagCommit != 0 }
    var isGroupStart: Bool { flags & Format.pageFlagGroupStart != 0 }
    var totalLength: Int { Format.pageHeaderLength + Int(storedLength) }

    /// Writes the header (with `maskedCRC` as it is) into 48 bytes.
    func encode(into writer: inout ByteWriter) {
        writer.u32(Format.pageMagic)
        writer.u8(type)
        writer.u8(flags)
        writer.u16(recordCount)
        writer.u32(salt)
        writer.u32(rawLength)
        writer.u32(storedLength)
        writer.u64(lsn)
        writer.u64(syncedLSN)
        writer.u64(baseSequence)
        writer.u32(maskedCRC)
    }

    /// Why a header is rejected before its payload is even read.
    enum Rejection: Error, Equatable {
        case badMagic, unknownType(UInt8), unknownFlags(UInt8), noRecords
        case rawLengthTooLarge(UInt32), storedLengthOutOfBounds(UInt32), wrongSalt
    }

    /// Decodes and checks a header from exactly 48 bytes. Checks magic, type, flags, lengths against the
    /// format's caps and against `bytesAvailable` (what the file holds after the header), and the salt.
    /// Nothing here allocates.
    static func decode(_ bytes: UnsafeRawBufferPointer, expectedSalt: UInt32,
                       bytesAvailable: UInt64) -> Result<PageHeader, Rejection> {
        precondition(bytes.count >= Format.pageHeaderLength)
        var r = ByteReader(bytes)
        guard r.u32() == Format.pageMagic else { return .failure(.badMagic) }
        let header = PageHeader(
            type: r.u8()!, flags: r.u8()!, recordCount: r.u16()!, salt: r.u32()!,
            rawLength: r.u32()!, storedLength: r.u32()!, lsn: r.u64()!, syncedLSN: r.u64()!,
            baseSequence: r.u64()!, maskedCRC: r.u32()!)
        if header.type != Format.pageTypeData && header.type & Format.pageTypeSafeToIgnoreBit == 0 {
            return .failure(.unknownType(header.type))
        }
        guard header.flags & ~Format.pageKnownFlags == 0 else { return .failure(.unknownFlags(header.flags)) }
        guard header.recordCount > 0 || header.type != Format.pageTypeData else { return .failure(.noRecords) }
        guard header.rawLength > 0, Int(header.rawLength) <= Format.maxRawPageLength else {
            return .failure(.rawLengthTooLarge(header.rawLength))
        }
        guard !(header.isCompressed && header.hasCompressedRecords),
              !header.hasCompressedRecords || header.type == Format.pageTypeData else {
            return .failure(.unknownFlags(header.flags))
        }
        // A record entry is stored as it is when compressing does not make it smaller, so the payload is at most
        // the raw records plus each entry's two lengths.
        let storedCap = header.isCompressed ? LZ4.bound(Int(header.rawLength))
            : header.hasCompressedRecords ? Int(header.rawLength) + Int(header.recordCount) * Format.maxRecordEntryOverhead
            : Int(header.rawLength)
        guard header.storedLength > 0, Int(header.storedLength) <= storedCap,
              UInt64(header.storedLength) <= bytesAvailable,
              header.isCompressed || header.hasCompressedRecords || header.storedLength == header.rawLength else {
            return .failure(.storedLengthOutOfBounds(header.storedLength))
        }
        guard header.salt == expectedSalt else { return .failure(.wrongSalt) }
        return .success(header)
    }

    /// The checksum a page with this header and `payload` must carry (masked).
    static func computeCRC(headerBytes: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt32 {
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: headerBytes[0..<Format.pageHeaderCRCOffset]))
        return CRC32C.mask(CRC32C.checksum(payload, extending: crc))
    }
}
