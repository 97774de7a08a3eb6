import LucidEngine

extension QueryEvaluator {
    /// A compiled filter: whether an entity passes it.
    typealias Predicate = @Sendable (E) -> Bool

    /// `filter` as a tree of closures, built by ``predicate()`` for the entities a caller tests: matching one then
    /// calls them, where walking the filter for each entity would match `Query<E>.Filter`, a generic enum, whose
    /// payloads' metadata is looked up at run time (a lock-protected cache: threads filtering a scan together
    /// contended for it). The values a comparison needs (the engine term of its operand, the identifiers of a `>>`)
    /// are computed here too. `matchers` holds each `~=` pattern's matcher (a pattern without one matches nothing).
    static func compile(_ filter: Query<E>.Filter, matchers: [String: PatternMatcher]) -> Predicate {
        switch filter {
        case .constant(let b):
            return { _ in b }
        case .and(let l, let r):
            let a = compile(l, matchers: matchers), b = compile(r, matchers: matchers)
            // Cheap comparisons first: a regex only runs on entities the rest of the filter kept.
            if hasRegex(l) && !hasRegex(r) { return { b($0) && a($0) } }
            return { a($0) && b($0) }
        case .or(let l, let r):
            let a = compile(l, matchers: matchers), b = compile(r, matchers: matchers)
            return { a($0) || b($0) }
        case .not(let f):
            let a = compile(f, matchers: matchers)
            return { !a($0) }
        case .comparison(.identifier, let op, .identifier(let id)):
            switch op {
            case .equalTo: return { $0.identifier == id }
            case .greaterThan: return { id < $0.identifier }
            case .greaterThanOrEqual: return { !($0.identifier < id) }
            case .lessThan: return { $0.identifier < id }
            case .lessThanOrEqual: return { !(id < $0.identifier) }
            case .match: return { _ in false }
            }
        case .comparison(.index(let name), .match, .index(let value)):
            guard case .string(let pattern) = value, let matcher = matchers[pattern] else { return { _ in false } }
            return { entity in
                anyScalar(entity.entityIndexValue(for: name)) { $0.matchableString.map(matcher.matches) ?? false }
            }
        case .comparison(.index(let name), let op, .index(let value)):
            let rhs = value.indexValue
            return { entity in
                anyScalar(entity.entityIndexValue(for: name)) { scalar in
                    guard scalar.isSameKind(as: value) else { return false }
                    let order = IndexValue.compare(scalar.indexValue, rhs)
                    switch op {
                    case .equalTo: return order == 0
                    case .greaterThan: return order > 0
                    case .greaterThanOrEqual: return order >= 0
                    case .lessThan: return order < 0
                    case .lessThanOrEqual: return order <= 0
                    case .match: return false
                    }
                }
            }
        case .containedIn(.identifier, let values):
            var found: [E.Identifier] = []
            for case .identifier(let id) in values { found.append(id) }
            let ids = found
            return { entity in ids.contains { $0 == entity.identifier } }
        case .containedIn(.index(let name), let values):
            var found: [(value: EntityIndexValue, term: IndexValue)] = []
            for case .index(let v) in values { found.append((v, v.indexValue)) }
            let terms = found
            return { entity in
                anyScalar(entity.entityIndexValue(for: name)) { scalar in
                    let term = scalar.indexValue
                    return terms.contains { $0.value.isSameKind(as: scalar) && $0.term == term }
                }
            }
        default:
            return { _ in false }
        }
    }

    private static func hasRegex(_ filter: Query<E>.Filter) -> Bool {
        switch filter {
        case .comparison(_, .match, _): true
        case .and(let l, let r), .or(let l, let r): hasRegex(l) || hasRegex(r)
        case .not(let f): hasRegex(f)
        default: false
        }
    }
}

/// Whether `test` holds for one of the scalars a property's value compares by: the elements of an array, the value
/// itself, and `.none` for an absent value or an empty array. Makes no array for a single value.
@inline(__always)
private func anyScalar(_ value: EntityIndexValue, _ test: (EntityIndexValue) -> Bool) -> Bool {
    guard case .array = value else { return test(value) }
    let scalars = value.scalars
    return scalars.isEmpty ? test(.none) : scalars.contains(where: test)
}
