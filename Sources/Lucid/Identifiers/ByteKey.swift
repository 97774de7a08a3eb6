/// Bytes as a dictionary key, hashed in one call over the whole buffer.
///
/// `[UInt8]`'s own `Hashable` feeds the hasher one byte per call; for the storage keys the write clock and a
/// disk batch hash once or twice per entity written, and the memory store's index six times for a get that misses
/// and caches the disk's entity, that was most of their cost (a 17-byte key: one hasher call instead of eighteen).
/// The bytes go through ``ByteHash`` first and the hasher takes its one word (cheaper than `Hasher`'s own pass over
/// the bytes); the hash is not stored, so a key stays one array reference. Equality is the bytes'. O(n) to hash
/// and compare.
struct ByteKey: Hashable, Sendable {
    /// The bytes.
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// ``ByteHash`` of the bytes (their count included).
    func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.withUnsafeBytes(ByteHash.hash))
    }
}
