/// Appends little-endian integers, LEB128 varints and byte strings to a growing buffer.
/// All of the engine's encoding goes through here (leveldb `util/coding`).
struct ByteWriter {
    var bytes: [UInt8]

    init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    @inline(__always) mutating func u8(_ v: UInt8) { bytes.append(v) }

    @inline(__always) mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    @inline(__always) mutating func u32(_ v: UInt32) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    @inline(__always) mutating func varint(_ v: Int) { varint(UInt64(v)) }

    /// The bytes of `b`, read in place: `append(contentsOf:)` takes its argument owned, so passing the array
    /// itself would retain and release it around each call.
    @inline(__always) mutating func raw(_ b: [UInt8]) { b.withUnsafeBytes { bytes.append(contentsOf: $0) } }

    @inline(__always) mutating func raw(_ b: UnsafeRawBufferPointer) { bytes.append(contentsOf: b) }

    /// The UTF-8 bytes of a string, without an intermediate array.
    @inline(__always) mutating func raw(_ utf8: String.UTF8View) {
        // Native strings (small ones included) hand out their bytes at once; others go byte by byte.
        if utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: utf8)
        }
    }

    /// A varint length followed by the bytes.
    @inline(__always) mutating func lengthPrefixed(_ b: [UInt8]) {
        varint(b.count)
        raw(b)
    }

    /// Overwrites a little-endian u32 at `offset` (for checksums written after the body).
    mutating func setU32(_ v: UInt32, at offset: Int) {
        withUnsafeBytes(of: v.littleEndian) { src in
            for i in 0..<4 { bytes[offset + i] = src[i] }
        }
    }

    /// Number of bytes `varint(v)` takes.
    @inline(__always) static func varintSize(_ v: UInt64) -> Int {
        var n = 1
        var v = v
        while v >= 0x80 { v >>= 7; n += 1 }
        return n
    }
}
