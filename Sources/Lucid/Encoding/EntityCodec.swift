/// The disk store's binary form of entities: a compact encoding of their `Codable` conformance, not JSON.
///
/// A record is a format-version byte (``formatVersion``) and one tagged value (docs/ENTITY_FORMAT.md).
/// Keyed containers store their keys, so decoding finds properties by name: a property added later decodes
/// as absent (`decodeIfPresent` gives nil) from records written before it, and a removed property is skipped.
/// Decoding first checks that the record is exactly one well-formed value (every length against the bytes left,
/// nesting depth bounded, no bytes after it), so hostile bytes give a `DecodingError`, never a crash or an
/// allocation sized by the input.
public enum EntityCodec {
    /// The version byte every record starts with; a record with another version is refused.
    public static let formatVersion: UInt8 = 1
    /// The deepest a value may sit: the record's value is at depth 0, a value inside a container at depth d is at
    /// d + 1. Decoding refuses a record with a deeper value, and encoding refuses to write one.
    public static let maxDepth = 128

    /// Throws unless `bytes` starts with ``formatVersion``. - Throws: `DecodingError.dataCorrupted`.
    static func checkVersion(_ bytes: [UInt8]) throws {
        guard let version = bytes.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "empty entity record"))
        }
        guard version == formatVersion else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: [], debugDescription: "entity record format version \(version), expected \(formatVersion)"))
        }
    }

    enum Tag: UInt8 {
        case end = 0x00, null = 0x01, falseValue = 0x02, trueValue = 0x03, int = 0x04, uint = 0x05
        case double = 0x06, float = 0x07, string = 0x08, keyed = 0x09, unkeyed = 0x0A, empty = 0x0B
    }

    /// Encodes `value`. - Complexity: O(size of the value). - Throws: `EncodingError` when the value's
    /// `encode(to:)` throws or uses containers out of order (writing to a parent before a nested container
    /// it opened is finished is allowed; writing to a finished container is not), or when it nests deeper
    /// than ``maxDepth``.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let sink = BinaryEncodingSink()
        sink.bytes.reserveCapacity(256)
        sink.bytes.append(formatVersion)
        try sink.encodeValue(value, codingPath: [])
        sink.closeAll()
        if let error = sink.deferredError { throw error }
        return sink.bytes
    }

    /// Decodes a `T` from `bytes`. - Throws: `DecodingError` for a wrong version, truncated or malformed bytes,
    /// or a shape that does not fit `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try checkVersion(bytes)
        let reader = BinaryReader(bytes: bytes)
        // The whole record must be one well-formed value ending at the last byte. Containers walk only the parts
        // a type reads, so without this a truncated top-level array, a type that reads nothing (an empty struct)
        // or trailing garbage would decode.
        guard try reader.skip(at: 1, []) == bytes.count else {
            throw bytesAfterValue()
        }
        let decoder = BinaryValueDecoder(reader: reader, position: 1, codingPath: [])
        let value = try T(from: decoder)
        return value
    }
}

extension EntityCodec {
    /// The error of a record with bytes after its value (every reader of records reports it so).
    static func bytesAfterValue() -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "bytes after the entity record's value"))
    }
}

/// The key of the entry `superEncoder()` and `superDecoder()` use, "super" as in `JSONEncoder`.
struct SuperCodingKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { guard stringValue == "super" else { return nil } }
    init?(intValue: Int) { nil }
}
