/// A query over entities of type `E`: a filter, an order, an optional grouping, a window (offset and limit) and
/// an app-defined context. Build it with the DSL of the original Lucid:
///
/// ```swift
/// Query<Book>.filter(.genre == .string("fantasy") && .rating >= .double(4))
///     .order([.desc(by: .rating), .asc(by: .title)])
///     .with(offset: 20).with(limit: 10)
/// ```
///
/// The default order is ascending by identifier, so every result has a deterministic order. Evaluation
/// applies, in this order: filter, `uniquely`, order, offset and limit, grouping. ``validate()`` reports an
/// invalid query (a negative window, a malformed regex, an operator that cannot apply) as a ``QueryError``;
/// every store validates before it runs a query.
public struct Query<E: Entity>: Sendable, Equatable {
    /// Entities matching this filter (nil: all). Setting it checks it once (O(size of the filter)), so that
    /// ``validate()`` and every store's validation cost O(1) afterwards.
    public var filter: Filter? {
        didSet { filterCheck = FilterCheck(filter) }
    }
    /// What validating `filter` finds (see ``FilterCheck``).
    private(set) var filterCheck: FilterCheck
    /// Group the result by this index's value.
    public var groupedBy: E.IndexName? {
        get { groupName.flatMap(E.IndexName.init(rawValue:)) }
        set { groupName = newValue?.rawValue }
    }
    /// `groupedBy`'s raw value. Stored as a `String`, not an `E.IndexName?`, so that `Query`'s layout does not
    /// depend on `E`: the library's generic code, unspecialized for the app's entities, then copies and destroys
    /// queries without looking `Query<E>`'s metadata up at run time (about 300 instructions a lookup).
    private(set) var groupName: String?
    /// Keep only the first occurrence of each identifier. (The original keeps only *repeated* ones, bug 1.15.1.)
    public var uniquely: Bool
    /// Sort keys, the first one primary. Default: ascending by identifier.
    public var order: [Order] {
        get { explicitOrder ?? [.asc(by: .identifier)] }
        set {
            explicitOrder = newValue
            orderShape = OrderShape(newValue)
        }
    }
    /// `order` when it was given; nil for the default, `[.asc(by: .identifier)]`, which is then made only when
    /// read (the planners read ``orderShape``). Building that array in the library's unspecialized generic code
    /// looks up the metadata of `Order` and of its array storage at run time: not storing it took the micro
    /// workload manager-search-rating-range-limit20 (whose query is made by `Query.filter(_:)`, then given its own
    /// order) from 45,800 instructions to 43,700, callgrind.
    private var explicitOrder: [Order]?
    /// What the disk planner needs of `order` (see ``OrderShape``).
    private(set) var orderShape: OrderShape
    /// Skip this many entities of the ordered result.
    public var offset: Int?
    /// Keep at most this many entities of the ordered result.
    public var limit: Int?
    /// An app-defined tag (e.g. which remote endpoint serves the query).
    public var context: String?

    /// A query; by default every entity, ascending by identifier.
    public init(filter: Filter? = nil, groupedBy: E.IndexName? = nil, uniquely: Bool = false,
                order: [Order] = [.asc(by: .identifier)], offset: Int? = nil, limit: Int? = nil,
                context: String? = nil) {
        self.filter = filter
        self.filterCheck = FilterCheck(filter)
        self.groupName = groupedBy?.rawValue
        self.uniquely = uniquely
        self.explicitOrder = order
        self.orderShape = OrderShape(order)
        self.offset = offset
        self.limit = limit
        self.context = context
    }

    /// A query of `filter` with every other property at its default, as
    /// ``init(filter:groupedBy:uniquely:order:offset:limit:context:)`` makes it, without its generic work: the
    /// default order's shape is known (``OrderShape/identifierAscending``) rather than worked out by matching
    /// `Order`, no default order is stored (see `explicitOrder`), and no `E.IndexName?` is taken apart for the
    /// group. In the library's unspecialized generic code each of those looks metadata up at run time: with both,
    /// `Query.filter(_:)` went from about 4,900 instructions to 3,200 (micro workload
    /// manager-search-rating-range-limit20, callgrind).
    private init(onlyFilter filter: Filter?) {
        self.filter = filter
        self.filterCheck = FilterCheck(filter)
        self.groupName = nil
        self.uniquely = false
        self.explicitOrder = nil
        self.orderShape = .identifierAscending
        self.offset = nil
        self.limit = nil
        self.context = nil
    }

    /// Every entity.
    public static var all: Query { Query(onlyFilter: nil) }

    /// The entity with this identifier.
    public static func identifier(_ identifier: E.Identifier) -> Query {
        Query(onlyFilter: .comparison(.identifier, .equalTo, .identifier(identifier)))
    }

