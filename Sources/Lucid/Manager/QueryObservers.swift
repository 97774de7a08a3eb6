import Synchronization

/// The continuous queries of one ``CoreManager``: one shared observation per distinct query, holding its
/// latest result and its observers' continuations.
///
/// Each observer's stream buffers only the newest result (a slow observer skips to the latest, never builds a
/// backlog). When an observer stops iterating or drops its stream, its continuation terminates and is removed;
/// the observation goes when its last observer does.
final class QueryObservers<E: LocalEntity>: Sendable {
    final class Observation: Sendable {
        let query: Query<E>
        let contract: any EntityContract
        let accessValidator: (any UserAccessValidating)?
        /// The query's filter, compiled once (regexes included) for deciding which writes affect it.
        let matches: QueryEvaluator<E>.Predicate?
        let state: Mutex<(current: QueryResult<E>, observers: [Int: AsyncStream<QueryResult<E>>.Continuation])>

        init(query: Query<E>, context: ReadContext<E>, current: QueryResult<E>) {
            self.query = query
            contract = context.contract
            accessValidator = context.accessValidator
            matches = (try? QueryEvaluator(query))?.predicate()
            state = Mutex((current, [:]))
        }
    }

    private let observations = Mutex<(list: [Observation], nextID: Int)>(([], 0))

    /// Number of live observations (distinct queries with at least one observer).
    var count: Int { observations.withLock { $0.list.count } }

    /// The observation of `query`, if any.
    func existing(_ query: Query<E>) -> Observation? {
        observations.withLock { o in o.list.first { $0.query == query } }
    }

    /// Adds an observer of `query`; `initial` is the result to start from when the query is not observed yet.
    /// The stream yields the current result first.
    func observe(_ query: Query<E>, context: ReadContext<E>, initial: () -> QueryResult<E>) -> AsyncStream<QueryResult<E>> {
        let (stream, continuation) = AsyncStream<QueryResult<E>>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (observation, id) = observations.withLock { o -> (Observation, Int) in
            o.nextID += 1
            if let found = o.list.first(where: { $0.query == query }) { return (found, o.nextID) }
            let created = Observation(query: query, context: context, current: initial())
            o.list.append(created)
            return (created, o.nextID)
        }
        observation.state.withLock { s in
            s.observers[id] = continuation
            continuation.yield(s.current)
        }
        continuation.onTermination = { [weak self, weak observation] _ in
            guard let self, let observation else { return }
            self.release(observation, id)
        }
        return stream
    }

    private func release(_ observation: Observation, _ id: Int) {
        observations.withLock { o in
            let empty = observation.state.withLock { s -> Bool in
                s.observers[id] = nil
                return s.observers.isEmpty
            }
            if empty { o.list.removeAll { $0 === observation } }
        }
    }

    /// The observations a write of `changed` and removal of `removed` may affect: those whose filter the new
    /// values match, whose current result holds a written or removed identifier, or that skip an offset
    /// (any change before the window shifts it).
    ///
    /// The written and removed identifiers are gathered once; each result's identifiers are compared with them
    /// directly when they are few (a typical write: no set to build per observation, whose generic hashing costs
    /// more than the comparisons), else looked up by their halves (``TouchedHalves``, the same answers).
    /// O(observations × result × written) or O(written + observations × result).
    func affected(changed: [E], removed: [E.Identifier]) -> [Observation] {
        let list = observations.withLock { $0.list }
        guard !list.isEmpty else { return [] }
        let touched = changed.map(\.identifier) + removed
        let halves = touched.count > Self.comparedDirectly ? TouchedHalves(touched) : nil
        return list.filter { observation in
            if (observation.query.offset ?? 0) > 0 { return true }
            let current = observation.state.withLock { $0.current }
            let holdsTouched = current.entities.contains { entity in
                let id = entity.identifier
                if let halves { return halves.contains(id) }
                return touched.contains { $0.dualEquals(id) }
            }
            if holdsTouched { return true }
            guard let matches = observation.matches else { return false }
            return changed.contains(where: matches)
        }
    }

    /// Identifiers looked up by their halves: `contains(id)` is `touched.contains { $0.dualEquals(id) }` (equal
    /// remote halves when both have one, else equal local halves), in O(1) hash lookups. A `DualHashSet` is not:
    /// it merges identifiers that share a half, so of `(local a, remote 5)` and `(local b, remote 5)` it keeps
    /// `(a, 5)` and no longer finds `local b`.
    struct TouchedHalves {
        private var remotes = Set<E.Identifier.RemoteKey>()
        /// Local halves of the identifiers without a remote half: they equal any identifier with that local half.
        private var localsAlone = Set<E.Identifier.LocalKey>()
        /// Local halves of the identifiers with a remote half: they equal only identifiers without a remote half.
        private var localsWithRemote = Set<E.Identifier.LocalKey>()

        init(_ identifiers: [E.Identifier]) {
            for id in identifiers {
                if let remote = id.remoteKey {
                    remotes.insert(remote)
                    if let local = id.localKey { localsWithRemote.insert(local) }
                } else if let local = id.localKey {
                    localsAlone.insert(local)
                }
            }
        }

        /// Whether some identifier of the set `dualEquals` `id`.
        func contains(_ id: E.Identifier) -> Bool {
            if let remote = id.remoteKey, remotes.contains(remote) { return true }
            guard let local = id.localKey else { return false }
            return localsAlone.contains(local) || (id.remoteKey == nil && localsWithRemote.contains(local))
        }
    }

    /// Up to this many written and removed identifiers, ``affected(changed:removed:)`` compares them with each
    /// result's identifiers one by one instead of hashing them.
    static var comparedDirectly: Int { 4 }

    /// Publishes `result` to an observation's observers if it differs from the current one.
    func publish(_ result: QueryResult<E>, to observation: Observation) {
        observation.state.withLock { s in
            guard s.current != result else { return }
            s.current = result
            for continuation in s.observers.values { continuation.yield(result) }
        }
    }
}
