/// The keys of pages a page cache shard dropped after a single read, remembered for a while without their pages
/// (2Q's "A1out" list: a page missed again while its key is remembered is admitted for good).
///
/// Two generations of a bitmap, a bit per key hash: ``remember(_:generation:)`` sets the key's bit in the current
/// one, and after `generation` keys the current bitmap becomes the previous one and a cleared one the current; so a
/// key is remembered for between `generation` and twice as many keys remembered after it. ``take(_:)`` asks both.
///
/// Bits, not keys: a miss's look-ups touch one or two cache lines of a bitmap of a few hundred bytes, which stays in
/// the processor's caches, where a table of keys (its index and its ring, tens of kilobytes per shard) was a wait
/// for memory on each miss under reads spread over much more data than the cache holds (4.5% of a 1M-record get's
/// samples). The price is false positives: a key whose bit another key set counts as remembered. A bitmap has 16
/// bits per key of the longest generation (and at least 1,024), so that at most about one key in eight that was
/// never remembered is taken as remembered (two full generations of the longest), and at the narrow windows
/// uniformly random reads settle on, about one in 250.
///
/// - Complexity: O(1) per ``take(_:)`` and ``remember(_:generation:)``, but for clearing a bitmap once per
///   generation (O(bits / 64) words, amortized over at least `generation` calls); `2 × bits / 8` bytes, 4 per key
///   of `capacity`.
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
        while 1 << shift < 16 * capacity { shift += 1 }
        bitShift = shift
        current = [UInt64](repeating: 0, count: (1 << shift) / 64)
        previous = current
    }

    /// The bit of `key`: its top bits after a multiplication by an odd constant (the keys of one segment's pages
    /// differ in their low bits).
    @inline(__always) private func bit(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - bitShift))
    }

    /// Whether `key` is remembered (or another key with its bit); forgets it when it is.
    @inline(__always) mutating func take(_ key: UInt64) -> Bool {
        let b = bit(key)
        let word = b >> 6
        let mask = UInt64(1) << UInt64(b & 63)
        let found = (current[word] | previous[word]) & mask != 0
        if found {
            current[word] &= ~mask
            previous[word] &= ~mask
        }
        return found
    }

    /// Remembers `key`; after `generation` keys (at least one) since the last turn, the current generation becomes
    /// the previous one and the one before is forgotten.
    @inline(__always) mutating func remember(_ key: UInt64, generation: Int) {
        let b = bit(key)
        current[b >> 6] |= UInt64(1) << UInt64(b & 63)
        noted += 1
        if noted >= generation { turn() }
    }

    private mutating func turn() {
        swap(&current, &previous)
        current.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        noted = 0
    }
}
