/// Byte-string keys packed into one buffer (one allocation for all of them, not one per key), in the order
/// they were appended. Built by the writer to hand a commit group's keys to
/// `BTree.updateValues(_:_:replaced:)` once sorted (`sortedOrder()`, `reordered(_:)`).
struct PackedKeys: Sendable {
    /// The concatenated key bytes; key `i` occupies `bytes[start(i) ..< ends[i]]`.
    private(set) var bytes: [UInt8] = []
    /// `ends[i]` is the offset just past key `i`.
    private(set) var ends: [Int] = []

    /// An empty set of keys with room for about `keys` keys of `bytes` bytes in total.
    init(reservingKeys keys: Int = 0, bytes byteCount: Int = 0) {
        ends.reserveCapacity(keys)
        bytes.reserveCapacity(byteCount)
    }

    /// Number of keys. O(1).
    var count: Int { ends.count }
    var isEmpty: Bool { ends.isEmpty }

    /// Appends `key` as the last key. O(key length), amortized.
    mutating func append(_ key: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: key.assumingMemoryBound(to: UInt8.self))
        ends.append(bytes.count)
    }

    /// Appends the concatenation `prefix ‖ key` as one key (an index entry: term ‖ primary key).
    mutating func append(_ prefix: UnsafeRawBufferPointer, _ key: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: prefix.assumingMemoryBound(to: UInt8.self))
        bytes.append(contentsOf: key.assumingMemoryBound(to: UInt8.self))
        ends.append(bytes.count)
    }

    /// Calls `body` with a view of the keys, valid only during the call.
    func withView<R>(_ body: (View) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { b in try ends.withUnsafeBufferPointer { e in try body(View(bytes: b, ends: e)) } }
    }

    /// The key indices in ascending key order; equal keys keep their append order (a stable sort). O(n log n)
    /// comparisons, most of them on cached 8-byte heads; O(n) when the keys were appended in order.
    func sortedOrder() -> [Int] {
        withView { view in
            if view.isSorted { return Array(0 ..< count) }
            // Sorting (head, index) pairs keeps most comparisons on two integers held in the elements.
            var pairs = (0 ..< count).map { (head: BTreeLayout.head(of: view[$0]), index: $0) }
            pairs.sort { a, b in
                if a.head != b.head { return a.head < b.head }
                let c = BTreeLayout.compare(view[a.index], view[b.index])
                return c != 0 ? c < 0 : a.index < b.index
            }
            return pairs.map(\.index)
        }
    }

    /// The keys listed in `order`, in that order. O(total bytes).
    func reordered(_ order: [Int]) -> PackedKeys {
        var result = PackedKeys(reservingKeys: order.count, bytes: bytes.count)
        withView { view in for i in order { result.append(view[i]) } }
        return result
    }

    /// Read-only access to the keys without copying them.
    struct View {
        let bytes: UnsafeRawBufferPointer
        let ends: UnsafeBufferPointer<Int>

        var count: Int { ends.count }

        /// The bytes of key `i`. O(1).
        @inline(__always)
        subscript(i: Int) -> UnsafeRawBufferPointer {
            let start = i == 0 ? 0 : ends[i &- 1]
            return UnsafeRawBufferPointer(rebasing: bytes[start ..< ends[i]])
        }

        /// Whether every key is strictly greater than the one before it. O(n) comparisons.
        var isSorted: Bool {
            var i = 1
            while i < count {
                if BTreeLayout.compare(self[i &- 1], self[i]) >= 0 { return false }
                i &+= 1
            }
            return true
        }

        /// The first index in `range` whose key is `>= key` (the range must be sorted). O(log range.count).
        func firstIndex(notBelow key: UnsafeRawBufferPointer, in range: Range<Int>) -> Int {
            var low = range.lowerBound, high = range.upperBound
            while low < high {
                let mid = (low &+ high) &>> 1
                if BTreeLayout.compare(self[mid], key) < 0 { low = mid &+ 1 } else { high = mid }
            }
            return low
        }
    }
}
