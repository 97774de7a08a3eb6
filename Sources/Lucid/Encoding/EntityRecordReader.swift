import Foundation

/// Reads an entity record by hand, for ``EntityRecordCodable/init(from:)``: any record ``EntityCodec`` or
/// ``EntityRecordWriter`` wrote, with the same results and errors as the `Codable` path.
///
/// The record is checked as it is read: every entry a read walks past is checked (lengths against the bytes
/// left, nesting bounded), and ``EntityRecordCodable/decodeRecord(_:)`` checks the entries after the last one
/// read and that nothing follows the record, so no read runs past the record and a malformed record never
/// decodes. When a read fails, the whole record is checked first and its error, if it has one, is the one
/// thrown: the errors are those of a reader that checks everything before reading.
///
/// Each read finds its key's entry: reading keys in the order they were written costs O(1) per key, any other
/// order a walk of the record's entries from its start. A key stored twice reads from its first entry, as
/// ``EntityCodec`` does: the keys walked past are noted in a 256-bit Bloom filter, and a key that may have
/// been walked past already is looked for from the start. (After a read out of order, the reads that follow
/// walk from the start too, until one finds its entry at the first entry not yet walked.)
///
/// - Throws: `DecodingError` (`keyNotFound` for a missing key, `typeMismatch` for a value of another kind or out
///   of the type's range, `dataCorrupted` for malformed bytes).
public struct EntityRecordReader {
    let reader: BinaryReader
    /// Where the entry the next read looks at first starts (the one after the last entry read): the position
    /// of its key's length.
    var next = Self.firstEntry
    /// Every entry before this position has been walked (checked) and its key noted in `walkedKeys`; the entry
    /// there has not.
    var walked = Self.firstEntry
    /// A Bloom filter of the keys of the entries before `walked` (one bit per key, see ``keyBit(_:)``).
    var walkedKeys = SIMD4<UInt64>()
    /// Where the record's first entry starts: after the version byte and the keyed container's tag.
    private static var firstEntry: Int { 2 }

    @usableFromInline
    init(_ bytes: [UInt8]) throws {
        try EntityCodec.checkVersion(bytes)
        let reader = BinaryReader(bytes: bytes)
        guard try reader.tag(at: 1, []) == .keyed else {
            // Codable's order (`EntityCodec.decode`): the record's value is checked whole, then asked for a container.
            guard try reader.skip(at: 1, []) == bytes.count else { throw EntityCodec.bytesAfterValue() }
            throw reader.mismatch([String: Int].self, at: 1, [])
        }
        self.reader = reader
    }

    /// Checks the entries not walked yet and that the record ends with its container. Reads then never met
    /// malformed bytes, anywhere in the record. - Throws: `DecodingError.dataCorrupted`.
    @usableFromInline
    mutating func finish() throws {
        var p = walked
        while let entry = try reader.entry(at: p) { p = try reader.valueEnd(at: entry.value, depth: 1, []) }
        var end = p
        _ = try reader.quickOrCheckedVarint(at: &end, [])   // the end tag (a zero key length), checked above
        guard end == reader.bytes.count else { throw EntityCodec.bytesAfterValue() }
    }

    /// Checks the whole record as the reading started: throws what a reader that checks everything first would
    /// have thrown before any read, if anything.
    @usableFromInline
    func checkWhole() throws {
        let (end, _) = try reader.checkKeyedContainer(at: 1)
        guard end == reader.bytes.count else { throw EntityCodec.bytesAfterValue() }
    }

    @inline(__always)
    private func matches(_ entryKey: Range<Int>, _ key: StaticString) -> Bool {
        key.withUTF8Buffer { reader.key(entryKey, equals: $0) }
    }

