/// The primary keys an index scan has met, so that a range query lists each record once (a record with several
/// terms in the range has an entry under each).
///
/// A query with a small limit meets few keys, and for those a list searched linearly is cheaper than a set,
/// which hashes every key and rehashes as it grows; past `listLimit` keys the list becomes a set.
/// - Complexity: O(min(n, `listLimit`)) key comparisons per insertion while a list, O(1) expected after.
struct SeenKeys {
    /// How many keys the list holds before it becomes a set.
    static let listLimit = 32

    private var list: [[UInt8]] = []
    private var set: Set<[UInt8]>?

    /// Records `key`; whether it was new.
    mutating func insert(_ key: [UInt8]) -> Bool {
        if set != nil { return set!.insert(key).inserted }
        if list.contains(key) { return false }
        if list.count < Self.listLimit {
            if list.isEmpty { list.reserveCapacity(8) }
            list.append(key)
        } else {
            var grown = Set(list)
            grown.insert(key)
            set = grown
            list = []
        }
        return true
    }
}
