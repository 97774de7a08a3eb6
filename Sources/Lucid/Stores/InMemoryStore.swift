import Synchronization

/// A memory store, optionally bounded: past `limit` entities it evicts the least recently used ones for real
/// (they leave the store, not only the recency list: the original's read-eviction leak, bug 1.15.7, is fixed).
/// Gets and searches count as uses.
///
/// Any filter is evaluated in memory. - Complexity: get, set and remove O(1) per entity on average; search O(n log n).
public final class InMemoryStore<E: LocalEntity>: SynchronousSearchStore {
    private struct State {
        /// Slots by identifier, keyed by the identifiers' halves as bytes (``IdentifierHalves``: not generic, so
        /// lookups make no run-time metadata lookups in this generic code).
        var index = DualHashDictionary<IdentifierHalves, Int>()
        /// Entities by slot (nil: a free slot). The recency list's links live apart, in `prev` and `next`, so
        /// that moving a slot to the front touches two `Int` arrays, never a (generic) entity.
        var entities: [E?] = []
        /// The halves of the identifier of each held slot's entity (what `index` files the slot under).
        var keys: [IdentifierHalves?] = []
        var prev: [Int] = []
        var next: [Int] = []
        var free: [Int] = []
        /// Most recently used slot (-1: none) and least recently used.
        var head = -1
        var tail = -1

        mutating func unlink(_ i: Int) {
            guard keys[i] != nil else { return }
            let p = prev[i], n = next[i]
            if p >= 0 { next[p] = n } else { head = n }
            if n >= 0 { prev[n] = p } else { tail = p }
        }

        mutating func pushFront(_ i: Int) {
            prev[i] = -1
            next[i] = head
            if head >= 0 { prev[head] = i }
            head = i
            if tail < 0 { tail = i }
        }

        mutating func touch(_ i: Int) {
            guard head != i else { return }
            unlink(i)
            pushFront(i)
        }

        /// Empties slot `i` (which must be held and already out of `index`).
        mutating func release(_ i: Int) {
            unlink(i)
            entities[i] = nil
            keys[i] = nil
            free.append(i)
        }

        /// Stores `entity`, whose identifier's halves are `halves`, merged over the entity it replaces, if any;
        /// returns what it stored.
        mutating func insert(_ entity: E, halves: IdentifierHalves) -> E {
            let (match, second) = index.valuePair(matching: halves)
            // The same thing stored once under each half: the write folds both into the remote one.
            if let j = second, let other = keys[j] {
                index.removeValue(forKey: other)
                release(j)
            }
            if let i = match, let storedHalves = keys[i], let stored = entities[i] {
                let merged = EntityMerging.merge(stored: stored, written: entity)
                entities[i] = merged
                // Keyed by exactly the halves the merged entity carries (as the disk store files it): a plain
                // LocalEntity written with fewer halves is no longer found by the half it dropped.
                let mergedHalves = IdentifierHalves(merged.identifier, of: E.self)
                index.removeValues(matching: storedHalves)
                index[mergedHalves] = i
                keys[i] = mergedHalves
                touch(i)
                return merged
            }
            let i: Int
            if let f = free.popLast() {
                i = f
                entities[i] = entity
                keys[i] = halves
            } else {
                i = entities.count
                entities.append(entity)
                keys.append(halves)
                prev.append(-1)
                next.append(-1)
            }
            index[halves] = i
            pushFront(i)
            return entity
        }

        /// Removes every entity equal to the identifier of `halves` (two when it was stored once by each half
        /// alone).
        mutating func remove(_ halves: IdentifierHalves) {
            let (first, second) = index.removeValuePair(matching: halves)
            if let first { release(first) }
            if let second { release(second) }
        }

        mutating func evict(downTo limit: Int) {
            while index.count > limit, tail >= 0, let halves = keys[tail] { remove(halves) }
        }
    }

    private let state = Mutex(State())
    /// The most entities kept (nil: unbounded).
    public let limit: Int?
    public var level: StoreLevel { .memory }