    /// The bit of `walkedKeys` for key bytes `key` (from their length, first, second and last byte), as a
    /// word index and a mask.
    @inline(__always)
    static func keyBit(_ key: UnsafeBufferPointer<UInt8>) -> (word: Int, mask: UInt64) {
        guard let first = key.first, let last = key.last else { return (0, 1) }
        let second = key.count > 1 ? key[1] : 0
        let print = UInt64(key.count) << 24 | UInt64(first) << 16 | UInt64(second) << 8 | UInt64(last)
        let bit = Int(truncatingIfNeeded: (print &* 0x9E37_79B9_7F4A_7C15) >> 56)
        return (bit >> 6, 1 << UInt64(bit & 63))
    }

    /// Whether `walkedKeys` may hold the key of bit `bit`.
    @inline(__always)
    func mayHaveWalked(_ bit: (word: Int, mask: UInt64)) -> Bool { walkedKeys[bit.word] & bit.mask != 0 }

    /// Notes the entry whose key is at `key` and which ends at `end` as walked, if it is the first not walked.
    @inline(__always)
    private mutating func noteWalked(_ key: Range<Int>, at position: Int, end: Int) {
        guard position == walked else { return }
        let bit = reader.bytes.withUnsafeBufferPointer { Self.keyBit(UnsafeBufferPointer(rebasing: $0[key])) }
        walkedKeys[bit.word] |= bit.mask
        walked = end
    }

    /// The value position of `key`'s first entry, or nil.
    private mutating func find(_ key: StaticString) throws -> Int? {
        let bit = key.withUTF8Buffer { Self.keyBit($0) }
        // At the cursor, when every earlier entry was walked and none may have this key: the entry there is the
        // key's first if it is the key's at all.
        if next == walked && !mayHaveWalked(bit) {
            if let (value, end) = quickNext(key) {
                walkedKeys[bit.word] |= bit.mask
                next = end
                walked = end
                return value
            }
            if let entry = try reader.entry(at: next), matches(entry.key, key) {
                let end = try reader.valueEnd(at: entry.value, depth: 1, [])
                walkedKeys[bit.word] |= bit.mask
                next = end
                walked = end
                return entry.value
            }
        }
        var p = Self.firstEntry
        while let entry = try reader.entry(at: p) {
            let end = try reader.valueEnd(at: entry.value, depth: 1, [])
            noteWalked(entry.key, at: p, end: end)
            p = end
            if matches(entry.key, key) {
                next = end
                return entry.value
            }
        }
        return nil
    }

    /// The cursor read of ``find(_:)`` in one pass over the bytes: the value position of the entry at ``next``
    /// and the position after its value when that entry is `key`'s and its value a scalar, a string or an
    /// identifier; else nil (``find(_:)`` then takes its general path).
    @inline(__always)
    private func quickNext(_ key: StaticString) -> (value: Int, end: Int)? {
        reader.bytes.withUnsafeBufferPointer { buffer in
            // `matches` compares the same way, through a second buffer access that costs ~5% of a decode here.
            guard let value = Self.valuePosition(buffer, ofEntryAt: next, key: key),
                  let end = BinaryReader.quickValueEnd(buffer, at: value, depth: 1) else { return nil }
            return (value, end)
        }
    }

    private mutating func position(_ key: StaticString) throws -> Int {
        guard let p = try find(key) else {
            throw DecodingError.keyNotFound(RecordKey(key), .init(codingPath: [], debugDescription: "no value for \(key)"))
        }
        return p
    }

    /// The value position of `key`, or nil when it is absent or null (`decodeIfPresent`).
    private mutating func presentPosition(_ key: StaticString) throws -> Int? {
        guard let p = try find(key), try !reader.isNil(at: p, [RecordKey(key)]) else { return nil }
        return p
    }

    // MARK: Reads

