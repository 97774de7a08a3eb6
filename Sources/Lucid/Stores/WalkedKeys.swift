/// Which entries of an index walk name a record the planner reads: those whose key is a candidate (all, without a
/// candidate set), each record once. Shared by ``DiskQueryPlanner``'s walks (its plain walk and the filtered one).
/// Not nested in the generic planner, whose nested types are generic too.
struct WalkedKeys {
    /// The candidates; nil for every record.
    let keys: CandidateKeys?
    /// Whether each record has exactly one entry in the walked index: then the walk meets each record once and no
    /// set of the keys met is kept.
    let distinct: Bool
    private var seen = Set<[UInt8]>()

    init(keys: CandidateKeys?, distinct: Bool) {
        self.keys = keys
        self.distinct = distinct
    }

    /// Whether the record of the entry whose primary key is `raw` is to be read: a candidate, met for the first
    /// time. When deciding needed a copy of the key, it is left in `copy` (for the fetch, which would copy it
    /// again otherwise). - Complexity: O(1) with one term per record and no candidate set (no copy); else one copy
    /// of the key and a hash lookup or two.
    mutating func admits(_ raw: UnsafeRawBufferPointer, copy: inout [UInt8]?) -> Bool {
        guard keys != nil || !distinct else { return true }
        let key = Array(raw)
        guard keys?.contains(key) ?? true, distinct || seen.insert(key).inserted else { return false }
        copy = key
        return true
    }
}
