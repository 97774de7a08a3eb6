import Synchronization

/// The interface to read and write entities of one type: gets, searches (once and continuous), sets and
/// removals through a stack of stores, with per-identifier write ordering, contracts and access validation.
///
/// - Reads go through the stores in level order (memory before disk): `get` moves on when a store misses or
///   returns an entity the contract rejects; `search` moves on only when a local store returns nothing valid.
///   Errors of every store tried are chained in ``StoreError/composite(current:previous:)`` and thrown only if
///   no store answers.
/// - Writes go to every local store concurrently; the first error is thrown (nothing is only logged). Writes of
///   one manager are applied one batch at a time, in call order, and each identifier keeps the timestamp of its
///   last write: a write with an older ``WriteContext/originTimestamp`` is skipped.
/// - After each write, the continuous queries it may affect are evaluated again and observers get the new
///   result if it changed.
///
/// Use one manager per entity type and store stack: managers do not share observers or write clocks.
public final class CoreManager<E: LocalEntity>: Sendable {
    /// Memory and disk stores, in level order.
    let stores: [any Store<E>]
    /// `stores` again when every one of them reads without suspending, so that `get` calls them directly.
    let synchronousStores: [any SynchronousGetStore<E>]?
    /// The only store, when there is one and it reads without suspending: `get` returns its answer as it comes.
    let soleSynchronousStore: (any SynchronousGetStore<E>)?
    /// `stores` again when every one of them also searches without suspending, for `search`.
    let synchronousSearchStores: [any SynchronousSearchStore<E>]?
    /// The only store, when there is one and it searches without suspending (read from a property, not from the
    /// array: taking an element of `[any SynchronousSearchStore<E>]` looks the existential's metadata up at run
    /// time, about 400 instructions).
    let soleSynchronousSearchStore: (any SynchronousSearchStore<E>)?
    /// The backend, if the manager has one.
    let remote: (any RemoteStoring<E>)?
    /// Orders writes: held while the stores begin one (not while it becomes durable).
    let writeLock = AsyncMutex()
    /// Held by an observer's registration and by each write's refresh of the observers (see
    /// ``refreshObservers(changed:removed:)``).
    let refreshLock = AsyncMutex()
    private let clock = Mutex(WriteClock())
    let observers = QueryObservers<E>()

    /// A manager over `stores` (read in level order). - Precondition: at least one store.
    public init(stores: [any Store<E>]) {
        precondition(!stores.isEmpty, "a CoreManager needs at least one store")
        self.stores = stores.filter { $0.level != .remote }.sorted { $0.level < $1.level }
        let synchronous = self.stores.compactMap { $0 as? any SynchronousGetStore<E> }
        synchronousStores = synchronous.count == self.stores.count ? synchronous : nil
        soleSynchronousStore = self.stores.count == 1 ? synchronous.first : nil
        let searching = self.stores.compactMap { $0 as? any SynchronousSearchStore<E> }
        synchronousSearchStores = searching.count == self.stores.count ? searching : nil
        soleSynchronousSearchStore = self.stores.count == 1 ? searching.first : nil
        remote = stores.lazy.compactMap { $0 as? any RemoteStoring<E> }.first
        adoptCreatesAnsweredLater()
    }

    /// A manager over one store.
    public convenience init(store: any Store<E>) { self.init(stores: [store]) }

    /// A timestamp for ``WriteContext/originTimestamp``: wall-clock nanoseconds, increasing in this process.
    public func timestamp() -> UInt64 { clock.withLock { $0.now() } }

    /// Number of distinct queries observed right now.
    public var observedQueryCount: Int { observers.count }

    // MARK: Reads

    /// The entity with this identifier (by local, remote or both), or nil.
    /// - Throws: ``ManagerError`` (`userAccessInvalid`, `notSupported` for a remote source, `store`).
    public func get(byID identifier: E.Identifier, in context: ReadContext<E> = ReadContext()) async throws(ManagerError) -> E? {
        if let store = soleSynchronousStore, !context.validatesAccess, context.dataSource == .local,
           !context.contract.shouldValidate(E.self) {
            // Nothing to check before or after the read: the store's answer is returned as it comes. (This
            // function holds no `E?`: generic code looks `Optional<E>`'s metadata up at run time for each one,
            // about 330 instructions, and an async function does it on entry.)
            do throws(StoreError) { return try store.getNow(identifier) } catch { throw .wrap(error) }
        }
        return try await checkedGet(identifier, context)
    }

