/// Success-only fast paths of the reads the disk store makes most (scalars, strings): each reads the value in
/// place and gives nil wherever the checked read would throw; the caller then runs the checked read, which
/// throws its exact error. So the fast paths change no result and no error, only the cost of the usual case.
extension BinaryReader {
    /// The varint at `p` in `buffer`, advancing `p` past it, or nil where ``varint(at:_:)`` would throw (truncated
    /// or longer than 64 bits' worth of groups). Same arithmetic, so the same value.
    @inline(__always)
    static func quickVarint(_ buffer: UnsafeBufferPointer<UInt8>, _ p: inout Int) -> UInt64? {
        var q = p
        guard q < buffer.count else { return nil }
        var byte = buffer[q]
        q += 1
        if byte < 0x80 {
            p = q
            return UInt64(byte)
        }
        var result = UInt64(byte & 0x7F)
        var shift: UInt64 = 7
        while true {
            guard q < buffer.count, shift < 64 else { return nil }
            byte = buffer[q]
            q += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                p = q
                return result
            }
            shift += 7
        }
    }

    /// ``varint(at:_:)`` with its usual case (a well-formed varint) inline: the same value, or its error.
    @inline(__always)
    func quickOrCheckedVarint(at position: inout Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> UInt64 {
        let value: UInt64? = bytes.withUnsafeBufferPointer { Self.quickVarint($0, &position) }
        if let value { return value }
        return try varint(at: &position, codingPath())
    }

    /// The position just past the value at `position` (at `depth`), as ``skip(at:depth:_:)`` gives it: scalars,
    /// strings and keyed containers of those (identifiers) inline, other containers and every error through
    /// `skip`.
    @inline(__always)
    func valueEnd(at position: Int, depth: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Int {
        let end: Int? = bytes.withUnsafeBufferPointer { Self.quickValueEnd($0, at: position, depth: depth) }
        if let end { return end }
        return try skip(at: position, depth: depth, codingPath())
    }

    /// ``valueEnd(at:depth:_:)``'s inline part: the end of a scalar, string or keyed container of those at
    /// `position` in `buffer`, or nil for any other value or where `skip` would throw.
    @inline(__always)
    static func quickValueEnd(_ buffer: UnsafeBufferPointer<UInt8>, at position: Int, depth: Int) -> Int? {
        guard depth < EntityCodec.maxDepth else { return nil }   // the inline path goes one level down
        if let end = scalarEnd(buffer, at: position) { return end }
        guard position < buffer.count, buffer[position] == EntityCodec.Tag.keyed.rawValue else { return nil }
        var p = position + 1
        while true {
            guard let keyLength = quickVarint(buffer, &p) else { return nil }
            if keyLength == 0 { return p }
            guard keyLength - 1 <= UInt64(buffer.count - p) else { return nil }
            p += Int(keyLength - 1)
            guard let end = scalarEnd(buffer, at: p) else { return nil }
            p = end
        }
    }

    /// The position just past the scalar or string at `position`, or nil for a container or where
    /// ``skip(at:depth:_:)`` would throw.
    @inline(__always)
    static func scalarEnd(_ buffer: UnsafeBufferPointer<UInt8>, at position: Int) -> Int? {
        guard position < buffer.count else { return nil }
        var p = position + 1
        switch buffer[position] {
        case EntityCodec.Tag.null.rawValue, EntityCodec.Tag.falseValue.rawValue,
             EntityCodec.Tag.trueValue.rawValue, EntityCodec.Tag.empty.rawValue:
            return p
        case EntityCodec.Tag.int.rawValue, EntityCodec.Tag.uint.rawValue:
            return quickVarint(buffer, &p) == nil ? nil : p
        case EntityCodec.Tag.double.rawValue: return 8 <= buffer.count - p ? p + 8 : nil
        case EntityCodec.Tag.float.rawValue: return 4 <= buffer.count - p ? p + 4 : nil
        case EntityCodec.Tag.string.rawValue:
            guard let n = quickVarint(buffer, &p), n <= UInt64(buffer.count - p) else { return nil }
            return p + Int(n)
        default: return nil
        }
    }

    /// The string at `position`, or nil where ``decodeString(at:_:)``'s checked path would throw. Invalid UTF-8
    /// is repaired (replacement characters), as there.
    @inline(__always)
    func quickString(at position: Int) -> String? {
        bytes.withUnsafeBufferPointer { Self.readString($0, position)?.value }
    }

    /// The `Int64` at `position` (an `int`, or a `uint` up to `Int64.max`), or nil where ``decodeInt64(at:_:)``'s
    /// checked path would throw.
    @inline(__always)
    func quickInt64(at position: Int) -> Int64? {
        bytes.withUnsafeBufferPointer { Self.readInt64($0, position)?.value }
    }

    /// The `double` at `position`, or nil for any other value or where ``decodeDouble(at:_:)`` would throw.
    @inline(__always)
    func quickDouble(at position: Int) -> Double? {
        bytes.withUnsafeBufferPointer { Self.readDouble($0, position)?.value }
    }

    // MARK: Values with their end

    // Each reads one well-formed value of its type at `position` in `buffer` and gives it with the position just
    // past it (where ``quickValueEnd(_:at:depth:)`` puts the end), or nil wherever the checked read would answer
    // otherwise (another tag, truncated bytes, out of range).

    /// A `string` value.
    @inline(__always)
    static func readString(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: String, end: Int)? {
        guard position < buffer.count, buffer[position] == EntityCodec.Tag.string.rawValue else { return nil }
        var p = position + 1
        guard let n = quickVarint(buffer, &p), n <= UInt64(buffer.count - p) else { return nil }
        let end = p + Int(n)
        return (String(decoding: UnsafeBufferPointer(rebasing: buffer[p ..< end]), as: UTF8.self), end)
    }

    /// An `int`, or a `uint` up to `Int64.max`, as ``decodeInt64(at:_:)`` reads it.
    @inline(__always)
    static func readInt64(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Int64, end: Int)? {
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

    /// An `Int` (``readInt64(_:_:)`` where it fits, as ``decodeInteger(_:at:_:)`` reads it).
    @inline(__always)
    static func readInt(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Int, end: Int)? {
        guard let (value, end) = readInt64(buffer, position), let int = Int(exactly: value) else { return nil }
        return (int, end)
    }

    /// A `double` (the only tag ``decodeDouble(at:_:)`` reads without converting).
    @inline(__always)
    static func readDouble(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Double, end: Int)? {
        guard position < buffer.count, buffer[position] == EntityCodec.Tag.double.rawValue,
              8 <= buffer.count - (position + 1) else { return nil }
        let raw = UnsafeRawPointer(buffer.baseAddress! + position + 1).loadUnaligned(as: UInt64.self)
        return (Double(bitPattern: UInt64(littleEndian: raw)), position + 9)
    }

    /// An identifier with an `Int` remote value (`{local?, remote?}`, keys in any order), as
    /// ``identifierParts(at:depth:_:)`` and the remote value's `Int` read give it: the first `local` entry's
    /// string (nil when null) and the first `remote` entry's `Int` (nil when null). Nil for anything else: a
    /// value of another type, another entry that is not a scalar or string, neither part present, bytes the
    /// checked reads would reject.
    @inline(__always)
    static func readIntIdentifier(_ buffer: UnsafeBufferPointer<UInt8>,
                                  _ position: Int) -> (value: (local: String?, remote: Int?), end: Int)? {
        guard position < buffer.count, buffer[position] == EntityCodec.Tag.keyed.rawValue else { return nil }
        var p = position + 1
        var local: String?
        var remote: Int?
        var sawLocal = false
        var sawRemote = false
        while true {
            guard let keyLength = quickVarint(buffer, &p) else { return nil }
            if keyLength == 0 { break }
            guard keyLength - 1 <= UInt64(buffer.count - p) else { return nil }
            let key = p
            p += Int(keyLength - 1)
            guard p < buffer.count else { return nil }
            let isNull = buffer[p] == EntityCodec.Tag.null.rawValue
            if !sawLocal && isKey(buffer, key..<p, "local") {
                sawLocal = true
                if isNull { p += 1; continue }
                guard let (value, end) = readString(buffer, p) else { return nil }
                (local, p) = (value, end)
            } else if !sawRemote && isKey(buffer, key..<p, "remote") {
                sawRemote = true
                if isNull { p += 1; continue }
                guard let (value, end) = readInt(buffer, p) else { return nil }
                (remote, p) = (value, end)
            } else {
                guard let end = scalarEnd(buffer, at: p) else { return nil }
                p = end
            }
        }
        guard local != nil || remote != nil else { return nil }
        return ((local, remote), p)
    }

    /// Whether the bytes at `range` of `buffer` (in bounds) are `name`'s UTF-8.
    @inline(__always)
    static func isKey(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ name: StaticString) -> Bool {
        name.withUTF8Buffer { name in
            name.count == range.count && (name.isEmpty || bytesEqual(buffer.baseAddress! + range.lowerBound,
                                                                     name.baseAddress!, count: name.count))
        }
    }

    /// A `true` or `false`.
    @inline(__always)
    static func readBool(_ buffer: UnsafeBufferPointer<UInt8>, _ position: Int) -> (value: Bool, end: Int)? {
        guard position < buffer.count else { return nil }
        switch buffer[position] {
        case EntityCodec.Tag.trueValue.rawValue: return (true, position + 1)
        case EntityCodec.Tag.falseValue.rawValue: return (false, position + 1)
        default: return nil
        }
    }

    /// Whether the value at `position` is null, or nil where ``isNil(at:_:)`` would throw (no byte there, or not a
    /// tag).
    @inline(__always)
    func quickIsNil(at position: Int) -> Bool? {
        guard position < bytes.count, bytes[position] <= EntityCodec.Tag.empty.rawValue else { return nil }
        return bytes[position] == EntityCodec.Tag.null.rawValue
    }
}
