import Foundation

/// Writes an entity record by hand, for ``EntityRecordCodable/encode(to:)``: the same bytes ``EntityCodec``
/// writes for a `Codable` struct whose `encode(to:)` writes the same keys in the same order, without an
/// `Encoder`, containers or coding paths.
///
/// The record is one keyed container (docs/ENTITY_FORMAT.md); each `encode` appends one entry. Write each key
/// once: a key written twice is stored twice and read back from its first entry. `encodeIfPresent` leaves a
/// `nil` out, as synthesized `Codable` does, so a property added later reads as absent from older records.
///
/// - Complexity: each call is O(size of the value written); the buffer grows geometrically.
public struct EntityRecordWriter {
    /// The record so far: the version byte, the container tag and the entries written.
    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(EntityCodec.formatVersion)
        bytes.append(EntityCodec.Tag.keyed.rawValue)
    }

    /// The finished record (the container's end tag appended).
    consuming func finish() -> [UInt8] {
        bytes.append(EntityCodec.Tag.end.rawValue)
        return bytes
    }

    private mutating func key(_ key: StaticString) {
        key.withUTF8Buffer { bytes.appendKey(utf8: $0) }
    }

    // MARK: Entries

    /// Writes `value` under `key`.
    public mutating func encode(_ value: String, forKey key: StaticString) { self.key(key); bytes.appendTaggedString(value) }
    /// Writes `value` under `key`.
    public mutating func encode(_ value: Int, forKey key: StaticString) { self.key(key); bytes.appendTaggedInt(Int64(value)) }
    /// Writes `value` under `key`.
    public mutating func encode(_ value: Int64, forKey key: StaticString) { self.key(key); bytes.appendTaggedInt(value) }
    /// Writes `value` under `key`.
    public mutating func encode(_ value: Int32, forKey key: StaticString) { self.key(key); bytes.appendTaggedInt(Int64(value)) }
    /// Writes `value` under `key`.
    public mutating func encode(_ value: UInt, forKey key: StaticString) { self.key(key); bytes.appendTaggedUInt(UInt64(value)) }
    /// Writes `value` under `key`.
    public mutating func encode(_ value: UInt64, forKey key: StaticString) { self.key(key); bytes.appendTaggedUInt(value) }
    /// Writes `value` under `key`.
    public mutating func encode(_ value: Double, forKey key: StaticString) { self.key(key); bytes.appendTaggedDouble(value) }
    /// Writes `value` under `key`.
    public mutating func encode(_ value: Bool, forKey key: StaticString) {
        self.key(key)
        bytes.appendTaggedBool(value)
    }
    /// Writes `value` under `key` as `Date`'s `Codable` form does (seconds since 2001-01-01, a Double).
    public mutating func encode(_ value: Date, forKey key: StaticString) {
        self.key(key)
        bytes.appendTaggedDouble(value.timeIntervalSinceReferenceDate)
    }

    /// Writes `identifier` under `key` as its `Codable` form (`{local?, remote?}`). Inlinable, so that it is
    /// specialized for the entity's identifier type.
    /// - Throws: what the remote value's `encode(to:)` throws (never, for `Int`, `Int64` and `String`).
    @inlinable
    public mutating func encode<Owner, RemoteValue>(_ identifier: EntityIdentifier<Owner, RemoteValue>,
                                                    forKey key: StaticString) throws {
        beginIdentifier(key)
        if let local = identifier.localValue { encode(local, forKey: "local") }
        if let remote = identifier.remoteValue {
            if RemoteValue.self == Int.self { encode(unsafeBitCast(remote, to: Int.self), forKey: "remote") }
            else if RemoteValue.self == String.self { encode(unsafeBitCast(remote, to: String.self), forKey: "remote") }
            else if RemoteValue.self == Int64.self { encode(unsafeBitCast(remote, to: Int64.self), forKey: "remote") }
            else { try encode(remote, forKey: "remote") }
        }
        endContainer()
    }

    /// Writes `key` and opens the identifier's keyed container.
    @usableFromInline
    mutating func beginIdentifier(_ key: StaticString) {
        self.key(key)
        bytes.append(EntityCodec.Tag.keyed.rawValue)
    }

    /// Closes the container opened last.
    @usableFromInline
    mutating func endContainer() { bytes.append(EntityCodec.Tag.end.rawValue) }

    /// Writes any `Encodable` value under `key` through its `encode(to:)` (arrays, nested structs, enums).
    /// - Throws: `EncodingError` as ``EntityCodec/encode(_:)`` does.
    public mutating func encode<T: Encodable>(_ value: T, forKey key: StaticString) throws {
        // The value is written one level down, as inside the record's container, so the depth limit is the same.
        let sink = BinaryEncodingSink()
        let container = sink.openContainer(.keyed)
        try sink.prepare(container, codingPath: [])
        try sink.encodeValue(value, codingPath: [RecordKey(key)])
        sink.closeAll()
        if let error = sink.deferredError { throw error }
        self.key(key)
        bytes.append(contentsOf: sink.bytes[1..<(sink.bytes.count - 1)])
    }

    /// Writes `value` under `key` unless it is nil.
    public mutating func encodeIfPresent(_ value: String?, forKey key: StaticString) {
        if let value { encode(value, forKey: key) }
    }
    /// Writes `value` under `key` unless it is nil.
    public mutating func encodeIfPresent(_ value: Int?, forKey key: StaticString) {
        if let value { encode(value, forKey: key) }
    }
    /// Writes `value` under `key` unless it is nil.
    public mutating func encodeIfPresent(_ value: Double?, forKey key: StaticString) {
        if let value { encode(value, forKey: key) }
    }
    /// Writes `value` under `key` unless it is nil.
    public mutating func encodeIfPresent(_ value: Bool?, forKey key: StaticString) {
        if let value { encode(value, forKey: key) }
    }
    /// Writes `value` under `key` unless it is nil.
    public mutating func encodeIfPresent(_ value: Date?, forKey key: StaticString) {
        if let value { encode(value, forKey: key) }
    }
    /// Writes `value` under `key` unless it is nil. - Throws: as ``encode(_:forKey:)-(T,_)``.
    public mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: StaticString) throws {
        if let value { try encode(value, forKey: key) }
    }
}

/// A record key as a `CodingKey`, for coding paths in errors.
struct RecordKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ key: StaticString) { stringValue = key.description }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
