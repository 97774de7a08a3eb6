/// A type whose values are identified by an ``EntityIdentifier``.
public protocol EntityIdentifiable {
    /// The identifier type, usually `EntityIdentifier<Self, RemoteValueType>`.
    associatedtype Identifier: EntityIdentifierProtocol
    /// This entity's identifier.
    var identifier: Identifier { get }
}

/// What Lucid needs of an identifier type. ``EntityIdentifier`` is the implementation; the protocol exists so
/// that generic code can name an entity's identifier without its remote value type.
public protocol EntityIdentifierProtocol: DualHashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The key the disk store files the entity under (see ``EntityIdentifier/storageKey``): `r` (0x72) and the
    /// remote value's ordered bytes when the identifier has a remote half, else `l` (0x6C) and the local value's
    /// UTF-8 bytes. The disk store and the memory store's index rely on that first byte.
    var storageKey: [UInt8] { get }
    /// The local value, if any.
    var localValue: String? { get }
    /// The remote value as the server writes it (e.g. in a URL path), if known.
    var remoteValueDescription: String? { get }
    /// The entity type's id (see ``EntityTypeIdentifying``).
    static var identifierTypeID: String { get }
    /// An identifier with only a local value.
    static func local(_ value: String) -> Self
    /// Folds the halves of `other` into this identifier; throws when they conflict.
    mutating func merge(with other: Self) throws
}

extension EntityIdentifier: EntityIdentifierProtocol {}

/// The names of the properties an entity can be searched, ordered and grouped on. Write it as a `String` enum:
/// `enum IndexName: String, EntityIndexName { case title, genre, rating }`. The raw value names the disk
/// store's secondary index (names starting with `__` are reserved).
public protocol EntityIndexName: Hashable, Sendable, CaseIterable, RawRepresentable where RawValue == String {}

/// A type that can be searched by ``EntityIndexName``s.
public protocol EntityIndexing {
    /// The index names of this entity type.
    associatedtype IndexName: EntityIndexName
    /// The value of one indexed property. An array property gives ``EntityIndexValue/array(_:)``, an absent
    /// optional ``EntityIndexValue/none``.
    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue
}

/// An entity: identifiable, indexable, comparable for change detection, safe to send between tasks.
public protocol Entity: EntityIdentifiable, EntityIndexing, EntityTypeIdentifying, Equatable, Sendable {}

/// An entity that local stores (memory, disk) can keep.
///
/// The disk store encodes it with ``EntityCodec`` (a compact binary form of its `Codable` conformance), so
/// adding an optional property later keeps stored entities readable.
public protocol LocalEntity: Entity, Codable {
    /// The entity that results from writing `updated` over this one (default: `updated`). Stores call it when
    /// an entity with the same identifier is already stored; override it to keep fields that `updated` lacks.
    func merging(_ updated: Self) -> Self
    /// Whether writing `updated` over this entity changes anything (default: `updated != self`).
    func shouldOverwrite(with updated: Self) -> Bool
    /// The entity's disk record. Implemented by Lucid: ``EntityCodec`` from `Codable`, or the hand-written
    /// ``EntityRecordCodable/encode(to:)`` when the entity conforms to ``EntityRecordCodable``.
    /// - Throws: `EncodingError`.
    func encodeRecord() throws -> [UInt8]
    /// The entity a disk record holds (see ``encodeRecord()``). A large scan decodes records on several threads at
    /// once: decoding (a hand-written ``EntityRecordCodable/init(from:)`` or `init(from: Decoder)`) must not
    /// share mutable state. - Throws: `DecodingError`.
    static func decodeRecord(_ bytes: [UInt8]) throws -> Self
    /// `identifier.storageKey`, the disk store's key for it. An implementation detail (hence the underscore):
    /// implemented by Lucid, do not implement it. It is a requirement so that it runs specialized for the entity
    /// type: the library's generic code, calling the identifier's own property, would check the identifier type's
    /// metadata at run time on every read (about 360 instructions). O(key length), one allocation.
    static func _storageKey(of identifier: Identifier) -> [UInt8]
    /// `identifier.storageKey` and `identifier.localValue`, for the memory store's index. An implementation detail
    /// like ``_storageKey(of:)``, for the same reason: do not implement it. O(key length), one allocation.
    static func _identifierHalves(of identifier: Identifier) -> (storageKey: [UInt8], localValue: String?)
    /// `entity` in the box the memory store and the disk store's entity cache keep it in. An implementation
    /// detail like ``_storageKey(of:)``, for the same reason (the box type's metadata, looked up at run time in
    /// the library's generic code, about 330 instructions, is cached in code specialized for the entity type): do
    /// not implement it. O(1), one allocation.
    static func _box(_ entity: Self) -> any AnyObject & Sendable
}

extension LocalEntity {
    @inlinable
    public static func _storageKey(of identifier: Identifier) -> [UInt8] { identifier.storageKey }
    @inlinable
    public static func _identifierHalves(of identifier: Identifier) -> (storageKey: [UInt8], localValue: String?) {
        (identifier.storageKey, identifier.localValue)
    }
    @inlinable
    public static func _box(_ entity: Self) -> any AnyObject & Sendable { EntityBox(entity) }
    public func merging(_ updated: Self) -> Self { updated }
    public func shouldOverwrite(with updated: Self) -> Bool { updated != self }
}

/// An entity that can be changed locally, including folding in the remote identifier the server assigns.
public protocol MutableEntity: LocalEntity {
    /// Folds `identifier`'s halves into this entity's identifier (the server's remote id into a local one).
    /// - Throws: ``ManagerError/conflict(_:)`` when the halves conflict.
    mutating func merge(identifier: Identifier) throws
}
