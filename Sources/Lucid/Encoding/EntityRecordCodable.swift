/// An entity that writes and reads its disk record by hand: the disk store's fast path, as GRDB's
/// `encode(to: inout PersistenceContainer)` and `init(row:)` are GRDB's.
///
/// The record is the same one ``EntityCodec`` writes from the entity's `Codable` conformance when both write
/// the same keys with the same value types: stored data written by either path reads with the other, and
/// adding an optional property later (written with `encodeIfPresent`, read with `decodeIfPresent`) keeps old
/// records readable. Write and read keys in the same order: each read then costs O(1).
///
/// ```swift
/// extension Book: EntityRecordCodable {
///     func encode(to record: inout EntityRecordWriter) throws {
///         try record.encode(identifier, forKey: "identifier")
///         record.encode(title, forKey: "title")
///         record.encodeIfPresent(subtitle, forKey: "subtitle")
///     }
///     init(from record: inout EntityRecordReader) throws {
///         let identifier = try record.decode(Identifier.self, forKey: "identifier")
///         let title = try record.decode(String.self, forKey: "title")
///         let subtitle = try record.decodeIfPresent(String.self, forKey: "subtitle")
///         self.identifier = identifier; self.title = title; self.subtitle = subtitle
///     }
/// }
/// ```
/// Read into locals and store them at the end: storing each `try` in a property makes the init copy the entity
/// once more at its end (a retain and a release per string; 8% of an 11-field decode, measured in Benchmarks/).
/// Without this conformance the disk store uses `Codable` (about 4 times slower to decode, measured in
/// Benchmarks/).
public protocol EntityRecordCodable: LocalEntity {
    /// Writes this entity's properties into `record`. - Throws: what a generic `encode` of `record` throws.
    func encode(to record: inout EntityRecordWriter) throws
    /// Reads an entity from `record`. A large scan calls it on several threads at once (for different records):
    /// it must not share mutable state. - Throws: `DecodingError`, as `init(from: Decoder)` would.
    init(from record: inout EntityRecordReader) throws
}

extension LocalEntity {
    /// The disk record of this entity: ``EntityCodec/encode(_:)``. - Throws: `EncodingError`.
    public func encodeRecord() throws -> [UInt8] { try EntityCodec.encode(self) }
    /// The entity a disk record holds: ``EntityCodec/decode(_:from:)``. - Throws: `DecodingError`.
    public static func decodeRecord(_ bytes: [UInt8]) throws -> Self { try EntityCodec.decode(Self.self, from: bytes) }
}

extension EntityRecordCodable {
    /// The disk record of this entity, written by ``encode(to:)``. - Throws: what ``encode(to:)`` throws.
    public func encodeRecord() throws -> [UInt8] {
        var writer = EntityRecordWriter()
        try encode(to: &writer)
        return writer.finish()
    }
    /// The entity a disk record holds, read by ``init(from:)``. - Throws: `DecodingError`.
    ///
    /// Inlinable, so that the entity's module specializes it (no copies of `Self` through its value witnesses).
    @inlinable
    public static func decodeRecord(_ bytes: [UInt8]) throws -> Self {
        var reader = try EntityRecordReader(bytes)
        do {
            let entity = try Self(from: &reader)
            try reader.finish()
            return entity
        } catch {
            // A malformed record fails with the error of its first malformed byte, whatever the reads met first.
            try reader.checkWhole()
            throw error
        }
    }
}
