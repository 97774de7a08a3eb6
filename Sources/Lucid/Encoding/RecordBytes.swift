/// The byte-level writes of the entity record grammar (docs/ENTITY_FORMAT.md), in one place for both writers:
/// ``EntityCodec``'s `Encoder` (`BinaryEncodingSink`) and ``EntityRecordWriter``.
extension Array where Element == UInt8 {
    /// An unsigned LEB128 varint.
    mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        append(UInt8(v))
    }

    /// A signed integer: its tag and zigzag varint.
    mutating func appendTaggedInt(_ value: Int64) {
        append(EntityCodec.Tag.int.rawValue)
        appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// An unsigned integer: its tag and varint.
    mutating func appendTaggedUInt(_ value: UInt64) {
        append(EntityCodec.Tag.uint.rawValue)
        appendVarint(value)
    }

    /// A string: its tag, UTF-8 length and bytes.
    mutating func appendTaggedString(_ value: String) {
        append(EntityCodec.Tag.string.rawValue)
        var value = value
        value.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count))
            append(contentsOf: utf8)
        }
    }

    /// A Double: its tag and IEEE 754 bits, little-endian.
    mutating func appendTaggedDouble(_ value: Double) {
        append(EntityCodec.Tag.double.rawValue)
        Swift.withUnsafeBytes(of: value.bitPattern.littleEndian) { append(contentsOf: $0) }
    }

    /// A Float: its tag and IEEE 754 bits, little-endian.
    mutating func appendTaggedFloat(_ value: Float) {
        append(EntityCodec.Tag.float.rawValue)
        Swift.withUnsafeBytes(of: value.bitPattern.littleEndian) { append(contentsOf: $0) }
    }

    /// A Bool's tag.
    mutating func appendTaggedBool(_ value: Bool) {
        append(value ? EntityCodec.Tag.trueValue.rawValue : EntityCodec.Tag.falseValue.rawValue)
    }

    /// A keyed container entry's key: its UTF-8 length + 1 (0 is the container's end tag) and bytes.
    mutating func appendKey(utf8: UnsafeBufferPointer<UInt8>) {
        appendVarint(UInt64(utf8.count) + 1)
        append(contentsOf: utf8)
    }
}
