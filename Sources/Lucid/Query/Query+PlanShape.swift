/// A filter that is one comparison of an index with an index value (`.genre == .string("x")`), as plain values:
/// what ``DiskQueryPlanner`` answers from one index walk. Recorded by ``FilterCheck`` when the filter is set.
///
/// Not generic, like ``FilterCheck``: the planner runs in generic code the library cannot specialize for the
/// app's entities, where matching `Query<E>.Filter`, `Property` or `Value` looks their metadata (and the
/// payload tuples') up at run time, some 300 instructions each.
struct IndexComparison: Sendable, Equatable {
    /// The index's name (its raw value).
    var index: String
    var op: QueryOperator
    var value: EntityIndexValue
}

/// What the disk planner needs of a query's order, worked out when the order is set (``Query/order``), as plain
/// values (see ``IndexComparison`` for why).
struct OrderShape: Sendable, Equatable {
    /// `true` when the result is in ascending identifier order (the first key is ascending by identifier or
    /// `.natural`, or there is none), `false` when descending by identifier, nil for any other first key.
    var byIdentifier: Bool?
    /// The index the first key sorts by, ascending or descending, if it is an index.
    var firstIndex: String?
    /// Whether the first key is descending.
    var descending = false
    /// How many keys.
    var count = 0

    /// The shape of the default order, `[.asc(by: .identifier)]`.
    static var identifierAscending: OrderShape { OrderShape(byIdentifier: true, count: 1) }

    private init(byIdentifier: Bool, count: Int) {
        self.byIdentifier = byIdentifier
        self.count = count
    }

    init<E>(_ order: [Query<E>.Order]) {
        count = order.count
        guard count > 0 else {
            byIdentifier = true
            return
        }
        // `order[0]`, not `order.first`: no `Optional<Order>` metadata to look up.
        switch order[0] {
        case .asc(by: .identifier), .natural:
            byIdentifier = true
        case .desc(by: .identifier):
            byIdentifier = false
            descending = true
        case .asc(by: .index(let name)):
            firstIndex = name.rawValue
        case .desc(by: .index(let name)):
            firstIndex = name.rawValue
            descending = true
        case .identifiers:
            break
        }
    }
}
