/// Keys gathered for one probe of the entity cache under one hold of its lock
/// (``EntityCacheTable/probe(_:at:into:)``): for each its ``EntityCacheKeyHead`` and its ``EntityCacheKey`` hash,
/// and the bytes of the keys longer than a head holds end to end in one array. A query's walk hands its keys'
/// bytes from the index for the moment of a call; staging keeps them without an allocation per key (a key of up
/// to 16 bytes, an identifier's storage key, is whole in its head), so that the cache can be probed for all of
/// them together and the probes' waits for memory overlap. Not generic.
struct StagedKeys {
    struct Entry {
        var head: EntityCacheKeyHead
        var hash: UInt64
        /// Where the key's bytes start in `long` (keys longer than a head only).
        var start: Int
    }

    private var entries: [Entry] = []
    private var long: [UInt8] = []

    /// No keys, and no room yet.
    init() {}

    /// Makes room for `capacity` keys (none is made for fewer than are staged).
    mutating func reserve(_ capacity: Int) { entries.reserveCapacity(capacity) }

    /// Keys staged.
    var count: Int { entries.count }

    var isEmpty: Bool { entries.isEmpty }

    /// Stages the key `raw`. - Complexity: O(key length) amortized; no allocation for a key of up to 16 bytes
    /// once room is made.
    @inline(__always)
    mutating func append(_ raw: UnsafeRawBufferPointer) {
        let head = EntityCacheKeyHead(raw)
        let start = long.count
        if !head.isWhole { long.append(contentsOf: raw) }
        entries.append(Entry(head: head, hash: EntityCacheKey.hash(raw), start: start))
    }

    /// The head and hash of key `i`. - Complexity: O(1).
    @inline(__always)
    subscript(i: Int) -> Entry { entries[i] }

    /// Calls `body` with the bytes of key `i`, which must be longer than its head (valid only during the call).
    /// - Complexity: O(1).
    @inline(__always)
    func withLongKey<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let entry = entries[i]
        let end = entry.start + entry.head.count
        return long.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[entry.start ..< end])) }
    }

    /// A copy of key `i`. - Complexity: O(key length).
    func key(_ i: Int) -> [UInt8] {
        let head = entries[i].head
        return head.isWhole ? head.bytes : withLongKey(i) { Array($0) }
    }

    /// Forgets every key, keeping the room.
    mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)
        long.removeAll(keepingCapacity: true)
    }
}
