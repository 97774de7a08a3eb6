/// Reads by data source: local, remote (with persistence and fallback), local-then-remote, local-or-remote.
extension CoreManager {
    /// The source a read really uses: local only when the user has local access only.
    func effectiveSource(_ context: ReadContext<E>, _ access: UserAccess) -> DataSource {
        access == .localAccess ? .local : context.dataSource
    }

    func dispatchGet(_ id: E.Identifier, _ context: ReadContext<E>, access: UserAccess) async throws(ManagerError) -> E? {
        let source = effectiveSource(context, access)
        switch source {
        case .local:
            return try await localGet(id, context)
        case ._remote(let orLocal, let persistence, _):
            return try await remoteGet(id, context, persistence, fallBack: orLocal)
        case .localThen:
            if let local = try await localGet(id, context) {
                // The local entity now; the remote one refreshes the stores and continuous queries after.
                let persistence = source.remoteOptions.persistence
                Task { _ = try? await self.remoteGet(id, context, persistence, fallBack: false) }
                return local
            }
            return try await remoteGet(id, context, source.remoteOptions.persistence, fallBack: true)
        case .localOr:
            if let local = try await localGet(id, context) { return local }
            return try await remoteGet(id, context, source.remoteOptions.persistence, fallBack: true)
        }
    }

    func dispatchSearch(_ query: Query<E>, _ context: ReadContext<E>, access: UserAccess) async throws(ManagerError)
        -> QueryResult<E> {
        let source = effectiveSource(context, access)
        let (persistence, trust) = source.remoteOptions
        switch source {
        case .local:
            return try await localSearch(query, contract: context.contract)
        case ._remote(let orLocal, _, _):
            return try await remoteSearch(query, context, persistence, trust, fallBack: orLocal)
        case .localThen, .localOr:
            let local = try await localSearch(query, contract: context.contract)
            guard isSatisfying(local, for: query) else {
                return try await remoteSearch(query, context, persistence, trust, fallBack: true)
            }
            if case .localThen = source {
                Task { _ = try? await self.remoteSearch(query, context, persistence, trust, fallBack: false) }
            }
            return local
        }
    }

    /// A local result is enough: every id of an id query found, or anything found for another query.
    private func isSatisfying(_ result: QueryResult<E>, for query: Query<E>) -> Bool {
        if let ids = query.identifiers { return result.count >= DualHashSet(ids).count }
        return !result.isEmpty
    }

    private func remoteGet(_ id: E.Identifier, _ context: ReadContext<E>, _ persistence: PersistenceStrategy,
                           fallBack: Bool) async throws(ManagerError) -> E? {
        guard let remote else { throw .notSupported("this manager has no remote store") }
        let started = timestamp()
        let found: E?
        let related: [RelatedEntities]
        do { (found, related) = try await remote.fetch(byID: id, request: context.remoteRequest, endpoint: context.remoteEndpoint) } catch {
            if fallBack && error.shouldFallBackToLocal { return try await localGet(id, context) }
            throw .wrap(error)
        }
        if shouldPersist(persistence, context) { try await persistRelated(related, context) }
        guard let found else { return nil }   // a 404 deletes nothing locally (the original did, bug 1.15.6)
        let valid = !context.contract.shouldValidate(E.self) || context.contract.isEntityValid(found, for: .identifier(id))
        guard valid else { return nil }
        if shouldPersist(persistence, context) {
            // Stamped when the request started: a local write made meanwhile wins.
            if let stored = try await applyLocal([found], origin: started).stored.first { return stored }
            return try await localGet(id, context)
        }
        return found
    }

    private func remoteSearch(_ query: Query<E>, _ context: ReadContext<E>, _ persistence: PersistenceStrategy,
                              _ trust: Bool, fallBack: Bool) async throws(ManagerError) -> QueryResult<E> {
        guard let remote else { throw .notSupported("this manager has no remote store") }
        let started = timestamp()
        var result: QueryResult<E>
        let related: [RelatedEntities]
        do { (result, related) = try await remote.fetch(query, request: context.remoteRequest, endpoint: context.remoteEndpoint,
                                                     trustRemoteFiltering: trust) } catch {
            if fallBack && error.shouldFallBackToLocal { return try await localSearch(query, contract: context.contract) }
            throw .wrap(error)
        }
        let valid = context.contract.filter(result.entities, for: query)
        if valid.count != result.count { result = QueryResult(entities: valid, groupName: query.groupName) }
        guard shouldPersist(persistence, context) else { return result }
        try await persistRelated(related, context)
        _ = try await applyLocal(result.entities, origin: started)
        if persistence == .persist(.discardExtraLocalData), !query.isPaginated {
            // The server's answer is the complete set: local matches it lacks are gone.
            var unwindowed = query
            unwindowed.groupedBy = nil
            let local = try await localSearch(unwindowed, contract: AlwaysValidContract())
            let kept = DualHashSet(result.entities.map(\.identifier))
            let extra = local.entities.map(\.identifier).filter { !kept.contains($0) }
            if !extra.isEmpty { try await removeLocal(extra, origin: started) }
        }
        return result
    }

    /// Nested entities of other types go through the context's payload persistence (their own managers).
    private func persistRelated(_ related: [RelatedEntities], _ context: ReadContext<E>) async throws(ManagerError) {
        guard let persisting = context.payloadPersistence else { return }
        for batch in related { try await batch.apply(persisting) }
    }

    /// Remote results are written locally when the strategy persists and the user has remote access.
    private func shouldPersist(_ persistence: PersistenceStrategy, _ context: ReadContext<E>) -> Bool {
        guard case .persist = persistence, !stores.isEmpty else { return false }
        return (context.accessValidator?.userAccess ?? .remoteAccess) == .remoteAccess
    }

    /// A create queued by an earlier run is answered with nobody waiting: fold the server's id into the local
    /// entity and rewrite the queued requests still naming its local id, before the queue sends the next one.
    ///
    /// The handler reaches the remote store and the queue through the manager, held weakly: the queue keeps its
    /// handlers, so capturing either of them would make a cycle (queue → handler → remote store → queue) that
    /// keeps both, and the queue's engine, alive after the manager is gone and the queue closed.
    func adoptCreatesAnsweredLater() {
        guard let queue = remote?.queue else { return }
        queue.onOutcome { [weak self] outcome in
            guard let self, let remote = self.remote, let queue = remote.queue, !outcome.hadWaiter,
                  case .success(let response) = outcome.result,
                  let local = remote.createdLocalID(outcome.request) else { return }
            let stored = self.stores.isEmpty ? nil : try? await self.localEntity(withLocalID: local)
            guard let stored, let adopted = remote.adoptCreateAnswer(response, for: stored),
                  let remoteID = adopted.identifier.remoteValueDescription else { return }
            _ = try? await self.applyLocal([adopted], origin: nil)
            try? await queue.rewriteIdentifier(typeID: E.identifierTypeID, local: local, remote: remoteID)
        }
    }

    /// The locally stored entity whose identifier has this local value.
    private func localEntity(withLocalID local: String) async throws(ManagerError) -> E? {
        try await localGet(E.Identifier.local(local), ReadContext())
    }
}