    /// ``get(byID:in:)`` with its access checks, contract and any data source.
    private func checkedGet(_ identifier: E.Identifier, _ context: ReadContext<E>) async throws(ManagerError) -> E? {
        let access = try checkRead(context)
        let found: E?
        if let synchronousStores, effectiveSource(context, access) == .local {
            // Local stores that never suspend: no async frame per store (or for the dispatch).
            found = try localGetNow(identifier, context, synchronousStores)
        } else {
            found = try await dispatchGet(identifier, context, access: access)
        }
        try checkUnchanged(access, context.accessValidator)
        return found
    }

    /// The entities with these identifiers, in the order given, once and as a continuous query.
    public func get(byIDs identifiers: [E.Identifier], in context: ReadContext<E> = ReadContext()) async throws(ManagerError)
        -> (once: QueryResult<E>, continuous: ContinuousQuery<E>) {
        try await search(withQuery: .identifiers(identifiers), in: context)
    }

    /// The result of `query` now (`once`), and the sequence of its results as data changes (`continuous`,
    /// lazily registered when iterated).
    /// - Throws: ``ManagerError/invalidQuery(_:)`` for an invalid query, and the errors of ``get(byID:in:)``.
    public func search(withQuery query: Query<E>, in context: ReadContext<E> = ReadContext()) async throws(ManagerError)
        -> (once: QueryResult<E>, continuous: ContinuousQuery<E>) {
        let once = try await searchOnce(query, in: context)
        return (once, ContinuousQuery(manager: self, query: query, context: context))
    }

    /// Every entity (`search(.all).once`).
    public func all(in context: ReadContext<E> = ReadContext()) async throws(ManagerError) -> QueryResult<E> {
        try await searchOnce(.all, in: context)
    }

    /// The first entity of `query`'s result, or nil.
    public func first(for query: Query<E> = .all, in context: ReadContext<E> = ReadContext()) async throws(ManagerError) -> E? {
        try await searchOnce(query.with(limit: 1), in: context).first
    }

    func searchOnce(_ query: Query<E>, in context: ReadContext<E>) async throws(ManagerError) -> QueryResult<E> {
        do { try query.validate() } catch { throw .invalidQuery(error) }
        let access = try checkRead(context)
        let result: QueryResult<E>
        if let synchronousSearchStores, effectiveSource(context, access) == .local {
            // Local stores that never suspend: no async frame per store (or for the dispatch).
            result = try localSearchNow(query, contract: context.contract, synchronousSearchStores)
        } else {
            result = try await dispatchSearch(query, context, access: access)
        }
        try checkUnchanged(access, context.accessValidator)
        return result
    }

    /// Registers an observer of `query` (used by ``ContinuousQuery``).
    func observe(_ query: Query<E>, in context: ReadContext<E>) async throws(ManagerError) -> AsyncStream<QueryResult<E>> {
        do { try query.validate() } catch { throw .invalidQuery(error) }
        let access = try checkRead(context)
        // A write that finishes after the first result is read refreshes the observation after it is registered.
        await refreshLock.lock()
        defer { refreshLock.unlock() }
        if observers.existing(query) == nil {
            let initial = access == .noAccess ? .empty : try await localSearch(query, contract: context.contract)
            return observers.observe(query, context: context) { initial }
        }
        return observers.observe(query, context: context) { .empty }
    }

    // MARK: Writes

    /// Writes one entity (merged over the stored one) and returns the stored entity.
    /// - Throws: ``ManagerError/conflict(_:)`` when the write is stale and nothing is stored for its
    ///   identifier; ``ManagerError/store(_:)`` when a store fails; access and target errors.
    @discardableResult
    public func set(_ entity: E, in context: WriteContext<E> = WriteContext()) async throws(ManagerError) -> E {
        let (stored, skipped) = try await write([entity], in: context)
        if let first = stored.first { return first }
        if skipped, let current = try await get(byID: entity.identifier) { return current }
        throw .conflict("a newer write to \(entity.identifier) was already applied")
    }

    /// Writes entities (each merged over its stored one) atomically per store; stale ones are skipped.
    /// Returns the stored entities.
    @discardableResult
    public func set<S: Sequence>(_ entities: S, in context: WriteContext<E> = WriteContext()) async throws(ManagerError) -> [E]
    where S.Element == E {
        try await write(Array(entities), in: context).stored
    }

