// The filter DSL of the original Lucid: comparisons on index names and on `.identifier`, `>>` (contained in),
// `&&`, `||` and `!`.

/// `index == value` (`.none` matches an absent value or an empty array).
public func == <E: Entity>(lhs: E.IndexName, rhs: EntityIndexValue) -> Query<E>.Filter {
    .comparison(.index(lhs), .equalTo, .index(rhs))
}
/// `!(index == value)`.
public func != <E: Entity>(lhs: E.IndexName, rhs: EntityIndexValue) -> Query<E>.Filter { .not(lhs == rhs) }
/// `index > value` (values of another type never match).
public func > <E: Entity>(lhs: E.IndexName, rhs: EntityIndexValue) -> Query<E>.Filter {
    .comparison(.index(lhs), .greaterThan, .index(rhs))
}
/// `index >= value`.
public func >= <E: Entity>(lhs: E.IndexName, rhs: EntityIndexValue) -> Query<E>.Filter {
    .comparison(.index(lhs), .greaterThanOrEqual, .index(rhs))
}
/// `index < value`.
public func < <E: Entity>(lhs: E.IndexName, rhs: EntityIndexValue) -> Query<E>.Filter {
    .comparison(.index(lhs), .lessThan, .index(rhs))
}
/// `index <= value`.
public func <= <E: Entity>(lhs: E.IndexName, rhs: EntityIndexValue) -> Query<E>.Filter {
    .comparison(.index(lhs), .lessThanOrEqual, .index(rhs))
}
/// `index ~= pattern`: the regular expression (a `.string`) matches the value's text anywhere.
public func ~= <E: Entity>(lhs: E.IndexName, rhs: EntityIndexValue) -> Query<E>.Filter {
    .comparison(.index(lhs), .match, .index(rhs))
}
/// `index >> [values]`: the value (any element of an array) is one of `rhs`.
public func >> <E: Entity>(lhs: E.IndexName, rhs: [EntityIndexValue]) -> Query<E>.Filter {
    .containedIn(.index(lhs), rhs.map { .index($0) })
}

/// `property == value`, e.g. `.identifier == .identifier(id)`.
public func == <E: Entity>(lhs: Query<E>.Property, rhs: Query<E>.Value) -> Query<E>.Filter { .comparison(lhs, .equalTo, rhs) }
/// `!(property == value)`.
public func != <E: Entity>(lhs: Query<E>.Property, rhs: Query<E>.Value) -> Query<E>.Filter { .not(lhs == rhs) }
/// `property > value`.
public func > <E: Entity>(lhs: Query<E>.Property, rhs: Query<E>.Value) -> Query<E>.Filter { .comparison(lhs, .greaterThan, rhs) }
/// `property >= value`.
public func >= <E: Entity>(lhs: Query<E>.Property, rhs: Query<E>.Value) -> Query<E>.Filter {
    .comparison(lhs, .greaterThanOrEqual, rhs)
}
/// `property < value`.
public func < <E: Entity>(lhs: Query<E>.Property, rhs: Query<E>.Value) -> Query<E>.Filter { .comparison(lhs, .lessThan, rhs) }
/// `property <= value`.
public func <= <E: Entity>(lhs: Query<E>.Property, rhs: Query<E>.Value) -> Query<E>.Filter {
    .comparison(lhs, .lessThanOrEqual, rhs)
}
/// `property ~= pattern`.
public func ~= <E: Entity>(lhs: Query<E>.Property, rhs: Query<E>.Value) -> Query<E>.Filter { .comparison(lhs, .match, rhs) }
/// `.identifier >> identifiers`: the entity's identifier (by local, remote or both) is one of `rhs`.
public func >> <E: Entity, S: Sequence>(lhs: Query<E>.Property, rhs: S) -> Query<E>.Filter
where S.Element == E.Identifier {
    .containedIn(lhs, rhs.map { .identifier($0) })
}


extension Query.Filter {
    /// Both filters.
    public static func && (lhs: Query.Filter, rhs: Query.Filter) -> Query.Filter { .and(lhs, rhs) }
    /// Either filter.
    public static func || (lhs: Query.Filter, rhs: Query.Filter) -> Query.Filter { .or(lhs, rhs) }
    /// The negation.
    public static prefix func ! (filter: Query.Filter) -> Query.Filter { .not(filter) }
}