    /// The `String` under `key`.
    public mutating func decode(_ type: String.Type, forKey key: StaticString) throws -> String {
        if let value = cursorRead(key, StringRead.self) { return value }
        return try reader.decodeString(at: position(key), [RecordKey(key)])
    }
    /// The `Int` under `key`.
    public mutating func decode(_ type: Int.Type, forKey key: StaticString) throws -> Int {
        if let value = cursorRead(key, IntRead.self) { return value }
        return try reader.decodeInteger(Int.self, at: position(key), [RecordKey(key)])
    }
    /// The `Int64` under `key`.
    public mutating func decode(_ type: Int64.Type, forKey key: StaticString) throws -> Int64 {
        if let value = cursorRead(key, Int64Read.self) { return value }
        return try reader.decodeInt64(at: position(key), [RecordKey(key)])
    }
    /// The `Int32` under `key`.
    public mutating func decode(_ type: Int32.Type, forKey key: StaticString) throws -> Int32 {
        try reader.decodeInteger(Int32.self, at: position(key), [RecordKey(key)])
    }
    /// The `UInt` under `key`.
    public mutating func decode(_ type: UInt.Type, forKey key: StaticString) throws -> UInt {
        try reader.decodeInteger(UInt.self, at: position(key), [RecordKey(key)])
    }
    /// The `UInt64` under `key`.
    public mutating func decode(_ type: UInt64.Type, forKey key: StaticString) throws -> UInt64 {
        try reader.decodeUInt64(at: position(key), [RecordKey(key)])
    }
    /// The `Double` under `key`.
    public mutating func decode(_ type: Double.Type, forKey key: StaticString) throws -> Double {
        if let value = cursorRead(key, DoubleRead.self) { return value }
        return try reader.decodeDouble(at: position(key), [RecordKey(key)])
    }
    /// The `Bool` under `key`.
    public mutating func decode(_ type: Bool.Type, forKey key: StaticString) throws -> Bool {
        if let value = cursorRead(key, BoolRead.self) { return value }
        return try reader.decodeBool(at: position(key), [RecordKey(key)])
    }
    /// The `Date` under `key` (as `Date`'s `Codable` form stores it).
    public mutating func decode(_ type: Date.Type, forKey key: StaticString) throws -> Date {
        if let value = cursorRead(key, DoubleRead.self) { return Date(timeIntervalSinceReferenceDate: value) }
        return Date(timeIntervalSinceReferenceDate: try reader.decodeDouble(at: position(key), [RecordKey(key)]))
    }

    /// The identifier under `key` (its `Codable` form, `{local?, remote?}`). Inlinable, so that it is
    /// specialized for the entity's identifier type (no generic metadata lookups per record).
    @inlinable
    public mutating func decode<Owner, RemoteValue>(_ type: EntityIdentifier<Owner, RemoteValue>.Type,
                                                    forKey key: StaticString) throws -> EntityIdentifier<Owner, RemoteValue> {
        if RemoteValue.self == Int.self, let parts = quickIntIdentifier(forKey: key) {
            let remote = parts.remote.map { unsafeBitCast($0, to: RemoteValue.self) }
            return EntityIdentifier(localValue: parts.local, remoteValue: remote)
        }
        let parts = try identifierParts(forKey: key)
        var remote: RemoteValue?
        if let p = parts.remote {
            if RemoteValue.self == Int.self { remote = unsafeBitCast(try remoteInt(at: p, key), to: RemoteValue.self) }
            else if RemoteValue.self == String.self { remote = unsafeBitCast(try remoteString(at: p, key), to: RemoteValue.self) }
            else if RemoteValue.self == Int64.self { remote = unsafeBitCast(try remoteInt64(at: p, key), to: RemoteValue.self) }
            else { remote = try remoteValue(RemoteValue.self, at: p, key) }
        }
        if parts.local == nil && remote == nil { throw Self.identifierWithoutValue(key) }
        return EntityIdentifier(localValue: parts.local, remoteValue: remote)
    }

    /// Any `Decodable` value under `key`, through its `init(from:)` (arrays, nested structs, enums).
    public mutating func decode<T: Decodable>(_ type: T.Type, forKey key: StaticString) throws -> T {
        try reader.decodeValue(type, at: position(key), [RecordKey(key)])
    }

