import LucidEngine

/// Answers one query on a ``DiskStore`` snapshot from its indexes (see the store's documentation for what
/// each part of a filter costs).
struct DiskQueryPlanner<E: LocalEntity> {
    let store: DiskStore<E>
    let snapshot: Snapshot
    let evaluator: QueryEvaluator<E>

    /// Records that may match: every record, or some (``CandidateKeys``); `exact` when each of them matches for sure.
    enum Candidates {
        case all(exact: Bool)
        case keys(CandidateKeys, exact: Bool)
    }

    @inline(__always)
    private var keyspace: String { store.keyspace }
    @inline(__always)
    var query: Query<E> { evaluator.query }

    func run() throws(StoreError) -> QueryResult<E> {
        let offset = query.offset ?? 0
        // Saturating: a limit of `Int.max` with an offset means "all the rest", not an overflow.
        let window = query.limit.map { limit in
            let (sum, overflow) = offset.addingReportingOverflow(limit)
            return overflow ? Int.max : sum
        }
        // The query's shape, worked out when its filter and order were set, as plain values (matching the
        // generic enums here would look their metadata up at run time).
        let shape = query.orderShape
        let comparison = query.filterCheck.indexComparison
        let orderedByIdentifier = shape.byIdentifier

        if let ascending = orderedByIdentifier, !query.uniquely, let comparison, comparison.op == .equalTo {
            // One term's index entries (term ‖ primary key) are in primary-key order: the window is the first
            // `window` of them, with no key set to build and sort. The keys are staged as they are met (no
            // array per key the cache answers) and the cache probed for them together.
            var batch = FetchBatch(capacity: query.limit ?? 16, at: snapshot.sequence, query: true)
            snapshot.forEachKey(matching: IndexQuery(keyspace: keyspace, index: comparison.index,
                                                     condition: condition(.equalTo, comparison.value),
                                                     reverse: !ascending, offset: offset, limit: query.limit)) { key in
                store.stage(key, to: &batch)
                return true
            }
            return evaluator.result(fromMatching: try store.entities(of: &batch, in: snapshot), alreadyOrdered: true,
                                    alreadyPaginated: true)
        }

        if !query.uniquely, let orderName = shape.firstIndex, let window, let comparison, comparison.op != .match,
           comparison.index == orderName, isSingleTerm(orderName) {
            // A comparison on the index the result is ordered by: walk just the entries it matches, in order.
            // With one term per record, a record's sort key is its only term, so the records this walk meets
            // first are the ones the full candidate set would sort first (see `isSingleTerm`).
            let walked = try walkIndex(orderName, condition: condition(comparison.op, comparison.value), keys: nil,
                                       window: window, singleTerm: true)
            return evaluator.result(fromMatching: walked.entities, alreadyOrdered: walked.inResultOrder)
        }

        let candidates = query.filter.map(plan) ?? .all(exact: true)
        switch candidates {
        case .all(exact: true):
            if let ascending = orderedByIdentifier, !query.uniquely, offset == 0 {
                // Read the records in key order in one pass (no B-tree lookup per key).
                return evaluator.result(fromMatching: try scan(reverse: !ascending, limit: window, filtering: false),
                                        alreadyOrdered: true, alreadyPaginated: true)
            }
            if let ascending = orderedByIdentifier, !query.uniquely {
                let keys = snapshot.keys(in: keyspace, reverse: !ascending, limit: window)
                let page = Array(keys.dropFirst(min(offset, keys.count)))
                return evaluator.result(fromMatching: try fetch(page), alreadyOrdered: true, alreadyPaginated: true)
            }
            if let name = shape.firstIndex, let window {
                let walked = try walkIndex(name, keys: nil, window: window)
                return evaluator.result(fromMatching: walked.entities, alreadyOrdered: walked.inResultOrder)
            }
            return evaluator.result(fromMatching: try scan(filtering: false))
        case .all(exact: false):
            if let walked = try walkFiltered(keys: nil, count: snapshot.count(in: keyspace), shape: shape,
                                             window: window) {
                return evaluator.result(fromMatching: walked.entities, alreadyOrdered: walked.inResultOrder)
            }
            return evaluator.result(fromMatching: try scan(filtering: true))
        case .keys(let keys, let exact):
            let count = keys.count(of: snapshot.count(in: keyspace))
            if exact, let ascending = orderedByIdentifier, !query.uniquely {
                let sorted: [[UInt8]]
                switch keys {
                case .only(let set):
                    sorted = ascending ? set.sorted { $0.lexicographicallyPrecedes($1) }
                                       : set.sorted { $1.lexicographicallyPrecedes($0) }
                case .allBut(let excluded):
                    // The keyspace's keys are in key order already: the first `window` not excluded, among the first
                    // `window + excluded.count` keys (the excluded keys are keys of the keyspace).
                    var kept: [[UInt8]] = []
                    let reach = window.map { window in
                        let (sum, overflow) = window.addingReportingOverflow(excluded.count)
                        return overflow ? Int.max : sum
                    }
                    for key in snapshot.keys(in: keyspace, reverse: !ascending, limit: reach)
                    where !excluded.contains(key) {
                        kept.append(key)
                        if let window, kept.count >= window { break }
                    }
                    sorted = kept
                }
                let end = min(window ?? sorted.count, sorted.count)
                let page = Array(sorted[min(offset, end)..<end])
                return evaluator.result(fromMatching: try fetch(page), alreadyOrdered: true, alreadyPaginated: true)
            }
            let walkable = window.map { $0 <= (Int.max - 64) / 2 && count > 2 * $0 + 64 } ?? false
            if exact, let name = shape.firstIndex, let window, walkable {
                let walked = try walkIndex(name, keys: keys, window: window)
                return evaluator.result(fromMatching: walked.entities, alreadyOrdered: walked.inResultOrder)
            }
            if !exact, walkable, let walked = try walkFiltered(keys: keys, count: count, shape: shape, window: window) {
                return evaluator.result(fromMatching: walked.entities, alreadyOrdered: walked.inResultOrder)
            }
            // An identifier's candidates come from locating it, where a local-only identifier finds one record (the
            // first in key order with that local value) while the filter accepts every record whose identifier is
            // dual-equal to it: a filtered scan would return more than reading the candidates, so those keep being
            // read by key.
            if !exact, !query.filterCheck.comparesIdentifier,
               count >= Self.scanThreshold(of: snapshot.count(in: keyspace)) {
                // The candidates must go through the filter anyway, and they are most of the keyspace: one pass in
                // storage order, filtered as it is decoded, costs less than a B-tree lookup and a page read per key.
                return evaluator.result(fromMatching: try scan(filtering: true))
            }
            var entities: [E]
            switch keys {
            case .only(let set): entities = try fetch(Array(set))
            case .allBut(let excluded):
                entities = try fetch(snapshot.keys(in: keyspace).filter { !excluded.contains($0) })
            }
            if !exact { entities = entities.filter(evaluator.predicate()) }
            return evaluator.result(fromMatching: entities)
        }
    }

