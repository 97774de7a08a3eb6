/// A key hashed by two halves, either of which may be missing: a local half and a remote half.
///
/// Lucid's identifiers follow the rule `local == (local, remote)`, `remote == (local, remote)`, `local != remote`.
/// Such an equality is not transitive, so these keys cannot be `Hashable`; ``DualHashDictionary`` and
/// ``DualHashSet`` index them by each half instead, so that a lookup by the local half, the remote half or
/// both finds the same entry.
public protocol DualHashable: Sendable {
    /// The type of the local half.
    associatedtype LocalKey: Hashable & Sendable
    /// The type of the remote half.
    associatedtype RemoteKey: Hashable & Sendable

    /// The local half, if known.
    var localKey: LocalKey? { get }
    /// The remote half, if known.
    var remoteKey: RemoteKey? { get }

    /// This key with the halves it misses taken from `other` (which names the same thing).
    func absorbing(_ other: Self) -> Self
}

extension DualHashable {
    /// Whether two keys name the same thing: equal remote halves when both have one, otherwise equal local halves
    /// when both have one, otherwise not.
    /// Inlinable, so that a conforming type's module specializes it (see ``EntityIdentifier``'s `==`).
    @inlinable public func dualEquals(_ other: Self) -> Bool {
        if let r = remoteKey, let o = other.remoteKey { return r == o }
        if let l = localKey, let o = other.localKey { return l == o }
        return false
    }
}
