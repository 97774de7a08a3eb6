/// The fused read of the usual case: the key asked for is the entry at the cursor (keys read in the order they
/// were written) and its value is a well-formed scalar or string of the type asked for.
///
/// ``EntityRecordReader/find(_:)`` followed by the value's read parses each value twice (once to find where it
/// ends, once to read it), through two calls and an optional position; here one pass over the bytes checks the
/// key, reads the value and finds its end, and the cursor moves exactly as `find` moves it. Anything else (another
/// key there, a key that may have been walked already, another type, a null, malformed bytes) changes nothing and
/// answers nil; the caller then takes the general path, which gives the same result or error as before.
extension EntityRecordReader {
    /// `read(buffer, valuePosition)` on the value of the entry at the cursor when that entry is `key`'s and `key`
    /// cannot have been walked before; when `read` gives the value and the position just past it, the entry is
    /// noted as walked and the cursor moves past it. Else nil, and nothing changed.
    @inline(__always)
    mutating func cursorRead<T>(_ key: StaticString,
                                _ read: (UnsafeBufferPointer<UInt8>, Int) -> (value: T, end: Int)?) -> T? {
        guard next == walked else { return nil }
        let bit = key.withUTF8Buffer { Self.keyBit($0) }
        guard !mayHaveWalked(bit) else { return nil }
        let start = next
        let found: (value: T, end: Int)? = reader.bytes.withUnsafeBufferPointer { buffer in
            var p = start
            guard let keyLength = BinaryReader.quickVarint(buffer, &p), keyLength != 0,
                  keyLength - 1 <= UInt64(buffer.count - p) else { return nil }
            let valuePosition = p + Int(keyLength - 1)
            let same = key.withUTF8Buffer { name in
                name.count == valuePosition - p
                    && (name.isEmpty || bytesEqual(buffer.baseAddress! + p, name.baseAddress!, count: name.count))
            }
            guard same else { return nil }
            return read(buffer, valuePosition)
        }
        guard let found else { return nil }
        walkedKeys[bit.word] |= bit.mask
        next = found.end
        walked = found.end
        return found.value
    }
}

/// The value reads of the cursor path: each reads one well-formed value of its type at `position` and gives it
/// with the position just past it (where ``BinaryReader/quickValueEnd(_:at:depth:)`` puts the end), or nil
/// wherever the checked read would answer otherwise (another tag, truncated bytes, out of range).
extension BinaryReader {
    /// A `string` value.
    @inline(__always)
    static func cursorString(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: String, end: Int)? {
        guard position < buffer.count, buffer[position] == EntityCodec.Tag.string.rawValue else { return nil }
        var p = position + 1
        guard let n = quickVarint(buffer, &p), n <= UInt64(buffer.count - p) else { return nil }
        let end = p + Int(n)
        return (String(decoding: UnsafeBufferPointer(rebasing: buffer[p ..< end]), as: UTF8.self), end)
    }

    /// An `int`, or a `uint` up to `Int64.max`, as ``decodeInt64(at:_:)`` reads it.
    @inline(__always)
    static func cursorInt64(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Int64, end: Int)? {
        guard position < buffer.count else { return nil }
        var p = position + 1
        switch buffer[position] {
        case EntityCodec.Tag.int.rawValue:
            guard let raw = quickVarint(buffer, &p) else { return nil }
            return (Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1), p)
        case EntityCodec.Tag.uint.rawValue:
            guard let raw = quickVarint(buffer, &p), raw <= UInt64(Int64.max) else { return nil }
            return (Int64(raw), p)
        default: return nil
        }
    }

    /// An `Int` (``cursorInt64(_:_:)`` where it fits, as ``decodeInteger(_:at:_:)`` reads it).
    @inline(__always)
    static func cursorInt(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Int, end: Int)? {
        guard let (value, end) = cursorInt64(buffer, position), let int = Int(exactly: value) else { return nil }
        return (int, end)
    }

    /// A `double` (the only tag ``decodeDouble(at:_:)`` reads without converting).
    @inline(__always)
    static func cursorDouble(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Double, end: Int)? {
        guard position < buffer.count, buffer[position] == EntityCodec.Tag.double.rawValue,
              8 <= buffer.count - (position + 1) else { return nil }
        let raw = UnsafeRawPointer(buffer.baseAddress! + position + 1).loadUnaligned(as: UInt64.self)
        return (Double(bitPattern: UInt64(littleEndian: raw)), position + 9)
    }

    /// A null (nil) or what `read` reads, for `decodeIfPresent`.
    @inline(__always)
    static func cursorOptional<T>(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int,
                                  _ read: (UnsafeBufferPointer<UInt8>, Int) -> (value: T, end: Int)?) -> (value: T?, end: Int)? {
        guard position < buffer.count else { return nil }
        if buffer[position] == EntityCodec.Tag.null.rawValue { return (nil, position + 1) }
        guard let (value, end) = read(buffer, position) else { return nil }
        return (value, end)
    }

    /// A `true` or `false`.
    @inline(__always)
    static func cursorBool(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Bool, end: Int)? {
        guard position < buffer.count else { return nil }
        switch buffer[position] {
        case EntityCodec.Tag.trueValue.rawValue: return (true, position + 1)
        case EntityCodec.Tag.falseValue.rawValue: return (false, position + 1)
        default: return nil
        }
    }
}