    /// ``walkIndexFiltered(_:keys:window:)`` on the index the result is ordered by, when the query has one, a window
    /// small enough (``filteredWalkApplies(window:records:)``), no `uniquely`, and more candidates (`count`) than the
    /// walk's budget (fewer are read by key at less cost than a walk that may visit every index entry to find
    /// them); nil when it does not apply or gives up.
    private func walkFiltered(keys: CandidateKeys?, count: Int, shape: OrderShape,
                              window: Int?) throws(StoreError) -> (entities: [E], inResultOrder: Bool)? {
        let records = snapshot.count(in: keyspace)
        guard !query.uniquely, let name = shape.firstIndex, let window,
              Self.filteredWalkApplies(window: window, records: records),
              count > Self.filteredWalkBudget(window: window, records: records) else { return nil }
        if window == 0 { return ([], true) }
        return try walkIndexFiltered(name, keys: keys, window: window)
    }

    /// Whether every record of the keyspace has exactly one term in index `name` (as many entries as records:
    /// the store writes at least one term per index name for every entity, a `null` one for an absent value).
    /// Then walking only the entries a condition matches meets each matching record at its sort key.
    @inline(__always)
    func isSingleTerm(_ name: String) -> Bool {
        snapshot.entryCount(keyspace: keyspace, index: name) == snapshot.count(in: keyspace)
    }

