/// The records a ``DiskQueryPlanner`` candidate set holds: those of a key set, or every record but those of one.
///
/// A negation (`!=`, `!(...)`) keeps most of the keyspace; holding what it leaves out instead of what it keeps
/// spares building a set of every key, and a walk of an index tests each key against the smaller set. Not
/// nested in the generic planner, whose nested types are generic too (their metadata looked up at run time).
enum CandidateKeys {
    /// The records of these keys.
    case only(Set<[UInt8]>)
    /// Every record of the keyspace except those of these keys (a subset of the keyspace's keys).
    case allBut(Set<[UInt8]>)

    /// No record.
    static let none = CandidateKeys.only([])

    /// Whether the record of `key` (a key of the keyspace) is a candidate. - Complexity: O(key length).
    @inline(__always)
    func contains(_ key: [UInt8]) -> Bool {
        switch self {
        case .only(let keys): keys.contains(key)
        case .allBut(let excluded): !excluded.contains(key)
        }
    }

    /// How many records, of a keyspace of `total`.
    func count(of total: Int) -> Int {
        switch self {
        case .only(let keys): keys.count
        case .allBut(let excluded): max(0, total - excluded.count)
        }
    }

    /// The records in both. - Complexity: O(size of the smaller set held, or of the first `only`).
    func intersection(_ other: CandidateKeys) -> CandidateKeys {
        switch (self, other) {
        case (.only(let a), .only(let b)): .only(a.count < b.count ? a.intersection(b) : b.intersection(a))
        case (.only(let a), .allBut(let b)), (.allBut(let b), .only(let a)): .only(a.subtracting(b))
        case (.allBut(let a), .allBut(let b)): .allBut(a.union(b))
        }
    }

    /// The records in either.
    func union(_ other: CandidateKeys) -> CandidateKeys {
        switch (self, other) {
        case (.only(let a), .only(let b)): .only(a.union(b))
        case (.only(let a), .allBut(let b)), (.allBut(let b), .only(let a)): .allBut(b.subtracting(a))
        case (.allBut(let a), .allBut(let b)): .allBut(a.count < b.count ? a.intersection(b) : b.intersection(a))
        }
    }

    /// The records not in this set.
    var complement: CandidateKeys {
        switch self {
        case .only(let keys): .allBut(keys)
        case .allBut(let excluded): .only(excluded)
        }
    }
}