    /// The entities with these identifiers, in the order given.
    public static func identifiers<S: Sequence>(_ identifiers: S) -> Query where S.Element == E.Identifier {
        let ids = Array(identifiers)
        return Query(filter: .containedIn(.identifier, ids.map { .identifier($0) }), order: [.identifiers(ids)])
    }

    /// The entities matching `filter`.
    public static func filter(_ filter: Filter) -> Query { Query(onlyFilter: filter) }

    /// This query with `filter` (replacing any filter).
    public func filter(_ filter: Filter) -> Query { var q = self; q.filter = filter; return q }
    /// This query with another order.
    public func order(_ order: [Order]) -> Query { var q = self; q.order = order; return q }
    /// This query grouped by an index's value.
    public func grouped(by index: E.IndexName) -> Query { var q = self; q.groupedBy = index; return q }
    /// This query skipping `offset` entities.
    public func with(offset: Int) -> Query { var q = self; q.offset = offset; return q }
    /// This query returning at most `limit` entities.
    public func with(limit: Int) -> Query { var q = self; q.limit = limit; return q }
    /// This query tagged with an app-defined context.
    public func with(context: String) -> Query { var q = self; q.context = context; return q }
    /// This query keeping only the first occurrence of each identifier.
    public func uniquelyIdentified() -> Query { var q = self; q.uniquely = true; return q }

    /// The single identifier this query asks for, when its filter is exactly `.identifier == id`.
    public var identifier: E.Identifier? {
        if case .comparison(.identifier, .equalTo, .identifier(let id))? = filter { return id }
        return nil
    }

    /// The identifiers this query asks for, when its filter names identifiers only (`==`, `>>`, `||` of those).
    public var identifiers: [E.Identifier]? { filter.flatMap { $0.identifiersOnly } }

    /// Whether the window (offset/limit) is set.
    var isPaginated: Bool { (offset ?? 0) > 0 || limit != nil }

    /// Whether the two queries have the same filter, grouping, `uniquely`, order, window and context (a default
    /// order equals the same order given).
    public static func == (a: Query, b: Query) -> Bool {
        a.filter == b.filter && a.groupName == b.groupName && a.uniquely == b.uniquely && a.order == b.order
            && a.offset == b.offset && a.limit == b.limit && a.context == b.context
    }
}

extension Query {
    /// A property a filter or order can name.
    public enum Property: Sendable, Equatable {
        /// The entity's identifier.
        case identifier
        /// An indexed property.
        case index(E.IndexName)
    }

    /// A value on the right side of a comparison.
    public enum Value: Sendable, Equatable {
        /// An identifier (compared with ``Property/identifier``).
        case identifier(E.Identifier)
        /// An index value (compared with ``Property/index(_:)``).
        case index(EntityIndexValue)
    }

    /// A comparison operator (``QueryOperator``, the same for every entity type).
    public typealias Operator = QueryOperator

    /// A filter expression.
    public indirect enum Filter: Sendable, Equatable {
        /// `property op value`. An array property matches when any element does.
        case comparison(Property, Operator, Value)
        /// `property >> values`: the property (any element of an array) equals one of the values.
        case containedIn(Property, [Value])
        case and(Filter, Filter)
        case or(Filter, Filter)
        case not(Filter)
        /// Always true or always false (the original's `.value(.bool(_))`).
        case constant(Bool)

        var identifiersOnly: [E.Identifier]? {
            switch self {
            case .comparison(.identifier, .equalTo, .identifier(let id)): return [id]
            case .containedIn(.identifier, let values):
                var ids: [E.Identifier] = []
                for case .identifier(let id) in values { ids.append(id) }
                return ids.count == values.count ? ids : nil
            case .or(let l, let r):
                guard let a = l.identifiersOnly, let b = r.identifiersOnly else { return nil }
                return a + b
            default: return nil
            }
        }
    }

    /// A sort key.
    public enum Order: Sendable, Equatable {
        case asc(by: Property)
        case desc(by: Property)
        /// The order the store serves (remote stores: the server's; local stores: identifier order).
        case natural
        /// These identifiers first, in this order; the others after them.
        case identifiers([E.Identifier])

        /// Ascending by an indexed property.
        public static func asc(by index: E.IndexName) -> Order { .asc(by: .index(index)) }
        /// Descending by an indexed property.
        public static func desc(by index: E.IndexName) -> Order { .desc(by: .index(index)) }
    }
}

/// A comparison operator of a ``Query`` filter (`Query<E>.Operator`). Not nested in the generic `Query`, so that
/// comparing operators in the library's generic code needs no metadata looked up at run time.
public enum QueryOperator: String, Sendable, Equatable {
    case equalTo = "=="
    case greaterThan = ">"
    case greaterThanOrEqual = ">="
    case lessThan = "<"
    case lessThanOrEqual = "<="
    /// Regular expression search (`~=`): the pattern may match anywhere; anchor it with `^…$`.
    case match = "~="
}
