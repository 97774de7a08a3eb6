/// The keyed container of ``BinaryValueDecoder``: a keyed container's entries (found once, when it is made) and
/// lookups by key.
///
/// **Lookups.** `Codable`'s synthesized `init(from:)` asks for the keys in declaration order, which is the order
/// `encode(to:)` wrote them, so a lookup first tries the entry after the one found last and scans from the start
/// only when that is not it. A lookup answers the *first* entry with the key, as a scan does: the expected entry
/// is taken only when no key repeats in the container (`repeatsKeys`, worked out when the container is made for up
/// to 64 entries, and assumed beyond; a record written by ``EntityCodec`` never repeats one, but stored bytes are
/// not trusted to be such a record).
///
/// A class, so that the lookups (non-mutating in the protocol) can move the expected entry, and so that
/// `KeyedDecodingContainer`'s box passes a reference to each call instead of copying the container through its
/// generic value witnesses. One container decodes on one thread: it is not `Sendable`.
final class KeyedBinaryDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: BinaryReader
    let codingPath: [any CodingKey]
    /// The container's entries, in record order.
    private let entries: [KeyedEntry]
    /// Whether two entries may have the same key bytes (exact up to `checkedEntries` entries, true beyond).
    let repeatsKeys: Bool
    /// The entry the next lookup tries first: the one after the entry found last.
    private var expected = 0

    /// Reads the keyed container whose tag is at `position`. O(entries), plus the duplicate check (`repeatsKeys`:
    /// at most `checkedEntries`² key comparisons, and usually a handful).
    /// - Throws: `DecodingError` when the container is nested too deep or its entries do not parse.
    init(reader: BinaryReader, position: Int, codingPath: [any CodingKey]) throws {
        guard codingPath.count <= EntityCodec.maxDepth else {
            throw reader.corrupt("nesting too deep", at: position, codingPath)
        }
        self.reader = reader
        self.codingPath = codingPath
        entries = try reader.keyedEntries(at: position, depth: codingPath.count, codingPath).entries
        repeatsKeys = Self.repeatsKeys(entries, in: reader)
    }

    /// The value position of the first entry named `key`, or nil. One comparison when it is the expected entry
    /// (keys read in the order written), else O(entries).
    private func find(_ key: some CodingKey) -> Int? {
        var name = key.stringValue
        return name.withUTF8 { name in
            let next = expected
            if !repeatsKeys, next < entries.count, reader.key(entries[next].key, equals: name) {
                expected = next &+ 1
                return entries[next].value
            }
            for i in entries.indices where reader.key(entries[i].key, equals: name) {
                expected = i &+ 1
                return entries[i].value
            }
            return nil
        }
    }

    private func position(_ key: some CodingKey) throws -> Int {
        guard let p = find(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)"))
        }
        return p
    }

    var allKeys: [Key] { entries.compactMap { Key(stringValue: String(decoding: reader.bytes[$0.key], as: UTF8.self)) } }
    func contains(_ key: Key) -> Bool { find(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try reader.isNil(at: position(key), codingPath + [key]) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try reader.decodeBool(at: position(key), codingPath + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try reader.decodeString(at: position(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try reader.decodeDouble(at: position(key), codingPath + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try reader.decodeInteger(Int.self, at: position(key), codingPath + [key])
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try reader.decodeValue(type, at: position(key), codingPath + [key])
    }
    // The primitive `decodeIfPresent` overloads, so that an optional property costs one key lookup, not the
    // three of the protocol's defaults (`contains`, `decodeNil`, `decode`); same results and errors.
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let p = find(key), try !reader.isNil(at: p, codingPath + [key]) else { return nil }
        return try reader.decodeString(at: p, codingPath + [key])
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let p = find(key), try !reader.isNil(at: p, codingPath + [key]) else { return nil }
        return try reader.decodeInteger(Int.self, at: p, codingPath + [key])
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let p = find(key), try !reader.isNil(at: p, codingPath + [key]) else { return nil }
        return try reader.decodeDouble(at: p, codingPath + [key])
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let p = find(key), try !reader.isNil(at: p, codingPath + [key]) else { return nil }
        return try reader.decodeBool(at: p, codingPath + [key])
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let p = find(key), try !reader.isNil(at: p, codingPath + [key]) else { return nil }
        return try reader.decodeValue(type, at: p, codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                               forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try KeyedBinaryDecodingContainer<NestedKey>(reader: reader, position: position(key),
                                                                           codingPath: codingPath + [key]))
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try UnkeyedBinaryDecodingContainer(reader: reader, position: position(key), codingPath: codingPath + [key])
    }
    func superDecoder() throws -> any Decoder {
        // The entry "super", named by a key of our own: `Key` rarely has a `super` case.
        BinaryValueDecoder(reader: reader, position: try position(SuperCodingKey()),
                           codingPath: codingPath + [SuperCodingKey()])
    }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        BinaryValueDecoder(reader: reader, position: try position(key), codingPath: codingPath + [key])
    }
}

extension KeyedBinaryDecodingContainer {
    /// Whether two of `entries` may have equal key bytes: exact up to `checkedEntries` entries, where a 64-bit
    /// filter on (length, first byte, last byte) sends only the keys whose bit is already set to an exact
    /// comparison with the earlier keys; beyond that, true. A larger container is always scanned, as before the
    /// expected-entry lookup: once the filter is full, the check would compare each key with every earlier one, and
    /// a stored container (untrusted bytes) could make that quadratic. O(min(n, checkedEntries)²) at worst.
    private static func repeatsKeys(_ entries: [KeyedEntry], in reader: BinaryReader) -> Bool {
        guard entries.count > 1 else { return false }
        guard entries.count <= checkedEntries else { return true }
        return reader.bytes.withUnsafeBufferPointer { bytes in
            var filter: UInt64 = 0
            for i in entries.indices {
                let key = entries[i].key
                let bit = UInt64(1) &<< (filterHash(key, bytes) & 63)
                if filter & bit != 0 {
                    let name = UnsafeBufferPointer(rebasing: bytes[key])
                    for j in 0..<i where reader.key(entries[j].key, equals: name) { return true }
                }
                filter |= bit
            }
            return false
        }
    }

    /// The most entries `repeatsKeys` checks exactly (a synthesized `Codable` type has one per property).
    static var checkedEntries: Int { 64 }

    /// A cheap hash of a key's length and end bytes (the key lies in `bytes`: the entries were checked).
    @inline(__always)
    private static func filterHash(_ key: Range<Int>, _ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        guard !key.isEmpty else { return 0 }
        return UInt64(truncatingIfNeeded: key.count) &* 0x9E37
            &+ UInt64(bytes[key.lowerBound]) &* 31 &+ UInt64(bytes[key.upperBound &- 1])
    }
}
