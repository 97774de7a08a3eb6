import Foundation

/// A type that names an entity type for identifiers: identifiers of two types never compare equal, even with
/// equal values, because each carries its type statically and its ``identifierTypeID`` on disk.
public protocol EntityTypeIdentifying {
    /// A stable name of the entity type (default: the type's name). It names the disk store's keyspace, so
    /// changing it orphans stored data.
    static var identifierTypeID: String { get }
}

extension EntityTypeIdentifying {
    public static var identifierTypeID: String { String(describing: Self.self) }
}

/// The identifier of an entity of type `Owner`: a local value (assigned when the entity is created on this
/// device), a remote value (assigned by the server), or both once the server has answered.
///
/// Equality follows Lucid's rule: `local == (local, remote)`, `remote == (local, remote)`, `local != remote`.
/// Two identifiers with remote values compare by them; otherwise by their local values. Values compare by their
/// bytes (strings by UTF-8, see ``ByteString``), as the disk store keys them. That equality is not
/// transitive, so identifiers are ``DualHashable`` rather than `Hashable`: use ``DualHashDictionary`` and
/// ``DualHashSet`` to key by them.
///
/// Identifiers are ordered by their storage key: those with a remote value by it, after every local-only
/// identifier, which are ordered by local value. The disk store's primary key order is the same order.
public struct EntityIdentifier<Owner: EntityTypeIdentifying, RemoteValue: RemoteIdentifierValue>:
    DualHashable, Equatable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The local value, if this identifier was created locally.
    public private(set) var localValue: String?
    /// The remote value, once the server has assigned one.
    public private(set) var remoteValue: RemoteValue?

    /// An identifier with only a local value.
    public static func local(_ value: String) -> Self { Self(localValue: value, remoteValue: nil) }

    /// An identifier with a remote value and optionally the local value it was created with.
    public static func remote(_ value: RemoteValue, local: String? = nil) -> Self {
        Self(localValue: local, remoteValue: value)
    }

    /// A new, unique local identifier (a random UUID).
    public static func newLocal() -> Self { .local(UUID().uuidString.lowercased()) }

    @usableFromInline
    init(localValue: String?, remoteValue: RemoteValue?) {
        self.localValue = localValue
        self.remoteValue = remoteValue
    }

    /// The entity type's id (see ``EntityTypeIdentifying``).
    public static var identifierTypeID: String { Owner.identifierTypeID }

    // Inlinable, with `==`, `<` and `storageKey`: the app's module specializes them for its entity types. The
    // library's own copies run unspecialized for them, looking up the metadata of every `Optional` they bind at
    // run time: about 1,500 instructions per comparison (callgrind), a few per continuous-query update.
    @inlinable public var localKey: ByteString? { localValue.map(ByteString.init) }
    @inlinable public var remoteKey: RemoteValue.HashKey? { remoteValue?.hashKey }
    public var remoteValueDescription: String? { remoteValue?.description }

    /// This identifier with the halves it lacks taken from `other`.
    public func absorbing(_ other: Self) -> Self {
        Self(localValue: localValue ?? other.localValue, remoteValue: remoteValue ?? other.remoteValue)
    }

    /// Folds a server-assigned remote value (or a known local value) into this identifier.
    /// - Throws: ``ManagerError/conflict(_:)`` when both carry different values for the same half.
    public mutating func merge(with other: Self) throws {
        if let r = remoteValue, let o = other.remoteValue, r != o {
            throw ManagerError.conflict("remote identifiers \(r) and \(o) differ")
        }
        if let l = localValue, let o = other.localValue, l != o {
            throw ManagerError.conflict("local identifiers \(l) and \(o) differ")
        }
        self = absorbing(other)
    }

    @inlinable public static func == (lhs: Self, rhs: Self) -> Bool { lhs.dualEquals(rhs) }

    @inlinable public static func < (lhs: Self, rhs: Self) -> Bool {
        switch (lhs.remoteValue, rhs.remoteValue) {
        case let (l?, r?): return l.orderedPrecedes(r)
        case (nil, _?): return true
        case (_?, nil): return false
        case (nil, nil): return (lhs.localValue ?? "").utf8.lexicographicallyPrecedes((rhs.localValue ?? "").utf8)
        }
    }

    /// The key under which the disk store keeps the entity: `r` + remote bytes, or `l` + local UTF-8.
    @inlinable public var storageKey: [UInt8] { RemoteValue._storageKey(remote: remoteValue, local: localValue) }

    public var description: String {
        switch (localValue, remoteValue) {
        case let (l?, r?): "\(Owner.identifierTypeID)(local: \(l), remote: \(r))"
        case let (nil, r?): "\(Owner.identifierTypeID)(remote: \(r))"
        case let (l?, nil): "\(Owner.identifierTypeID)(local: \(l))"
        case (nil, nil): "\(Owner.identifierTypeID)(none)"
        }
    }

    private enum CodingKeys: String, CodingKey { case local, remote }

    public init(from decoder: any Decoder) throws {
        // A stored record: the same reads and errors without a keyed container (see BinaryValueDecoder).
        if let binary = decoder as? BinaryValueDecoder {
            self = try binary.decodeIdentifier(Self.self)
            return
        }
        self = try Self.decodeKeyed(from: decoder)
    }

    /// The identifier of any other decoder (JSON from a server, ...), from its keyed container. Apart, so that a
    /// stored record's read does not look up the metadata of the container and its keys, which this generic type's
    /// code would otherwise do on entry (about 1,500 instructions per identifier, counted by callgrind).
    @inline(never)
    private static func decodeKeyed(from decoder: any Decoder) throws -> Self {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let local = try container.decodeIfPresent(String.self, forKey: .local)
        let remote = try container.decodeIfPresent(RemoteValue.self, forKey: .remote)
        if local == nil && remote == nil { throw identifierWithoutValue(decoder.codingPath) }
        return Self(localValue: local, remoteValue: remote)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(localValue, forKey: .local)
        try container.encodeIfPresent(remoteValue, forKey: .remote)
    }
}

/// The error of an identifier container that holds neither a local nor a remote value, at `codingPath` (the
/// identifier's): the same from every reader of identifiers.
func identifierWithoutValue(_ codingPath: [any CodingKey]) -> DecodingError {
    .dataCorrupted(.init(codingPath: codingPath, debugDescription: "an identifier needs a local or remote value"))
}