    /// The `String` under `key`, or nil when absent or null.
    public mutating func decodeIfPresent(_ type: String.Type, forKey key: StaticString) throws -> String? {
        if let value = cursorRead(key, OptionalRead<StringRead>.self) { return value }
        return try presentPosition(key).map { try reader.decodeString(at: $0, [RecordKey(key)]) }
    }
    /// The `Int` under `key`, or nil when absent or null.
    public mutating func decodeIfPresent(_ type: Int.Type, forKey key: StaticString) throws -> Int? {
        if let value = cursorRead(key, OptionalRead<IntRead>.self) { return value }
        return try presentPosition(key).map { try reader.decodeInteger(Int.self, at: $0, [RecordKey(key)]) }
    }
    /// The `Double` under `key`, or nil when absent or null.
    public mutating func decodeIfPresent(_ type: Double.Type, forKey key: StaticString) throws -> Double? {
        if let value = cursorRead(key, OptionalRead<DoubleRead>.self) { return value }
        return try presentPosition(key).map { try reader.decodeDouble(at: $0, [RecordKey(key)]) }
    }
    /// The `Bool` under `key`, or nil when absent or null.
    public mutating func decodeIfPresent(_ type: Bool.Type, forKey key: StaticString) throws -> Bool? {
        if let value = cursorRead(key, OptionalRead<BoolRead>.self) { return value }
        return try presentPosition(key).map { try reader.decodeBool(at: $0, [RecordKey(key)]) }
    }
    /// The `Date` under `key`, or nil when absent or null.
    public mutating func decodeIfPresent(_ type: Date.Type, forKey key: StaticString) throws -> Date? {
        if let value = cursorRead(key, OptionalRead<DoubleRead>.self) {
            return value.map(Date.init(timeIntervalSinceReferenceDate:))
        }
        return try presentPosition(key).map {
            Date(timeIntervalSinceReferenceDate: try reader.decodeDouble(at: $0, [RecordKey(key)]))
        }
    }
    /// Any `Decodable` value under `key`, or nil when absent or null.
    public mutating func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: StaticString) throws -> T? {
        try presentPosition(key).map { try reader.decodeValue(type, at: $0, [RecordKey(key)]) }
    }

    // MARK: Identifier parts (non-generic, for the inlinable identifier read)

    /// The identifier under `key` when its remote value is an `Int`, read in one pass at the cursor (see
    /// ``cursorRead(_:_:)``); nil where ``identifierParts(forKey:)`` and ``remoteInt(at:_:)`` would answer
    /// otherwise or throw, or when the entry is not at the cursor.
    @usableFromInline
    mutating func quickIntIdentifier(forKey key: StaticString) -> (local: String?, remote: Int?)? {
        cursorRead(key, IntIdentifierRead.self)
    }
    /// The local value and the position of the non-null remote value of the identifier under `key`.
    @usableFromInline
    mutating func identifierParts(forKey key: StaticString) throws -> (local: String?, remote: Int?) {
        try reader.identifierParts(at: position(key), depth: 1, [RecordKey(key)])
    }
    @usableFromInline
    func remoteInt(at position: Int, _ key: StaticString) throws -> Int {
        try reader.decodeInteger(Int.self, at: position, [RecordKey(key), RecordKey("remote")])
    }
    @usableFromInline
    func remoteInt64(at position: Int, _ key: StaticString) throws -> Int64 {
        try reader.decodeInt64(at: position, [RecordKey(key), RecordKey("remote")])
    }
    @usableFromInline
    func remoteString(at position: Int, _ key: StaticString) throws -> String {
        try reader.decodeString(at: position, [RecordKey(key), RecordKey("remote")])
    }
    @usableFromInline
    func remoteValue<T: Decodable>(_ type: T.Type, at position: Int, _ key: StaticString) throws -> T {
        try reader.decodeValue(type, at: position, [RecordKey(key), RecordKey("remote")])
    }
    @usableFromInline
    static func identifierWithoutValue(_ key: StaticString) -> DecodingError {
        Lucid.identifierWithoutValue([RecordKey(key)])
    }
}