    private func write(_ entities: [E], in context: WriteContext<E>) async throws(ManagerError) -> (stored: [E], skipped: Bool) {
        let access = try checkWrite(context)
        var pending = entities
        var skipped = false
        if context.dataTarget.includesLocal {
            let (stored, wasSkipped) = try await applyLocal(entities, origin: context.originTimestamp)
            skipped = wasSkipped
            pending = stored
            if !context.dataTarget.includesRemote {
                try checkUnchanged(access, context.accessValidator)
                return (stored, skipped)
            }
        }
        // The backend: every failure reaches the caller; its answer (a server-assigned id) is folded back locally.
        guard let remote else { throw .notSupported("this manager has no remote store") }
        var answered: [E]
        do { answered = try await remote.set(pending, request: context.remoteRequest) } catch { throw .wrap(error) }
        if context.dataTarget.includesLocal, answered != pending {
            answered = try await applyLocal(answered, origin: nil).stored
        }
        try checkUnchanged(access, context.accessValidator)
        return (answered, skipped)
    }

    /// Writes to the local stores, in order, skipping stale entities; refreshes the observers.
    ///
    /// The write lock is held only while the stores begin the write (``Store/beginSet(_:)``: the write's place
    /// among the stores' writes is fixed); the write then becomes durable outside it, together with the writes
    /// begun meanwhile (they share the engine's syncs).
    func applyLocal(_ entities: [E], origin: UInt64?) async throws(ManagerError) -> (stored: [E], skipped: Bool) {
        guard !stores.isEmpty else { return (entities, false) }
        await writeLock.lock()
        let admitted = admit(entities.map(\.identifier), at: origin)
        let current = admitted.allSatisfy { $0 } ? entities : zip(entities, admitted).filter(\.1).map(\.0)
        guard !current.isEmpty else {
            writeLock.unlock()
            return ([], true)
        }
        let writes = try await beginUnlocking { store throws(StoreError) in try await store.beginSet(current) }
        let stored = try await finish(writes)
        await refreshObservers(changed: stored, removed: [])
        return (stored, current.count < entities.count)
    }

    /// Removes from the local stores, skipping stale removals; refreshes the observers. Locks as
    /// ``applyLocal(_:origin:)`` does.
    func removeLocal(_ ids: [E.Identifier], origin: UInt64?) async throws(ManagerError) {
        guard !stores.isEmpty else { return }
        await writeLock.lock()
        let admitted = admit(ids, at: origin)
        let current = zip(ids, admitted).filter(\.1).map(\.0)
        guard !current.isEmpty else {
            writeLock.unlock()
            return
        }
        let writes = try await beginUnlocking { store throws(StoreError) in try await store.beginRemove(current) }
        _ = try await finish(writes)
        await refreshObservers(changed: [], removed: current)
    }

    /// Waits for every store's write to finish (all of them, even after one fails); returns the first store's
    /// (in level order) stored entities, throws the first error.
    private func finish(_ writes: [StoreWrite<E>]) async throws(ManagerError) -> [E] {
        if writes.count == 1 {
            // One store (the usual stack): no optionals of generic types to carry (each costs a type lookup).
            do throws(StoreError) { return try await writes[0].finish() } catch { throw .wrap(error) }
        }
        var firstError: StoreError?
        var first: [E]?
        for write in writes {
            do throws(StoreError) {
                let stored = try await write.finish()
                if first == nil { first = stored }
            } catch {
                firstError = firstError ?? error
            }
        }
        if let firstError { throw .wrap(firstError) }
        return first ?? []
    }

    /// Removes the entity with this identifier. - Throws: ``ManagerError`` when a store fails.
    public func remove(atID identifier: E.Identifier, in context: WriteContext<E> = WriteContext()) async throws(ManagerError) {
        try await remove([identifier], in: context)
    }

    /// Removes the entities with these identifiers (stale removals are skipped). - Throws: ``ManagerError``.
    public func remove<S: Sequence>(_ identifiers: S, in context: WriteContext<E> = WriteContext()) async throws(ManagerError)
    where S.Element == E.Identifier {
        let access = try checkWrite(context)
        let ids = Array(identifiers)
        if context.dataTarget.includesLocal { try await removeLocal(ids, origin: context.originTimestamp) }
        if context.dataTarget.includesRemote {
            guard let remote else { throw .notSupported("this manager has no remote store") }
            do { try await remote.remove(ids) } catch { throw .wrap(error) }
        }
        try checkUnchanged(access, context.accessValidator)
    }

