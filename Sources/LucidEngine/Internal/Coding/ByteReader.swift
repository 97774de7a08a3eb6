/// Reads little-endian integers, varints and byte ranges from untrusted bytes.
///
/// Every read is bounds-checked and returns `nil` past the end: a reader never traps and never allocates
/// a size it read from the input before checking that many bytes exist.
struct ByteReader {
    let base: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ base: UnsafeRawBufferPointer, offset: Int = 0) {
        self.base = base
        self.offset = offset
    }

    var remaining: Int { base.count - offset }
    var isAtEnd: Bool { offset >= base.count }

    @inline(__always) mutating func u8() -> UInt8? {
        guard offset < base.count else { return nil }
        defer { offset += 1 }
        return base[offset]
    }

    @inline(__always) mutating func u16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { offset += 2 }
        return base.loadUnaligned(fromByteOffset: offset, as: UInt16.self).littleEndian
    }

    @inline(__always) mutating func u32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { offset += 4 }
        return base.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
    }

    @inline(__always) mutating func u64() -> UInt64? {
        guard remaining >= 8 else { return nil }
        defer { offset += 8 }
        return base.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian
    }

    /// A LEB128 varint of at most 10 bytes; `nil` when truncated or overlong.
    @inline(__always) mutating func varint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var i = offset
        while i < base.count {
            let byte = base[i]
            i += 1
            if shift == 63 && byte > 1 { return nil }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { offset = i; return result }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    /// A varint that must be at most `limit` (as an Int).
    @inline(__always) mutating func length(max limit: Int) -> Int? {
        guard let v = varint(), v <= UInt64(limit) else { return nil }
        return Int(v)
    }

    /// Skips `count` bytes and returns where they started, or `nil` if there are not that many.
    @inline(__always) mutating func skip(_ count: Int) -> Int? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        return offset
    }

    /// Copies `count` bytes out.
    @inline(__always) mutating func bytes(_ count: Int) -> [UInt8]? {
        guard let start = skip(count) else { return nil }
        return Array(UnsafeRawBufferPointer(rebasing: base[start..<(start + count)]))
    }

    /// A view of `count` bytes without copying; valid as long as `base` is.
    @inline(__always) mutating func slice(_ count: Int) -> UnsafeRawBufferPointer? {
        guard let start = skip(count) else { return nil }
        return UnsafeRawBufferPointer(rebasing: base[start..<(start + count)])
    }
}
