/// Bytes as a dictionary key, hashed in one call over the whole buffer.
///
/// `[UInt8]`'s own `Hashable` feeds the hasher one byte per call; for the storage keys the write clock and a
/// disk batch hash once or twice per entity written, that was most of their cost (a 17-byte key: one hasher
/// call instead of eighteen). Equality is the bytes'. O(n) to hash and compare.
struct ByteKey: Hashable, Sendable {
    /// The bytes.
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The bytes alone, not their count: right for a key hashed whole. A type that hashes two of them in a row
    /// must add the counts, or every split of the same bytes collides.
    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
