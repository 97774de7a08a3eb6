import LucidEngine

/// Answering a query ordered by an index, with a window, whose filter the indexes cannot decide (a `~=`, or a
/// comparison joined by `||` to one): walk the order index and filter the records it meets, instead of reading and
/// filtering every candidate and then sorting them all.
///
/// The walk meets records in the result's order (by their sort key in the index, see
/// ``DiskQueryPlanner/walkIndex(_:condition:keys:window:singleTerm:)``), so once `window` of them pass the filter,
/// and the records sharing the last one's sort key are in (for the final sort of ties), the rest cannot enter the
/// result.
/// Its cost follows the filter's selectivity: `window / selectivity` records read by key. A filter that passes few
/// records makes that most of the keyspace, where one filtered pass in storage order costs less: the walk gives up
/// after ``filteredWalkBudget(window:records:)`` records (an eighth of the keyspace, at least `4 × window + 256`) and
/// the planner falls back to that pass, so a query pays at most that budget more than before. Candidate sets no
/// larger than the budget are read by key instead, without a walk.
extension DiskQueryPlanner {
    /// How many records a filtered walk reads before it gives up: an eighth of the keyspace, and at least
    /// `4 × window + 256` (a small store or a loose window walks further, as the fallback costs little there).
    static func filteredWalkBudget(window: Int, records: Int) -> Int {
        let least = window.multipliedReportingOverflow(by: 4).partialValue.addingReportingOverflow(256).partialValue
        return max(records / 8, least)
    }

    /// Whether a filtered walk may pay: a window of at most a sixteenth of the keyspace.
    static func filteredWalkApplies(window: Int, records: Int) -> Bool { window <= records / 16 }

    /// The records of the keyspace (those of `keys` when given) that pass the filter, met on index `name` in the
    /// query's direction until `window` of them pass and the sort key changes; nil when the walk read
    /// ``filteredWalkBudget(window:records:)`` records first (the caller then scans). The records are read in
    /// batches (each through the entity cache), from `max(32, 2 × window)` keys up to 1,024.
    /// `inResultOrder` as for ``walkIndex(_:condition:keys:window:singleTerm:)``. The records read are offered to the
    /// entity cache as a large read's are (admitted on their second miss): most of them may be records the filter
    /// rejects.
    /// - Throws: ``StoreError`` from reading or decoding a record.
    func walkIndexFiltered(_ name: String, keys: CandidateKeys?,
                           window: Int) throws(StoreError) -> (entities: [E], inResultOrder: Bool)? {
        guard let indexName = E.IndexName(rawValue: name) else { return nil }
        let budget = Self.filteredWalkBudget(window: window, records: snapshot.count(in: store.keyspace))
        var walked = WalkedKeys(keys: keys, distinct: isSingleTerm(name))
        let descending = query.orderShape.descending
        let inResultOrder = !descending && query.orderShape.count == 1
        var matched: [E] = []
        var boundary: IndexValue?
        var read = 0
        var done = false
        var overBudget = false
        var failure: StoreError?
        var batchSize = max(32, min(1024, window.multipliedReportingOverflow(by: 2).partialValue))
        var batch = FetchBatch(capacity: batchSize, at: snapshot.sequence, query: false)
        let matches = evaluator.predicate()

        // Filters the batch's records in walk order; `done` once the window is complete and past its last term.
        func filterBatch() throws(StoreError) {
            var full = FetchBatch(capacity: batchSize, at: snapshot.sequence, query: false)
            swap(&full, &batch)
            for entity in try store.entities(of: &full, in: snapshot) {
                if let boundary, entity.entityIndexValue(for: indexName).sortKey(descending: descending) != boundary {
                    done = true
                    return
                }
                guard matches(entity) else { continue }
                matched.append(entity)
                if matched.count >= window, boundary == nil {
                    if inResultOrder {
                        done = true
                        return
                    }
                    boundary = entity.entityIndexValue(for: indexName).sortKey(descending: descending)
                }
            }
            batchSize = min(1024, batchSize * 2)
        }

        snapshot.forEachEntry(keyspace: store.keyspace, index: name, condition: .any,
                              reverse: descending) { value, raw in
            if let boundary, value != boundary { return false }
            var copy: [UInt8]?
            guard walked.admits(raw, copy: &copy) else { return true }
            read += 1
            if read > budget {
                overBudget = true
                return false
            }
            if let copy { store.add(raw, copy: copy, to: &batch) } else { store.stage(raw, to: &batch) }
            guard batch.count >= batchSize else { return true }
            do throws(StoreError) { try filterBatch() } catch {
                failure = error
                return false
            }
            return !done
        }
        if let failure { throw failure }
        if overBudget { return nil }
        if !done && batch.count > 0 { try filterBatch() }
        return (matched, inResultOrder)
    }
}
