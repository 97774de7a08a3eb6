import CLucidSupport

/// CRC32C (Castagnoli) with LevelDB's masking, used for every page, header and manifest.
enum CRC32C {
    /// The CRC32C of `bytes`, continuing from `crc` (0 to start).
    @inline(__always)
    static func checksum(_ bytes: UnsafeRawBufferPointer, extending crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return lucid_crc32c_extend(crc, base, bytes.count)
    }

    static func checksum(_ bytes: [UInt8], extending crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, extending: crc) }
    }

    private static let maskDelta: UInt32 = 0xa282_ead8

    /// Stored CRCs are masked: "it is problematic to compute the CRC of a string that contains embedded CRCs".
    @inline(__always) static func mask(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ maskDelta
    }

    @inline(__always) static func unmask(_ masked: UInt32) -> UInt32 {
        let rot = masked &- maskDelta
        return (rot >> 17) | (rot << 15)
    }

    /// True when the fast hardware instruction is in use.
    static var isHardwareAccelerated: Bool { lucid_crc32c_hardware() != 0 }
}
