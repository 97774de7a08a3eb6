/// An identifier's two halves as bytes, for the memory store's index (``InMemoryStore``) and the write clock: the
/// disk store's key for it (`r` + the remote value's ordered bytes) and the local half as its UTF-8 bytes.
///
/// Equal halves are equal identifiers' halves: a remote value's ordered bytes are equal exactly when its
/// ``RemoteIdentifierValue/HashKey`` is, and a local value compares by its UTF-8 bytes (``ByteString``), so a
/// ``DualHashDictionary`` keyed by these finds what one keyed by the identifiers finds. It is not generic, so the
/// library's code indexes it with no run-time metadata lookups, which a dictionary keyed by an entity's identifier
/// type makes at every use in code that is generic over the entity (a few hundred instructions each).
struct IdentifierHalves: DualHashable {
    /// The local half's UTF-8 bytes.
    let local: ByteKey?
    /// The disk store's key for the remote half.
    let remote: ByteKey?

    var localKey: ByteKey? { local }
    var remoteKey: ByteKey? { remote }

    private init(local: ByteKey?, remote: ByteKey?) {
        self.local = local
        self.remote = remote
    }

    /// The halves of an identifier whose disk key is `storageKey` (``EntityIdentifierProtocol/storageKey``) and
    /// whose local value is `localValue`: the storage key is the remote half's when it starts with `r`, else the
    /// identifier has no remote half. O(key length), an allocation per half.
    init(storageKey: [UInt8], localValue: String?) {
        self.init(local: localValue.map { ByteKey(Array($0.utf8)) },
                  remote: storageKey.first == 0x72 ? ByteKey(storageKey) : nil)
    }

    /// The halves of `identifier`, worked out by code specialized for the entity type
    /// (``LocalEntity/_identifierHalves(of:)``).
    init<E: LocalEntity>(_ identifier: E.Identifier, of type: E.Type) {
        let halves = E._identifierHalves(of: identifier)
        self.init(storageKey: halves.storageKey, localValue: halves.localValue)
    }

    func absorbing(_ other: IdentifierHalves) -> IdentifierHalves {
        IdentifierHalves(local: local ?? other.local, remote: remote ?? other.remote)
    }
}
