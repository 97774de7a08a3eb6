/// A typed value of a secondary index, encoded so that byte order equals value order.
///
/// The total order across types is the order of the cases: `null` < `bool` < `int` < `double` < `date` <
/// `string` < `identifier`. Within a type: false < true; integers and doubles numerically (with -0.0 == 0.0 and
/// every NaN equal to one NaN above +infinity); dates by time; strings and identifiers by their bytes (UTF-8 for
/// strings), a prefix before a longer value.
///
/// The encoding is self-delimiting (no encoded value is a prefix of another), so an index entry can be the
/// encoded term followed by the record's primary key and still sort by (term, key). See docs/FORMAT.md,
/// "Index terms".
public enum IndexValue: Sendable, Hashable, Comparable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// Microseconds since 1970-01-01T00:00:00Z.
    case date(microsecondsSince1970: Int64)
    case string(String)
    /// An opaque identifier (e.g. an entity's local or remote id bytes).
    case identifier([UInt8])

    enum Tag: UInt8 {
        case null = 0x01, bool = 0x02, int = 0x03, double = 0x04, date = 0x05, string = 0x06, identifier = 0x07
    }

    /// The byte-comparable encoding. - Complexity: O(length).
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .string(let s): out.reserveCapacity(s.utf8.count + 3)
        case .identifier(let bytes): out.reserveCapacity(bytes.count + 3)
        default: out.reserveCapacity(9)
        }
        encode(into: &out)
        return out
    }

    /// Appends the encoding to `out`.
    public func encode(into out: inout [UInt8]) {
        switch self {
        case .null:
            out.append(Tag.null.rawValue)
        case .bool(let b):
            out.append(Tag.bool.rawValue)
            out.append(b ? 1 : 0)
        case .int(let v):
            out.append(Tag.int.rawValue)
            Self.appendBigEndian(UInt64(bitPattern: v) ^ (1 << 63), to: &out)
        case .double(let d):
            out.append(Tag.double.rawValue)
            Self.appendBigEndian(Self.orderedBits(d), to: &out)
        case .date(let us):
            out.append(Tag.date.rawValue)
            Self.appendBigEndian(UInt64(bitPattern: us) ^ (1 << 63), to: &out)
        case .string(let s):
            out.append(Tag.string.rawValue)
            Self.appendEscaped(s.utf8, to: &out)
        case .identifier(let bytes):
            out.append(Tag.identifier.rawValue)
            Self.appendEscaped(bytes, to: &out)
        }
    }

    /// Decodes one value from the start of `bytes`; returns it and the number of bytes it used, or nil when the
    /// bytes are not a valid encoding.
    public static func decode(_ bytes: ArraySlice<UInt8>) -> (value: IndexValue, length: Int)? {
        guard let first = bytes.first, let tag = Tag(rawValue: first) else { return nil }
        switch tag {
        case .string, .identifier:
            guard let (raw, used) = unescape(bytes.dropFirst()) else { return nil }
            if tag == .identifier { return (.identifier(raw), used + 1) }
            guard let s = String(validating: raw, as: UTF8.self) else { return nil }
            return (.string(s), used + 1)
        case .null, .bool, .int, .date, .double:
            return bytes.withUnsafeBytes { decode($0) }
        }
    }

    /// ``decode(_:)`` of bytes in place: the fixed-size values (null, bool, int, date, double) without copying
    /// them (the one decoding of those), strings and identifiers through a copy. Index walks decode a term per
    /// entry. - Complexity: O(length).
    static func decode(_ bytes: UnsafeRawBufferPointer) -> (value: IndexValue, length: Int)? {
        guard let first = bytes.first, let tag = Tag(rawValue: first) else { return nil }
        switch tag {
        case .null:
            return (.null, 1)
        case .bool:
            guard bytes.count >= 2, bytes[1] <= 1 else { return nil }
            return (.bool(bytes[1] == 1), 2)
        case .int, .date, .double:
            guard bytes.count >= 9 else { return nil }
            let v = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 1, as: UInt64.self))
            switch tag {
            case .int: return (.int(Int64(bitPattern: v ^ (1 << 63))), 9)
            case .date: return (.date(microsecondsSince1970: Int64(bitPattern: v ^ (1 << 63))), 9)
            default:
                let d = fromOrderedBits(v)
                // Only the canonical encodings are valid (one NaN, no -0.0).
                guard orderedBits(d) == v else { return nil }
                return (.double(d), 9)
            }
        case .string, .identifier:
            return decode(Array(bytes)[...])
        }
    }

    /// Whether `bytes` is exactly one valid encoding (what ``decode(_:)`` accepts, using all the bytes), checked
    /// without building the value: no allocation unless a string term holds an escaped zero byte.
    /// - Complexity: O(length).
    static func isValidEncoding(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first, let tag = Tag(rawValue: first) else { return false }
        switch tag {
        case .string, .identifier:
            // The body ends at the first 0x00 0x01; before it every 0x00 must be followed by 0xFF.
            var i = 1
            var escapes = false
            while i < bytes.count {
                if bytes[i] != 0 { i += 1; continue }
                guard i + 1 < bytes.count else { return false }
                if bytes[i + 1] == 0xFF { escapes = true; i += 2; continue }
                guard bytes[i + 1] == 0x01, i + 2 == bytes.count else { return false }
                if tag == .identifier { return true }
                if escapes { return decode(bytes[...]) != nil }
                return bytes.withUnsafeBytes { RecordCodec.isValidUTF8(UnsafeRawBufferPointer(rebasing: $0[1 ..< i])) }
            }
            return false
        default:
            guard let (_, length) = decode(bytes[...]) else { return false }
            return length == bytes.count
        }
    }

    // MARK: Encoding helpers

    /// Appends `v`'s 8 bytes, most significant first: in one append, not eight (each checking the array's
    /// uniqueness and capacity; about 200 instructions less per value, callgrind).
    private static func appendBigEndian(_ v: UInt64, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) }
    }

    /// Maps a double to bits whose unsigned order is the numeric order (canonical zero and NaN).
    static func orderedBits(_ d: Double) -> UInt64 {
        let canonical: Double = d.isNaN ? .nan : (d == 0 ? 0 : d)
        let bits = canonical.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    static func fromOrderedBits(_ v: UInt64) -> Double {
        Double(bitPattern: v & (1 << 63) != 0 ? v & ~(1 << 63) : ~v)
    }

    /// 0x00 → 0x00 0xFF; terminated by 0x00 0x01. Keeps byte order and makes the encoding prefix-free.
    private static func appendEscaped<S: Sequence>(_ bytes: S, to out: inout [UInt8]) where S.Element == UInt8 {
        for b in bytes {
            out.append(b)
            if b == 0 { out.append(0xFF) }
        }
        out.append(0)
        out.append(1)
    }

    private static func unescape(_ bytes: ArraySlice<UInt8>) -> ([UInt8], Int)? {
        var out: [UInt8] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b != 0 { out.append(b); i += 1; continue }
            guard i + 1 < bytes.endIndex else { return nil }
            let next = bytes[i + 1]
            if next == 0xFF { out.append(0); i += 2; continue }
            if next == 0x01 { return (out, i + 2 - bytes.startIndex) }
            return nil
        }
        return nil
    }
}
