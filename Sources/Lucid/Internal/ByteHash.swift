/// A fast hash of byte strings, for the data layer's own tables and keys (``EntityCacheKey``, ``ByteKey``):
/// one multiply and shift per 8 bytes and a full avalanche at the end, seeded per process, so that every key
/// byte moves the low bits a table buckets by (keys that differ only in their last bytes spread like any others)
/// and an adversary who does not know the seed cannot aim keys at one bucket.
///
/// Cheaper than `Hasher` for the short keys the data layer uses (an identifier's 9-byte storage key: about 30
/// instructions, against about 220 for `Hasher.combine(bytes:)` and its finalization).
enum ByteHash {
    private static let seed = UInt64.random(in: .min ... .max)

    /// The hash of `raw`, its length included. O(raw.count).
    static func hash(_ raw: UnsafeRawBufferPointer) -> UInt64 {
        var h = seed ^ UInt64(raw.count)
        var i = 0
        while i + 8 <= raw.count {
            h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < raw.count {
            tail |= UInt64(raw[i]) << shift
            shift += 8
            i += 1
        }
        h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
        h ^= h >> 29
        // Final avalanche (the tail's high bytes only reached the high bits so far).
        h ^= h >> 32
        h &*= 0xD6E8_FEB8_6659_FD93
        h ^= h >> 32
        return h
    }
}