    /// A memory store keeping at most `limit` entities (nil: no limit).
    public init(limit: Int? = nil) {
        self.limit = limit.map { max($0, 0) }
    }

    /// Number of entities held.
    public var count: Int { state.withLock { $0.index.count } }

    public func get(byID identifier: E.Identifier) async throws(StoreError) -> E? {
        getNow(identifier)
    }

    /// Synchronous ``get(byID:)``.
    public func getNow(_ identifier: E.Identifier) -> E? {
        let halves = IdentifierHalves(identifier, of: E.self)
        return state.withLock { s in
            guard let i = s.index[halves] else { return nil }
            s.touch(i)
            return s.entities[i]
        }
    }

    public func search(_ query: Query<E>) async throws(StoreError) -> QueryResult<E> {
        try searchNow(query)
    }

    /// Synchronous ``search(_:)``: identifier lookups through the index, any other query by evaluating every
    /// entity held. - Complexity: O(ids) or O(n) plus sorting the matches. - Throws: ``StoreError/invalidQuery(_:)``.
    public func searchNow(_ query: Query<E>) throws(StoreError) -> QueryResult<E> {
        let evaluator: QueryEvaluator<E>
        do { evaluator = try QueryEvaluator(query) } catch { throw .invalidQuery(error) }
        if let ids = query.identifiers, query.filter.map(Self.isPureIdentifierFilter) == true {
            // Id lookups: no scan.
            let found = state.withLock { s in
                ids.flatMap { id -> [E] in
                    s.index.values(matching: IdentifierHalves(id, of: E.self)).compactMap { i in
                        s.touch(i)
                        return s.entities[i]
                    }
                }
            }
            return evaluator.result(fromMatching: Self.dedup(found))
        }
        let matches = evaluator.predicate()
        let matching = state.withLock { s in
            var out: [E] = []
            for case let entity? in s.entities where matches(entity) { out.append(entity) }
            return out
        }
        let result = evaluator.result(fromMatching: matching)
        let halves = result.entities.map { IdentifierHalves($0.identifier, of: E.self) }
        state.withLock { s in for key in halves { if let i = s.index[key] { s.touch(i) } } }
        return result
    }

    public func set(_ entities: [E]) async throws(StoreError) -> [E] { setNow(entities) }

    /// Synchronous ``set(_:)``.
    @discardableResult
    public func setNow(_ entities: [E]) -> [E] {
        // Keys are built outside the lock. Loops, not `map`, on this path (every write and every disk read a
        // cache store keeps): in this generic code `map` looks the metadata of its closure's types up at run time.
        var halves: [IdentifierHalves] = []
        halves.reserveCapacity(entities.count)
        // (`0 ..< count`: `indices` is a generic collection's, looked up at run time.)
        for i in 0 ..< entities.count { halves.append(IdentifierHalves(entities[i].identifier, of: E.self)) }
        return state.withLock { s in
            var stored: [E] = []
            stored.reserveCapacity(entities.count)
            for i in 0 ..< entities.count { stored.append(s.insert(entities[i], halves: halves[i])) }
            if let limit { s.evict(downTo: limit) }
            return stored
        }
    }

    public func remove(_ identifiers: [E.Identifier]) async throws(StoreError) { removeNow(identifiers) }

    /// Synchronous ``remove(_:)``.
    public func removeNow(_ identifiers: [E.Identifier]) {
        let halves = identifiers.map { IdentifierHalves($0, of: E.self) }
        state.withLock { s in for key in halves { s.remove(key) } }
    }

    public func removeAll(_ query: Query<E>) async throws(StoreError) -> [E.Identifier] {
        let ids = try await search(query).entities.map(\.identifier)
        try await remove(ids)
        return ids
    }

    /// Removes every entity.
    public func clear() { state.withLock { $0 = State() } }

    static func isPureIdentifierFilter(_ filter: Query<E>.Filter) -> Bool { filter.identifiersOnly != nil }

    static func dedup(_ entities: [E]) -> [E] {
        var seen = DualHashSet<E.Identifier>()
        return entities.filter { seen.insert($0.identifier) }
    }
}
