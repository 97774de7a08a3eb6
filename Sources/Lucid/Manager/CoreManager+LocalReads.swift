/// The manager's reads of its local stores, in level order: gets move on when a store misses or returns an entity
/// the contract rejects, searches only when a store returns nothing valid. Each loop exists twice, once with
/// `await` for any store and once for stores that never suspend (``SynchronousGetStore``,
/// ``SynchronousSearchStore``), which is what the memory, disk and cache stores are.
extension CoreManager {
    /// The local stores' entity for `identifier` (memory before disk), contract-checked.
    func localGet(_ identifier: E.Identifier, _ context: ReadContext<E>) async throws(ManagerError) -> E? {
        if let synchronousStores { return try localGetNow(identifier, context, synchronousStores) }
        var failure: StoreError?
        let validates = context.contract.shouldValidate(E.self)
        for store in stores {
            do throws(StoreError) {
                if let entity = try await store.get(byID: identifier),
                   !validates || context.contract.isEntityValid(entity, for: .identifier(identifier)) {
                    return entity
                }
            } catch {
                failure = failure.map { .composite(current: error, previous: $0) } ?? error
            }
        }
        if let failure { throw .wrap(failure) }
        return nil
    }

    /// ``localGet(_:_:)`` through stores that never suspend: no async frame per store. (The loop is repeated
    /// rather than shared through a helper type: in this unspecialized generic code, a generic helper costs a
    /// runtime metadata lookup and an entity copy per get, more than the async frames saved.)
    func localGetNow(_ identifier: E.Identifier, _ context: ReadContext<E>,
                     _ stores: [any SynchronousGetStore<E>]) throws(ManagerError) -> E? {
        var failure: StoreError?
        let validates = context.contract.shouldValidate(E.self)
        for store in stores {
            do throws(StoreError) {
                if let entity = try store.getNow(identifier),
                   !validates || context.contract.isEntityValid(entity, for: .identifier(identifier)) {
                    return entity
                }
            } catch {
                failure = failure.map { .composite(current: error, previous: $0) } ?? error
            }
        }
        if let failure { throw .wrap(failure) }
        return nil
    }

    /// The loop of ``localSearchNow(_:contract:_:)`` over one store: its result, contract-checked, whether empty or
    /// not; an invalid query as such, any other error wrapped. Without the loop's `QueryResult<E>?` and iterator,
    /// whose metadata this unspecialized generic code looks up at run time. (With the sole store read from a
    /// property and a result whose layout does not depend on `E`, the manager's own part of a search went from
    /// about 2,600 instructions to 1,000 in the micro workload manager-search-rating-range-limit20, callgrind.)
    private static func searchNow(_ query: Query<E>, contract: any EntityContract,
                                  _ store: any SynchronousSearchStore<E>) throws(ManagerError) -> QueryResult<E> {
        do throws(StoreError) { return validated(try store.searchNow(query), for: query, contract) } catch {
            if case .invalidQuery(let q) = error { throw .invalidQuery(q) }
            throw .wrap(error)
        }
    }

    /// ``localSearch(_:contract:)`` over stores that never suspend: the same loop, without `await` (kept
    /// separate, as ``localGetNow(_:_:_:)`` is: a shared generic helper costs more than the loop).
    func localSearchNow(_ query: Query<E>, contract: any EntityContract,
                        _ stores: [any SynchronousSearchStore<E>]) throws(ManagerError) -> QueryResult<E> {
        if let store = soleSynchronousSearchStore { return try Self.searchNow(query, contract: contract, store) }
        var failure: StoreError?
        var last: QueryResult<E>?
        for store in stores {
            do throws(StoreError) {
                let checked = Self.validated(try store.searchNow(query), for: query, contract)
                if !checked.isEmpty { return checked }
                last = checked
            } catch {
                if case .invalidQuery(let q) = error { throw .invalidQuery(q) }
                failure = failure.map { .composite(current: error, previous: $0) } ?? error
            }
        }
        if let last { return last }
        if let failure { throw .wrap(failure) }
        return .empty
    }

    /// The first local store's result with something the contract accepts (memory before disk), else the last
    /// result, else the chained store errors. An invalid query fails at once.
    func localSearch(_ query: Query<E>, contract: any EntityContract) async throws(ManagerError) -> QueryResult<E> {
        if let synchronousSearchStores { return try localSearchNow(query, contract: contract, synchronousSearchStores) }
        var failure: StoreError?
        var last: QueryResult<E>?
        for store in stores {
            do {
                let checked = Self.validated(try await store.search(query), for: query, contract)
                if !checked.isEmpty { return checked }
                last = checked
            } catch {
                if case .invalidQuery(let q) = error { throw .invalidQuery(q) }
                failure = failure.map { .composite(current: error, previous: $0) } ?? error
            }
        }
        if let last { return last }
        if let failure { throw .wrap(failure) }
        return .empty
    }

    /// `result` without the entities `contract` rejects.
    static func validated(_ result: QueryResult<E>, for query: Query<E>,
                          _ contract: any EntityContract) -> QueryResult<E> {
        // A contract that checks nothing keeps the result as it is, without its entities passing through the
        // filter (`Array<E>`'s metadata looked up at run time, about 330 instructions).
        guard contract.shouldValidate(E.self) else { return result }
        let valid = contract.filter(result.entities, for: query)
        return valid.count == result.count ? result : QueryResult(entities: valid, groupName: query.groupName)
    }
}