    /// Walks the entries of index `name` matching `condition` in the query's direction, keeping records in
    /// `keys` (all when nil), until `window` distinct records are collected and the term changes (so ties at the
    /// boundary are all present for the final sort). Each record is seen at its first entry in walk order (its
    /// smallest term ascending, its largest descending, under `.any`).
    /// `inResultOrder`: the entities come in the result's order already (see below), so the evaluator need not
    /// sort them again. `singleTerm`: ``isSingleTerm(_:)`` of `name`, when the caller knows it already (asking
    /// again costs three dictionary lookups by string in the engine's state, about 1,000 instructions).
    private func walkIndex(_ name: String, condition: IndexCondition = .any, keys: CandidateKeys?,
                           window: Int, singleTerm: Bool? = nil) throws(StoreError)
        -> (entities: [E], inResultOrder: Bool) {
        // With one term per record, the walk meets each record once: no set of the keys met is needed.
        var walked = WalkedKeys(keys: keys, distinct: singleTerm ?? isSingleTerm(name))
        // Each key picked is staged as it is met and the cache probed for the staged keys together (a key gets an
        // array of its own only when the cache does not answer it, or when the walk made one to tell records met).
        var picked = FetchBatch(capacity: window, at: snapshot.sequence, query: true)
        // The encoded term of the window's last entity, once the window is full (equal terms are equal bytes).
        var boundary: [UInt8]?
        // Ascending by this index alone, ties fall back to ascending identifiers: the order of one term's entries
        // (term ‖ primary key). Records then arrive in result order, so the first `window` are the result and
        // the ties past the boundary need not be read. (Descending, a term's entries come in descending key
        // order, so every tie is collected for the final sort.)
        let descending = query.orderShape.descending
        let inResultOrder = !descending && query.orderShape.count == 1
        snapshot.forEachRawEntry(keyspace: keyspace, index: name, condition: condition, reverse: descending) { term, raw in
            if let boundary, !term.elementsEqual(boundary) { return false }
            var copy: [UInt8]?
            guard walked.admits(raw, copy: &copy) else { return true }
            if let copy { store.add(raw, copy: copy, to: &picked) } else { store.stage(raw, to: &picked) }
            if picked.count >= window {
                if inResultOrder { return false }
                if boundary == nil { boundary = Array(term) }
            }
            return true
        }
        return (try store.entities(of: &picked, in: snapshot), inResultOrder)
    }

    /// The size of an inexact candidate key set (one the filter must still check) from which reading and filtering
    /// the whole keyspace beats reading and filtering the candidates one by one: half of its records. In the demo
    /// (100k books), `title ~= Glass && genre != crime` read 86k candidates by key in 1.0-1.6 s, and scanned the
    /// keyspace in 0.5 s. (An exact set needs no filter, and reading it by key stayed faster than a filtered scan
    /// even at 86% of the keyspace: 374 ms against 427-564 ms.)
    static func scanThreshold(of recordCount: Int) -> Int { max(1, recordCount / 2) }

    /// The entities of `keys`, read for the query (see ``DiskStore/firstMissRecordLimit``).
    private func fetch(_ keys: [[UInt8]]) throws(StoreError) -> [E] {
        try store.fetch(keys, in: snapshot, query: true)
    }

    /// The records of the keyspace in key order (descending when `reverse`), decoded, at most `limit` of them,
    /// only those passing the filter when `filtering`. With the filter it is the documented fallback: every entity
    /// of the keyspace is decoded.
    ///
    /// The records are read whole in storage order (each page once, see ``Snapshot/recordTable(in:range:reverse:limit:)``),
    /// then decoded in key order: a whole result is materialized anyway. A large table is decoded (and filtered) on
    /// several threads (``ParallelDecode``), each chunk with its own evaluator when filtering (the filter's regexes
    /// are not shared between threads).
    private func scan(reverse: Bool = false, limit: Int? = nil, filtering: Bool) throws(StoreError) -> [E] {
        let table: RecordTable
        do { table = try snapshot.recordTable(in: keyspace, reverse: reverse, limit: limit) } catch { throw .wrap(error) }
        if !filtering {
            let store = self.store
            return try ParallelDecode.compactMap(count: table.count) { rank throws(StoreError) in
                try store.decode(Array(table.value(at: rank)), key: Array(table.key(at: rank)))
            }
        }
        // On several threads, each chunk filters with an evaluator of its own (its regexes compiled for it, not
        // shared between threads); the query compiled once already, so it compiles again. On this thread alone, with
        // this evaluator.
        let store = self.store, query = self.query, evaluator = self.evaluator
        let parallel = ParallelDecode.runsInParallel(count: table.count)
        return try ParallelDecode.compactMap(count: table.count, perChunk: { () throws(StoreError) in
            let matches: QueryEvaluator<E>.Predicate
            do throws(QueryError) {
                matches = parallel ? try QueryEvaluator(query).predicate() : evaluator.predicate()
            } catch { throw .invalidQuery(error) }
            return { (rank: Int) throws(StoreError) -> E? in
                let entity = try store.decode(Array(table.value(at: rank)), key: Array(table.key(at: rank)))
                return matches(entity) ? entity : nil
            }
        })
    }

