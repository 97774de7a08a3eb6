import Foundation
import LucidEngine

/// How a `~=` pattern is matched against a text. Not nested in ``QueryEvaluator``: a type nested in a generic one
/// is generic too, and its dictionary's metadata would be looked up at run time for every evaluator.
enum PatternMatcher {
    case literal(LiteralPattern)
    case regex(NSRegularExpression)

    func matches(_ text: String) -> Bool {
        switch self {
        case .literal(let literal): literal.isFound(in: text)
        case .regex(let regex): regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
    }
}

/// A validated query, ready to evaluate in memory: regexes compiled once (a pattern of literal text is searched
/// for as bytes instead), comparisons by the index-value total order (so memory and disk stores agree on every
/// result).
struct QueryEvaluator<E: Entity> {
    let query: Query<E>
    /// Each `~=` pattern's matcher: a byte search for literal text (``LiteralPattern``), else its regex.
    private var matchers: [String: PatternMatcher] = [:]

    /// Validates `query` and compiles its regexes. - Complexity: O(1) plus the regexes (the filter was checked
    /// when it was set, see ``FilterCheck``). - Throws: ``QueryError``.
    init(_ query: Query<E>) throws(QueryError) {
        self.query = query
        try query.validateWindow()
        // The patterns met before the filter's first error, in the walk's order: a bad regex among them is the
        // error the walk meets first.
        let check = query.filterCheck
        for pattern in check.patterns {
            if let literal = LiteralPattern(pattern) {
                matchers[pattern] = .literal(literal)
                continue
            }
            do { matchers[pattern] = .regex(try NSRegularExpression(pattern: pattern)) } catch {
                throw .invalidRegex(pattern: pattern, reason: "\(error)")
            }
        }
        if let error = check.error { throw error }
    }

    /// Whether an entity passes the filter: the filter compiled (``compile(_:matchers:)``), once per call, for the
    /// entities a caller then tests. Not compiled when the evaluator is made: most queries a store answers from its
    /// indexes never test an entity. - Complexity: O(size of the filter).
    func predicate() -> Predicate {
        guard let filter = query.filter else { return { _ in true } }
        return Self.compile(filter, matchers: matchers)
    }

    /// The query's result from entities that already pass the filter: uniquely, order, window, groups.
    func result(fromMatching entities: [E], alreadyOrdered: Bool = false, alreadyPaginated: Bool = false)
        -> QueryResult<E> {
        var list = entities
        if query.uniquely {
            var seen = DualHashSet<E.Identifier>()
            list = list.filter { seen.insert($0.identifier) }
        }
        if !alreadyOrdered { list = sorted(list) }
        if !alreadyPaginated { list = Self.window(list, offset: query.offset, limit: query.limit) }
        return QueryResult(entities: list, groupName: query.groupName)
    }

    /// The slice `[offset, offset + limit)` of `list`: `list` itself when that is all of it (a walk that stopped at
    /// the window's end gives no more): no `ArraySlice<E>` made, whose metadata this unspecialized generic code
    /// would look up at run time (with the copy back to an array, about 770 instructions in the micro workload
    /// manager-search-rating-range-limit20, callgrind).
    static func window(_ list: [E], offset: Int?, limit: Int?) -> [E] {
        let start = min(max(offset ?? 0, 0), list.count)
        let end = limit.map { start + min(list.count - start, max($0, 0)) } ?? list.count   // no overflow at .max
        if start == 0 && end == list.count { return list }
        return Array(list[start..<end])
    }

    /// Validates, filters, orders and windows `entities` in memory.
    static func evaluate(_ query: Query<E>, over entities: some Sequence<E>) throws(QueryError) -> QueryResult<E> {
        let evaluator = try QueryEvaluator(query)
        return evaluator.result(fromMatching: entities.filter(evaluator.predicate()))
    }
}

extension Query {
    /// Checks the query: window not negative, regexes compile, operators apply to their properties.
    /// - Throws: ``QueryError``.
    public func validate() throws(QueryError) {
        // Without a `~=` pattern there is no regex to compile: the same checks, in the same order, as making an
        // evaluator, without making one (in the library's unspecialized generic code that looks
        // `QueryEvaluator<E>`'s metadata up and copies the query: `validate()` went from about 1,170 instructions
        // to 40 in the micro workload manager-search-rating-range-limit20, callgrind).
        guard filterCheck.patterns.isEmpty else {
            _ = try QueryEvaluator(self)
            return
        }
        try validateWindow()
        if let error = filterCheck.error { throw error }
    }

    /// Checks the window: the offset, then the limit, not negative. - Throws: ``QueryError``.
    @inline(__always)
    func validateWindow() throws(QueryError) {
        if let offset, offset < 0 { throw .negativeOffset(offset) }
        if let limit, limit < 0 { throw .negativeLimit(limit) }
    }

    /// Runs this query over entities in memory: filter, uniquely, order, window, groups.
    /// - Complexity: O(n log n). - Throws: ``QueryError`` for an invalid query.
    public func evaluate(over entities: some Sequence<E>) throws(QueryError) -> QueryResult<E> {
        try QueryEvaluator.evaluate(self, over: entities)
    }
}
