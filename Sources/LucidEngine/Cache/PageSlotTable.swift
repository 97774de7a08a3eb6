/// The page cache's index: packed page keys to entry slots, in an open-addressing table with linear probing.
///
/// It replaces a `[Key: Int]` dictionary on the read path, where SipHash (hasher set-up, finalization) cost more
/// than the probe itself: a key is one `UInt64`, hashed by one multiplication. Deletion shifts the following
/// entries back (no tombstones), so lookups never slow down as pages come and go.
///
/// - Complexity: O(1) expected per lookup, insert and removal at a load factor of at most 1/2; growing rehashes
///   every entry (amortized O(1)).
struct PageSlotTable {
    /// A key no page has: segment 0xFFFF_FFFF at offset 0xFFFF_FFFF lies past any segment's end.
    private static let empty = UInt64.max

    private var keys: [UInt64]
    private var values: [Int32]
    private var mask: Int
    private var shift: UInt64
    /// Entries held.
    private(set) var count = 0

    /// An empty table with room for `capacity` entries before it first grows.
    init(capacity: Int = 16) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        keys = [UInt64](repeating: Self.empty, count: size)
        values = [Int32](repeating: 0, count: size)
        mask = size - 1
        shift = UInt64(64 - size.trailingZeroBitCount)
    }

    @inline(__always) private func home(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0xD6E8_FEB8_6659_FD93) >> shift)
    }

    /// The slot stored for `key`, or nil.
    @inline(__always) func value(for key: UInt64) -> Int? {
        var i = home(key)
        while true {
            let k = keys[i]
            if k == key { return Int(values[i]) }
            if k == Self.empty { return nil }
            i = (i + 1) & mask
        }
    }

    /// Stores `value` for `key`, replacing any earlier one. `key` must not be the reserved empty key and `value`
    /// must fit 31 bits (a shard holds far fewer pages).
    mutating func set(_ value: Int, for key: UInt64) {
        precondition(key != Self.empty && value >= 0 && value <= Int(Int32.max))
        if (count + 1) * 2 > keys.count { grow() }
        var i = home(key)
        while keys[i] != Self.empty && keys[i] != key { i = (i + 1) & mask }
        if keys[i] == Self.empty { count += 1 }
        keys[i] = key
        values[i] = Int32(value)
    }

    /// Removes `key` (nothing when absent), moving back the entries of its probe run that no longer need to
    /// sit after the freed slot.
    mutating func remove(_ key: UInt64) {
        var i = home(key)
        while keys[i] != key {
            if keys[i] == Self.empty { return }
            i = (i + 1) & mask
        }
        count -= 1
        var hole = i
        var j = i
        while true {
            j = (j + 1) & mask
            let k = keys[j]
            if k == Self.empty { break }
            // An entry may move back into the hole only if its home does not lie cyclically in (hole, j].
            let h = home(k)
            let stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j)
            if stays { continue }
            keys[hole] = k
            values[hole] = values[j]
            hole = j
        }
        keys[hole] = Self.empty
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        self = PageSlotTable(capacity: oldKeys.count)
        for (k, v) in zip(oldKeys, oldValues) where k != Self.empty { set(Int(v), for: k) }
    }

    /// Every (key, value) pair, in no particular order (for invariant checks).
    var entries: [(key: UInt64, value: Int)] {
        zip(keys, values).filter { $0.0 != Self.empty }.map { (key: $0.0, value: Int($0.1)) }
    }
}
