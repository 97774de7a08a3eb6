@_spi(Fuzzing) extension FuzzingSupport {
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

    /// `v`'s four bytes, little-endian.
    static func littleEndian(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }

    /// The format's length caps, so harnesses can check allocations against them.
    public static let maxRawPageLength = Format.maxRawPageLength
    public static let segmentHeaderLength = Format.segmentHeaderLength
    public static let pageHeaderLength = Format.pageHeaderLength
}
