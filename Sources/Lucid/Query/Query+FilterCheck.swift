/// What validating a query's filter finds, worked out once when the filter is set (``Query/filter``), so that
/// validating the query again (the manager, then the store) costs O(1): the first error, if any, and the
/// patterns of its `~=` comparisons, whose regexes ``QueryEvaluator`` compiles.
///
/// Not generic: a filter is walked once, in the generic code the library cannot specialize for the app's
/// entities (each generic enum it matches looks metadata up at run time, several thousand instructions per
/// walk); the result is kept as plain values.
struct FilterCheck: Sendable, Equatable {
    /// The first operator that cannot apply, in the filter's order (a depth-first walk, left before right).
    var error: QueryError?
    /// The distinct patterns of `~=` comparisons met before the first error, in the order met.
    var patterns: [String] = []
    /// The filter, when it is one comparison of an index with an index value (``IndexComparison``).
    var indexComparison: IndexComparison?
    /// Whether the filter compares the identifier anywhere (`==`, a range, `>>`).
    var comparesIdentifier = false

    init() {}

    init<E>(_ filter: Query<E>.Filter?) {
        guard let filter else { return }
        walk(filter, top: true)
    }

    /// Walks `filter`, the whole filter when `top` (whose shape ``indexComparison`` records: one match of each
    /// generic enum for both).
    private mutating func walk<E>(_ filter: Query<E>.Filter, top: Bool = false) {
        guard error == nil else { return }
        switch filter {
        case .comparison(.identifier, let op, let value):
            comparesIdentifier = true
            guard case .identifier = value else {
                error = .invalidComparison("the identifier can only be compared with an identifier")
                return
            }
            if op == .match { error = .invalidComparison("~= cannot apply to the identifier") }
        case .comparison(.index(let name), let op, let value):
            guard case .index(let v) = value else {
                error = .invalidComparison("index \(name.rawValue) can only be compared with an index value")
                return
            }
            if top { indexComparison = IndexComparison(index: name.rawValue, op: op, value: v) }
            if case .array = v {
                error = .invalidComparison("index \(name.rawValue) compared with an array: use >>")
                return
            }
            if op == .match {
                guard case .string(let pattern) = v else {
                    error = .invalidComparison("~= on \(name.rawValue) needs a .string pattern")
                    return
                }
                if !patterns.contains(pattern) { patterns.append(pattern) }
            }
        case .containedIn(let property, let values):
            if case .identifier = property { comparesIdentifier = true }
            for value in values {
                switch (property, value) {
                case (.identifier, .identifier): continue
                case (.index, .index(.array)): error = .invalidComparison(">> takes scalar values")
                case (.index, .index): continue
                default: error = .invalidComparison(">> values must match the property's kind")
                }
                if error != nil { return }
            }
        case .and(let l, let r), .or(let l, let r):
            walk(l)
            walk(r)
        case .not(let f):
            walk(f)
        case .constant:
            break
        }
    }
}