    /// Removes the entities matching `query` in the local stores and returns their identifiers; with a remote
    /// target the backend's removeAll request is always sent, even when nothing matched locally (the original
    /// never sent it then, bug 1.15.5).
    /// - Throws: ``ManagerError/invalidQuery(_:)``, store errors.
    @discardableResult
    public func removeAll(withQuery query: Query<E>, in context: WriteContext<E> = WriteContext()) async throws(ManagerError)
        -> [E.Identifier] {
        do { try query.validate() } catch { throw .invalidQuery(error) }
        let access = try checkWrite(context)
        let ids = try await localSearch(query, contract: AlwaysValidContract()).entities.map(\.identifier)
        if context.dataTarget.includesLocal { try await removeLocal(ids, origin: context.originTimestamp) }
        if context.dataTarget.includesRemote {
            guard let remote else { throw .notSupported("this manager has no remote store") }
            do { _ = try await remote.removeAll(query) } catch { throw .wrap(error) }
        }
        try checkUnchanged(access, context.accessValidator)
        return ids
    }

    // MARK: Internals

    private func admit(_ ids: [E.Identifier], at origin: UInt64?) -> [Bool] {
        clock.withLock { c in
            let stamp = origin ?? c.now()
            return ids.map { c.admit($0, at: stamp) }
        }
    }

    /// Begins a write on every store concurrently (`body`), then releases the write lock, which the caller holds
    /// (also when a store fails); returns the writes in level order, throws the first error (in level order).
    private func beginUnlocking(_ body: @escaping @Sendable (any Store<E>) async throws(StoreError) -> StoreWrite<E>)
        async throws(ManagerError) -> [StoreWrite<E>] {
        defer { writeLock.unlock() }
        if stores.count == 1 {
            do { return [try await body(stores[0])] } catch { throw .wrap(error) }
        }
        let results = await withTaskGroup(of: (Int, Result<StoreWrite<E>, StoreError>).self) { group in
            for (i, store) in stores.enumerated() {
                group.addTask {
                    do throws(StoreError) { return (i, .success(try await body(store))) } catch { return (i, .failure(error)) }
                }
            }
            var all: [(Int, Result<StoreWrite<E>, StoreError>)] = []
            for await r in group { all.append(r) }
            return all.sorted { $0.0 < $1.0 }.map(\.1)
        }
        var values: [StoreWrite<E>] = []
        for result in results {
            switch result {
            case .failure(let error): throw .wrap(error)
            case .success(let value): values.append(value)
            }
        }
        return values
    }

    /// Evaluates again the continuous queries a finished write may affect and publishes their new results.
    /// Refreshes run one at a time (``refreshLock``), each reading the stores after its write finished, so the
    /// last result published is never older than a write that finished.
    private func refreshObservers(changed: [E], removed: [E.Identifier]) async {
        await refreshLock.lock()
        defer { refreshLock.unlock() }
        for observation in observers.affected(changed: changed, removed: removed) {
            let result: QueryResult<E>
            if observation.accessValidator?.userAccess == .noAccess {
                result = .empty
            } else {
                guard let fresh = try? await localSearch(observation.query, contract: observation.contract) else { continue }
                result = fresh
            }
            observers.publish(result, to: observation)
        }
    }

    private func checkRead(_ context: ReadContext<E>) throws(ManagerError) -> UserAccess {
        try checkAccess(context.accessValidator, needsRemote: context.dataSource.needsRemote,
                        naming: "data source \(context.dataSource)")
    }

    private func checkWrite(_ context: WriteContext<E>) throws(ManagerError) -> UserAccess {
        try checkAccess(context.accessValidator, needsRemote: context.dataTarget.includesRemote,
                        naming: "data target \(context.dataTarget)")
    }

    /// The user's access at the start of an operation; throws when it names a remote store this manager lacks or
    /// the user has no access.
    private func checkAccess(_ validator: (any UserAccessValidating)?, needsRemote: Bool,
                             naming what: @autoclosure () -> String) throws(ManagerError) -> UserAccess {
        if needsRemote && remote == nil {
            throw .notSupported("\(what()) needs a remote store; this manager has local stores only")
        }
        let access = validator?.userAccess ?? .remoteAccess
        if access == .noAccess { throw .userAccessInvalid }
        return access
    }

    func checkUnchanged(_ access: UserAccess, _ validator: (any UserAccessValidating)?) throws(ManagerError) {
        if let validator, validator.userAccess != access { throw .userAccessInvalid }
    }
}
