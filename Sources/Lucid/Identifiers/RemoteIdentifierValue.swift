/// A type that can be the remote half of an ``EntityIdentifier``: a server-assigned value with an
/// order-preserving byte form (the disk store keys records by it, so key order is identifier order).
public protocol RemoteIdentifierValue: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// Bytes whose lexicographic order is the value order. - Complexity: O(size).
    var orderedBytes: [UInt8] { get }
    /// Appends ``orderedBytes`` to `bytes` (override for speed: the disk store builds a key per read).
    func appendOrderedBytes(to bytes: inout [UInt8])
    /// Whether this value's ``orderedBytes`` sort before `other`'s (override for speed; must agree).
    func orderedPrecedes(_ other: Self) -> Bool
    /// What identifiers hash and compare this value by: equal exactly when the ``orderedBytes`` are equal.
    associatedtype HashKey: Hashable & Sendable
    /// This value's ``HashKey``.
    var hashKey: HashKey { get }
    /// The disk store's key for an identifier with these halves (``EntityIdentifier/storageKey``). An
    /// implementation detail (hence the underscore): do not implement it, the default is the only correct one. It
    /// is a requirement so that it runs specialized for the concrete type: in the library's generic code, reading
    /// the `Self?` half would look `Optional<Self>`'s metadata up at run time on every read (about 450
    /// instructions). O(key length), one allocation.
    static func _storageKey(remote: Self?, local: String?) -> [UInt8]
}

extension RemoteIdentifierValue {
    @inlinable
    public static func _storageKey(remote: Self?, local: String?) -> [UInt8] {
        var key: [UInt8] = []
        switch remote {
        case .some(let value):
            key.reserveCapacity(16)
            key.append(0x72)
            value.appendOrderedBytes(to: &key)
        case .none:
            key.reserveCapacity(1 + (local?.utf8.count ?? 0))
            key.append(0x6C)
            key.append(contentsOf: (local ?? "").utf8)
        }
        return key
    }

    public func appendOrderedBytes(to bytes: inout [UInt8]) { bytes.append(contentsOf: orderedBytes) }
    public func orderedPrecedes(_ other: Self) -> Bool { orderedBytes.lexicographicallyPrecedes(other.orderedBytes) }
}

extension Int: RemoteIdentifierValue {
    /// Big-endian with the sign bit flipped, so byte order is numeric order.
    public var orderedBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8)
        appendOrderedBytes(to: &bytes)
        return bytes
    }
    public func appendOrderedBytes(to bytes: inout [UInt8]) {
        withUnsafeBytes(of: (UInt64(bitPattern: Int64(self)) ^ (1 << 63)).bigEndian) { bytes.append(contentsOf: $0) }
    }
    public func orderedPrecedes(_ other: Int) -> Bool { self < other }
    public var hashKey: Int { self }
}

extension Int64: RemoteIdentifierValue {
    public func orderedPrecedes(_ other: Int64) -> Bool { self < other }
    public var hashKey: Int64 { self }
    /// Big-endian with the sign bit flipped, so byte order is numeric order.
    public var orderedBytes: [UInt8] { Int(self).orderedBytes }
    public func appendOrderedBytes(to bytes: inout [UInt8]) { Int(self).appendOrderedBytes(to: &bytes) }
}

extension String: RemoteIdentifierValue {
    /// The UTF-8 bytes (identifiers order by these bytes, not by `String`'s `<`).
    public var orderedBytes: [UInt8] { Array(utf8) }
    public func orderedPrecedes(_ other: String) -> Bool { utf8.lexicographicallyPrecedes(other.utf8) }
    /// By UTF-8 bytes, not canonical equivalence.
    public var hashKey: ByteString { ByteString(self) }
}