    // MARK: Planning

    private func plan(_ filter: Query<E>.Filter) -> Candidates {
        switch filter {
        case .constant(true):
            return .all(exact: true)
        case .constant(false):
            return .keys(.none, exact: true)
        case .comparison(.index(let name), let op, .index(let value)) where op != .match:
            return .keys(.only(indexKeys(name, condition(op, value))), exact: true)
        case .comparison(.identifier, .equalTo, .identifier(let id)):
            return .keys(.only(Set(locateKeys([id]))), exact: true)
        case .containedIn(.index(let name), let values):
            var terms: [IndexValue] = []
            for case .index(let v) in values { terms.append(v.indexValue) }
            return .keys(terms.isEmpty ? .none : .only(indexKeys(name, .oneOf(terms))), exact: true)
        case .containedIn(.identifier, let values):
            var ids: [E.Identifier] = []
            for case .identifier(let id) in values { ids.append(id) }
            return .keys(.only(Set(locateKeys(ids))), exact: true)
        case .and(let l, let r):
            switch (plan(l), plan(r)) {
            case (.all(let a), .all(let b)): return .all(exact: a && b)
            case (.all(let a), .keys(let k, let b)), (.keys(let k, let b), .all(let a)): return .keys(k, exact: a && b)
            case (.keys(let k1, let a), .keys(let k2, let b)): return .keys(k1.intersection(k2), exact: a && b)
            }
        case .or(let l, let r):
            switch (plan(l), plan(r)) {
            case (.keys(let k1, let a), .keys(let k2, let b)): return .keys(k1.union(k2), exact: a && b)
            case (.all(true), _), (_, .all(true)): return .all(exact: true)
            default: return .all(exact: false)
            }
        case .not(let inner):
            // The complement of an exact set is exact; of an inexact one, unknown (its filter-rejected records
            // may match the negation).
            switch plan(inner) {
            case .keys(let k, true): return .keys(k.complement, exact: true)
            case .all(true): return .keys(.none, exact: true)
            default: return .all(exact: false)
            }
        default:
            return .all(exact: false)
        }
    }

    private func indexKeys(_ name: E.IndexName, _ condition: IndexCondition) -> Set<[UInt8]> {
        snapshot.keySet(in: keyspace, where: .match(index: name.rawValue, condition))
    }

    private func locateKeys(_ ids: [E.Identifier]) -> [[UInt8]] {
        store.locateKeys(ids, in: snapshot)
    }

    /// The index condition of `index op value`, bounded to `value`'s type (values of other types never match).
    private func condition(_ op: QueryOperator, _ value: EntityIndexValue) -> IndexCondition {
        let v = value.indexValue
        let (low, high) = Self.typeBounds(value)
        switch op {
        case .equalTo, .match: return .equals(v)
        case .greaterThan: return .range(lower: .excluded(v), upper: high)
        case .greaterThanOrEqual: return .range(lower: .included(v), upper: high)
        case .lessThan: return .range(lower: low, upper: .excluded(v))
        case .lessThanOrEqual: return .range(lower: low, upper: .included(v))
        }
    }

    static func typeBounds(_ value: EntityIndexValue) -> (IndexBound, IndexBound) {
        switch value {
        case .none, .array: (.included(.null), .included(.null))
        case .bool: (.included(.bool(false)), .included(.bool(true)))
        case .int: (.included(.int(.min)), .included(.int(.max)))
        case .double: (.included(.double(-.infinity)), .included(.double(.nan)))
        case .date: (.included(.date(microsecondsSince1970: .min)), .included(.date(microsecondsSince1970: .max)))
        case .string: (.included(.string("")), .excluded(.identifier([])))
        }
    }
}
