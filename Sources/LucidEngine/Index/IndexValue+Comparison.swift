import Glibc

/// Comparing and hashing index values without encoding them.
///
/// The order is the order of ``IndexValue/encoded`` (docs/FORMAT.md, "Index terms"), the order index entries are
/// stored in; it is computed on the values themselves so that sorting a query's result by an index, or walking an
/// index up to a boundary term, compares in place instead of building two byte arrays per comparison:
/// - values of different cases compare by case (the encoding's first byte, the tag);
/// - integers and dates compare as integers; doubles by ``IndexValue/orderedBits(_:)`` (the encoding's bytes,
///   where -0.0 is 0.0 and every NaN is one NaN above +infinity);
/// - strings by their UTF-8 bytes and identifiers by their bytes, a prefix first. The encoding's escape
///   (0x00 → 0x00 0xFF, then 0x00 0x01 to end) keeps that order: at the first difference a 0x00 byte (escaped)
///   still sorts below every other byte, and the end mark sorts below anything that goes on, escaped zero included.
///   Strings are equal when their bytes are, not under Swift's canonical equivalence (`==` on `String`): "é" as one
///   scalar and as "e" + U+0301 are two terms of an index, and two values here.
///
/// Tests check each operation against the encoding's bytes (IndexValueTests).
extension IndexValue {
    /// The encoding's first byte: the order of the cases.
    @inline(__always)
    var tag: Tag {
        switch self {
        case .null: .null
        case .bool: .bool
        case .int: .int
        case .double: .double
        case .date: .date
        case .string: .string
        case .identifier: .identifier
        }
    }

    /// Whether `lhs` sorts before `rhs`: their encodings' byte order. - Complexity: O(1), or O(length) for
    /// strings and identifiers; no allocation.
    public static func < (lhs: IndexValue, rhs: IndexValue) -> Bool { compare(lhs, rhs) < 0 }

    /// Whether the two values have the same encoding. - Complexity: as `<`.
    public static func == (lhs: IndexValue, rhs: IndexValue) -> Bool { compare(lhs, rhs) == 0 }

    /// Hashes what `==` compares: the case, and the value as the encoding holds it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(tag.rawValue)
        switch self {
        case .null: break
        case .bool(let b): hasher.combine(b)
        case .int(let v), .date(let v): hasher.combine(v)
        case .double(let d): hasher.combine(Self.orderedBits(d))
        case .string(let s):
            var s = s
            s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(s.utf8.count)
        case .identifier(let bytes):
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(bytes.count)
        }
    }

    /// -1, 0 or 1 as `lhs` sorts before, with or after `rhs` (one comparison where `<` and `==` would take two).
    /// - Complexity: as `<`.
    public static func compare(_ lhs: IndexValue, _ rhs: IndexValue) -> Int {
        switch (lhs, rhs) {
        case (.null, .null): return 0
        case (.bool(let a), .bool(let b)): return a == b ? 0 : (b ? -1 : 1)
        case (.int(let a), .int(let b)), (.date(let a), .date(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.double(let a), .double(let b)):
            let x = orderedBits(a), y = orderedBits(b)
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.string(let a), .string(let b)): return compareUTF8(a, b)
        case (.identifier(let a), .identifier(let b)):
            return a.withUnsafeBytes { x in b.withUnsafeBytes { y in compareBytes(x, y) } }
        default:
            return lhs.tag.rawValue < rhs.tag.rawValue ? -1 : 1
        }
    }

    /// The byte order of two strings' UTF-8 forms, a prefix first.
    private static func compareUTF8(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in compareBytes(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) }
        }
    }

    /// The byte order of `x` and `y`, a prefix first.
    private static func compareBytes(_ x: UnsafeRawBufferPointer, _ y: UnsafeRawBufferPointer) -> Int {
        let common = min(x.count, y.count)
        if common > 0 {
            let order = memcmp(x.baseAddress!, y.baseAddress!, common)
            if order != 0 { return order < 0 ? -1 : 1 }
        }
        return x.count < y.count ? -1 : (x.count == y.count ? 0 : 1)
    }
}
