/// The `Encoder` handed to a value's `encode(to:)` by ``EntityCodec``.
final class BinaryValueEncoder: Encoder {
    let sink: BinaryEncodingSink
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The container this encoder opened (asking again for the same kind returns the same one).
    private var containerID: Int?
    private var containerTag: EntityCodec.Tag?
    /// Whether a value was written through a single-value container (the encoder's one value).
    private var wroteSingleValue = false

    init(sink: BinaryEncodingSink, codingPath: [any CodingKey]) {
        self.sink = sink
        self.codingPath = codingPath
    }

    private func container(_ tag: EntityCodec.Tag) -> Int {
        // An encoder holds one value: a second container of another kind, or one after a single value, would write
        // a malformed record (JSONEncoder traps on both).
        if wroteSingleValue || (containerTag != nil && containerTag != tag) {
            sink.record { throw misuse("a container requested after this encoder's value was written") }
        }
        if let containerID { return containerID }
        let id = sink.openContainer(tag)
        containerID = id
        containerTag = tag
        return id
    }

    /// Called before a single-value container writes: throws unless it is the encoder's first and only value.
    func claimSingleValue() throws {
        guard containerID == nil, !wroteSingleValue else {
            throw misuse("a second value written through a single-value container")
        }
        wroteSingleValue = true
    }

    private func misuse(_ description: String) -> EncodingError {
        EncodingError.invalidValue((), .init(codingPath: codingPath, debugDescription: description))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedBinaryEncodingContainer<Key>(sink: sink, id: container(.keyed), codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedBinaryEncodingContainer(sink: sink, id: container(.unkeyed), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueBinaryEncodingContainer(sink: sink, encoder: self, codingPath: codingPath)
    }
}

struct KeyedBinaryEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let sink: BinaryEncodingSink
    let id: Int
    let codingPath: [any CodingKey]

    private func begin(_ key: some CodingKey) throws {
        try sink.prepare(id, codingPath: codingPath + [key])
        sink.writeKey(key.stringValue)
    }

    mutating func encodeNil(forKey key: Key) throws { try begin(key); sink.writeNil() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try begin(key); sink.writeBool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try begin(key); sink.writeString(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try begin(key); sink.writeDouble(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try begin(key); sink.writeFloat(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try begin(key); sink.writeInt(Int64(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try begin(key); sink.writeInt(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try begin(key); sink.writeUInt(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try begin(key)
        try sink.encodeValue(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        sink.record { try begin(key) }
        let id = sink.openContainer(.keyed)
        return KeyedEncodingContainer(KeyedBinaryEncodingContainer<NestedKey>(sink: sink, id: id,
                                                                              codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        sink.record { try begin(key) }
        return UnkeyedBinaryEncodingContainer(sink: sink, id: sink.openContainer(.unkeyed), codingPath: codingPath + [key])
    }

    /// The entry "super", named by a key of our own: `Key` rarely has a `super` case.
    mutating func superEncoder() -> any Encoder {
        sink.record { try begin(SuperCodingKey()) }
        sink.expectValue()
        return BinaryValueEncoder(sink: sink, codingPath: codingPath + [SuperCodingKey()])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        sink.record { try begin(key) }
        sink.expectValue()
        return BinaryValueEncoder(sink: sink, codingPath: codingPath + [key])
    }
}

struct UnkeyedBinaryEncodingContainer: UnkeyedEncodingContainer {
    let sink: BinaryEncodingSink
    let id: Int
    let codingPath: [any CodingKey]
    private(set) var count = 0

    init(sink: BinaryEncodingSink, id: Int, codingPath: [any CodingKey]) {
        self.sink = sink
        self.id = id
        self.codingPath = codingPath
    }

    private mutating func begin() throws {
        try sink.prepare(id, codingPath: codingPath)
        count += 1
    }

    mutating func encodeNil() throws { try begin(); sink.writeNil() }
    mutating func encode(_ value: Bool) throws { try begin(); sink.writeBool(value) }
    mutating func encode(_ value: String) throws { try begin(); sink.writeString(value) }
    mutating func encode(_ value: Double) throws { try begin(); sink.writeDouble(value) }
    mutating func encode(_ value: Int) throws { try begin(); sink.writeInt(Int64(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try begin()
        try sink.encodeValue(value, codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey> {
        sink.record { try begin() }
        return KeyedEncodingContainer(KeyedBinaryEncodingContainer<NestedKey>(sink: sink, id: sink.openContainer(.keyed),
                                                                              codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        sink.record { try begin() }
        return UnkeyedBinaryEncodingContainer(sink: sink, id: sink.openContainer(.unkeyed), codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder {
        sink.record { try begin() }
        sink.expectValue()
        return BinaryValueEncoder(sink: sink, codingPath: codingPath)
    }
}

struct SingleValueBinaryEncodingContainer: SingleValueEncodingContainer {
    let sink: BinaryEncodingSink
    let encoder: BinaryValueEncoder
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { try encoder.claimSingleValue(); sink.writeNil() }
    mutating func encode(_ value: Bool) throws { try encoder.claimSingleValue(); sink.writeBool(value) }
    mutating func encode(_ value: String) throws { try encoder.claimSingleValue(); sink.writeString(value) }
    mutating func encode(_ value: Double) throws { try encoder.claimSingleValue(); sink.writeDouble(value) }
    mutating func encode(_ value: Float) throws { try encoder.claimSingleValue(); sink.writeFloat(value) }
    mutating func encode(_ value: Int) throws { try encoder.claimSingleValue(); sink.writeInt(Int64(value)) }
    mutating func encode(_ value: Int64) throws { try encoder.claimSingleValue(); sink.writeInt(value) }
    mutating func encode(_ value: UInt64) throws { try encoder.claimSingleValue(); sink.writeUInt(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try encoder.claimSingleValue()
        try sink.encodeValue(value, codingPath: codingPath)
    }
}
