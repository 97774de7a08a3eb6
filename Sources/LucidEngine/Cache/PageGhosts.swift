/// The keys of pages a page cache shard dropped after a single read, remembered for a while without their pages
/// (2Q's "A1out" list: a page missed again while its key is remembered is admitted for good).
///
/// Two generations of a bitmap, two bits per key in one 64-bit word: ``remember(_:generation:)`` sets the key's bits
/// in the current one, and after `generation` keys the current bitmap becomes the previous one and a cleared one the
/// current; so a key is remembered for between `generation` and twice as many keys remembered after it.
/// ``take(_:)`` asks both.
///
/// Bits, not keys: a miss's look-ups touch one word of each of two bitmaps of a few kilobytes, which stay in the
/// processor's caches, where a table of keys (its index and its ring) was a wait for memory on each miss under reads
/// spread over much more data than the cache holds (5.7% of a 1M-record get's samples, its look-ups and removals).
/// The price is false positives: a key whose bits other keys set counts as remembered, and its page is admitted
/// (evicting another) instead of going on probation. A bitmap has 32 bits per key of the longest generation (and at
/// least 1,024), so that a key never remembered is taken as remembered about once in 70 look-ups when both
/// generations are full at the widest window, and far less at the narrow windows uniformly random reads settle on.
/// A take clears the key's bits, which may forget another key that shares them (a page not admitted).
///
/// - Complexity: O(1) per ``take(_:)`` and ``remember(_:generation:)``, but for clearing a bitmap once per
///   generation (O(bits / 64) words, amortized over at least `generation` calls); 8 to 16 bytes per key of
///   `capacity`, at least 256.
struct PageGhosts {
    private var current: [UInt64]
    private var previous: [UInt64]
    /// Keys remembered in the current generation.
    private var noted = 0
    /// log2 of the bits per bitmap.
    private let bitShift: Int

    /// Ghosts for generations of up to `capacity` keys.
    init(capacity: Int) {
        var shift = 10
        while 1 << shift < 32 * capacity { shift += 1 }
        bitShift = shift
        current = [UInt64](repeating: 0, count: (1 << shift) / 64)
        previous = current
    }

    /// The word of `key` (top bits after a multiplication by an odd constant: the keys of one segment's pages differ
    /// in their low bits) and its two bits there (from bits below the word's; one bit when they coincide).
    @inline(__always) private func place(_ key: UInt64) -> (word: Int, mask: UInt64) {
        let h = key &* 0x9E37_79B9_7F4A_7C15
        let word = Int(truncatingIfNeeded: h >> UInt64(64 - (bitShift - 6)))
        let mask = UInt64(1) << ((h >> 20) & 63) | UInt64(1) << ((h >> 26) & 63)
        return (word, mask)
    }

    /// Whether `key` is remembered (or other keys set its bits); forgets it when it is.
    @inline(__always) mutating func take(_ key: UInt64) -> Bool {
        let (word, mask) = place(key)
        let found = current[word] & mask == mask || previous[word] & mask == mask
        if found {
            current[word] &= ~mask
            previous[word] &= ~mask
        }
        return found
    }

    /// Remembers `key`; after `generation` keys (at least one) since the last turn, the current generation becomes
    /// the previous one and the one before is forgotten.
    @inline(__always) mutating func remember(_ key: UInt64, generation: Int) {
        let (word, mask) = place(key)
        current[word] |= mask
        noted += 1
        if noted >= generation { turn() }
    }

    private mutating func turn() {
        swap(&current, &previous)
        current.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        noted = 0
    }
}
