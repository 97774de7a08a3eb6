import Foundation

/// The `Decoder` handed to a value's `init(from:)` by ``EntityCodec``: reads the value starting at `position`.
struct BinaryValueDecoder: Decoder {
    let reader: BinaryReader
    let position: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try KeyedBinaryDecodingContainer<Key>(reader: reader, position: position,
                                                                     codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try UnkeyedBinaryDecodingContainer(reader: reader, position: position, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueBinaryDecodingContainer(reader: reader, position: position, codingPath: codingPath)
    }

    /// The identifier stored here, read as `EntityIdentifier.init(from:)` reads it through a keyed container
    /// (the first `local` and `remote` entries, null as absent, the same errors with the same coding paths),
    /// without building one: no container box, entry table or generic metadata lookups.
    func decodeIdentifier<Owner, RemoteValue>(
        _ type: EntityIdentifier<Owner, RemoteValue>.Type
    ) throws -> EntityIdentifier<Owner, RemoteValue> {
        guard codingPath.count <= EntityCodec.maxDepth else {
            throw reader.corrupt("nesting too deep", at: position, codingPath)
        }
        let parts = try reader.identifierParts(at: position, depth: codingPath.count, codingPath)
        var remote: RemoteValue?
        if let p = parts.remote { remote = try reader.decodeValue(RemoteValue.self, at: p, codingPath + [RecordKey("remote")]) }
        if parts.local == nil && remote == nil { throw identifierWithoutValue(codingPath) }
        return EntityIdentifier(localValue: parts.local, remoteValue: remote)
    }
}

/// Reads primitive values; shared by the three container kinds.
extension BinaryReader {
    func mismatch<T>(_ type: T.Type, at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath(), debugDescription: "unexpected value at byte \(position)"))
    }

    func isNil(at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Bool {
        if let isNil = quickIsNil(at: position) { return isNil }
        return try tag(at: position, codingPath()) == .null
    }

    func decodeBool(at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch try tag(at: position, codingPath()) {
        case .trueValue: return true
        case .falseValue: return false
        default: throw mismatch(Bool.self, at: position, codingPath())
        }
    }

    func decodeString(at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> String {
        if let string = quickString(at: position) { return string }
        guard try tag(at: position, codingPath()) == .string else { throw mismatch(String.self, at: position, codingPath()) }
        var p = position + 1
        let n = try length(at: &p, codingPath())
        return String(decoding: bytes[p..<(p + n)], as: UTF8.self)
    }

    func decodeDouble(at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Double {
        if let double = quickDouble(at: position) { return double }
        switch try tag(at: position, codingPath()) {
        case .double: return Double(bitPattern: try fixed(8, at: position + 1, codingPath()))
        case .float: return Double(Float(bitPattern: UInt32(try fixed(4, at: position + 1, codingPath()))))
        case .int: return Double(try decodeInt64(at: position, codingPath()))
        default: throw mismatch(Double.self, at: position, codingPath())
        }
    }

    func decodeInt64(at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Int64 {
        if let value = quickInt64(at: position) { return value }
        var p = position + 1
        switch try tag(at: position, codingPath()) {
        case .int:
            let raw = try varint(at: &p, codingPath())
            return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
        case .uint:
            let raw = try varint(at: &p, codingPath())
            guard raw <= UInt64(Int64.max) else { throw mismatch(Int64.self, at: position, codingPath()) }
            return Int64(raw)
        default: throw mismatch(Int64.self, at: position, codingPath())
        }
    }

    func decodeUInt64(at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> UInt64 {
        var p = position + 1
        switch try tag(at: position, codingPath()) {
        case .uint: return try varint(at: &p, codingPath())
        case .int:
            let v = try decodeInt64(at: position, codingPath())
            guard v >= 0 else { throw mismatch(UInt64.self, at: position, codingPath()) }
            return UInt64(v)
        default: throw mismatch(UInt64.self, at: position, codingPath())
        }
    }

    func decodeInteger<T: FixedWidthInteger>(_ type: T.Type, at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> T {
        if T.isSigned {
            guard let v = T(exactly: try decodeInt64(at: position, codingPath())) else {
                throw mismatch(T.self, at: position, codingPath())
            }
            return v
        }
        guard let v = T(exactly: try decodeUInt64(at: position, codingPath())) else {
            throw mismatch(T.self, at: position, codingPath())
        }
        return v
    }

    func decodeValue<T: Decodable>(_ type: T.Type, at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> T {
        // Primitives are recognized by type identity (a metadata comparison) rather than by casts.
        if T.self == String.self { return unsafeBitCast(try decodeString(at: position, codingPath()), to: T.self) }
        if T.self == Int.self { return unsafeBitCast(try decodeInteger(Int.self, at: position, codingPath()), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try decodeDouble(at: position, codingPath()), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try decodeBool(at: position, codingPath()), to: T.self) }
        if T.self == Int64.self { return unsafeBitCast(try decodeInt64(at: position, codingPath()), to: T.self) }
        if T.self == UInt64.self { return unsafeBitCast(try decodeUInt64(at: position, codingPath()), to: T.self) }
        // Date's `init(from:)` reads a Double from a single-value container (same value, same errors).
        if T.self == Date.self {
            return unsafeBitCast(Date(timeIntervalSinceReferenceDate: try decodeDouble(at: position, codingPath())),
                                 to: T.self)
        }
        return try T(from: BinaryValueDecoder(reader: self, position: position, codingPath: codingPath()))
    }
}

struct UnkeyedBinaryDecodingContainer: UnkeyedDecodingContainer {
    let reader: BinaryReader
    let codingPath: [any CodingKey]
    private var cursor: Int
    private(set) var currentIndex = 0
    var count: Int? { nil }
    var isAtEnd: Bool { cursor >= reader.bytes.count || reader.bytes[cursor] == EntityCodec.Tag.end.rawValue }

    init(reader: BinaryReader, position: Int, codingPath: [any CodingKey]) throws {
        guard codingPath.count <= EntityCodec.maxDepth else {
            throw reader.corrupt("nesting too deep", at: position, codingPath)
        }
        guard try reader.tag(at: position, codingPath) == .unkeyed else {
            throw reader.mismatch([Int].self, at: position, codingPath)
        }
        self.reader = reader
        self.codingPath = codingPath
        cursor = position + 1
    }

    private mutating func next() throws -> Int {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "unkeyed container at its end"))
        }
        let p = cursor
        cursor = try reader.valueEnd(at: p, depth: codingPath.count + 1, codingPath)
        currentIndex += 1
        return p
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, try reader.isNil(at: cursor, codingPath) else { return false }
        _ = try next()
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try reader.decodeBool(at: next(), codingPath) }
    mutating func decode(_ type: String.Type) throws -> String { try reader.decodeString(at: next(), codingPath) }
    mutating func decode(_ type: Double.Type) throws -> Double { try reader.decodeDouble(at: next(), codingPath) }
    mutating func decode(_ type: Int.Type) throws -> Int { try reader.decodeInteger(Int.self, at: next(), codingPath) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try reader.decodeValue(type, at: next(), codingPath) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try KeyedBinaryDecodingContainer<NestedKey>(reader: reader, position: next(),
                                                                           codingPath: codingPath))
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try UnkeyedBinaryDecodingContainer(reader: reader, position: next(), codingPath: codingPath)
    }
    mutating func superDecoder() throws -> any Decoder {
        BinaryValueDecoder(reader: reader, position: try next(), codingPath: codingPath)
    }
}

struct SingleValueBinaryDecodingContainer: SingleValueDecodingContainer {
    let reader: BinaryReader
    let position: Int
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { (try? reader.isNil(at: position, codingPath)) ?? false }
    func decode(_ type: Bool.Type) throws -> Bool { try reader.decodeBool(at: position, codingPath) }
    func decode(_ type: String.Type) throws -> String { try reader.decodeString(at: position, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try reader.decodeDouble(at: position, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try reader.decodeDouble(at: position, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try reader.decodeInteger(Int.self, at: position, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try reader.decodeInteger(Int8.self, at: position, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try reader.decodeInteger(Int16.self, at: position, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try reader.decodeInteger(Int32.self, at: position, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try reader.decodeInt64(at: position, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try reader.decodeInteger(UInt.self, at: position, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try reader.decodeInteger(UInt8.self, at: position, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try reader.decodeInteger(UInt16.self, at: position, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try reader.decodeInteger(UInt32.self, at: position, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try reader.decodeUInt64(at: position, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try reader.decodeValue(type, at: position, codingPath) }
}
