/// One end of a range over index values.
public enum IndexBound: Sendable, Hashable {
    case included(IndexValue)
    case excluded(IndexValue)
}

/// A condition on the values of one secondary index.
public enum IndexCondition: Sendable, Hashable {
    /// Entries whose term equals the value.
    case equals(IndexValue)
    /// Entries whose term lies between the bounds (`nil`: unbounded). Covers >, >=, <, <= and between.
    case range(lower: IndexBound?, upper: IndexBound?)
    /// Entries whose term equals one of the values (IN).
    case oneOf([IndexValue])
    /// Entries whose term is a string starting with the prefix.
    case stringPrefix(String)
    /// Every entry of the index.
    case any

    /// `> value`.
    public static func greaterThan(_ v: IndexValue) -> IndexCondition { .range(lower: .excluded(v), upper: nil) }
    /// `>= value`.
    public static func atLeast(_ v: IndexValue) -> IndexCondition { .range(lower: .included(v), upper: nil) }
    /// `< value`.
    public static func lessThan(_ v: IndexValue) -> IndexCondition { .range(lower: nil, upper: .excluded(v)) }
    /// `<= value`.
    public static func atMost(_ v: IndexValue) -> IndexCondition { .range(lower: nil, upper: .included(v)) }
    /// `lower <= term <= upper`.
    public static func between(_ lower: IndexValue, _ upper: IndexValue) -> IndexCondition {
        .range(lower: .included(lower), upper: .included(upper))
    }

    /// The ranges of entry keys (`term ‖ primary key`) this condition covers, in ascending term order.
    var entryRanges: [KeyRange] {
        switch self {
        case .equals(let v):
            return [KeyRange.prefix(v.encoded)]
        case .oneOf(let values):
            let encoded = Set(values.map(\.encoded)).sorted { $0.lexicographicallyPrecedes($1) }
            return encoded.map { KeyRange.prefix($0) }
        case .stringPrefix(let prefix):
            var encoded = IndexValue.string(prefix).encoded
            encoded.removeLast(2)   // drop the terminator: every longer string shares the rest
            return [KeyRange.prefix(encoded)]
        case .any:
            return [KeyRange.all]
        case .range(let lower, let upper):
            var range = KeyRange()
            switch lower {
            case .none: break
            case .included(let v): range.lower = .included(v.encoded)
            case .excluded(let v): range.lower = KeyRange.prefix(v.encoded).upper.map(Self.asLowerBound)
                ?? .excluded(Array(repeating: 0xFF, count: Format.maxIndexTermLength + Format.maxKeyLength + 1))
            }
            switch upper {
            case .none: break
            case .included(let v): range.upper = KeyRange.prefix(v.encoded).upper
            case .excluded(let v): range.upper = .excluded(v.encoded)
            }
            return [range]
        }
    }

    private static func asLowerBound(_ bound: KeyBound) -> KeyBound {
        switch bound {
        case .excluded(let k), .included(let k): .included(k)
        }
    }
}

/// A query over one secondary index of a keyspace: a condition, the order of the index values, and a window.
public struct IndexQuery: Sendable, Hashable {
    /// The keyspace.
    public var keyspace: String
    /// The index name.
    public var index: String
    /// Which entries match.
    public var condition: IndexCondition
    /// Visit terms in descending order (records with equal terms: descending primary key).
    public var reverse: Bool
    /// Matching records to skip.
    public var offset: Int
    /// At most this many records (nil: all).
    public var limit: Int?

    /// A query; by default ascending, from the first match, unlimited.
    public init(keyspace: String, index: String, condition: IndexCondition, reverse: Bool = false,
                offset: Int = 0, limit: Int? = nil) {
        self.keyspace = keyspace
        self.index = index
        self.condition = condition
        self.reverse = reverse
        self.offset = offset
        self.limit = limit
    }
}

/// A boolean combination of index conditions within one keyspace, answered as a set of primary keys.
public indirect enum IndexFilter: Sendable, Hashable {
    /// Records with at least one entry in `index` matching `condition`.
    case match(index: String, IndexCondition)
    /// Records matching every filter (intersection).
    case and([IndexFilter])
    /// Records matching any filter (union).
    case or([IndexFilter])
}

/// One entry of an index: the value and the record it points at.
public struct IndexEntry: Sendable, Hashable {
    /// The indexed value.
    public var value: IndexValue
    /// The record's primary key.
    public var key: [UInt8]
}
