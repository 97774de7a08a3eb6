import Synchronization

/// A memory store, optionally bounded: past `limit` entities it evicts the least recently used ones for real
/// (they leave the store, not only the recency list: the original's read-eviction leak, bug 1.15.7, is fixed).
/// Gets and searches count as uses.
///
/// Any filter is evaluated in memory. - Complexity: get, set and remove O(1) per entity on average; search O(n log n).
public final class InMemoryStore<E: LocalEntity>: SynchronousSearchStore {
    /// The entities, boxed, and their recency list: not generic (see ``InMemoryTable``), so that the store's
    /// generic code makes no run-time metadata lookups beyond boxing.
    private let table = Mutex(InMemoryTable())
    /// The most entities kept (nil: unbounded).
    public let limit: Int?
    public var level: StoreLevel { .memory }

    /// A memory store keeping at most `limit` entities (nil: no limit).
    public init(limit: Int? = nil) {
        self.limit = limit.map { max($0, 0) }
    }

    /// Number of entities held.
    public var count: Int { table.withLock { $0.count } }

    public func get(byID identifier: E.Identifier) async throws(StoreError) -> E? {
        getNow(identifier)
    }

    /// Synchronous ``get(byID:)``.
    public func getNow(_ identifier: E.Identifier) -> E? {
        guard let box = box(for: identifier) else { return nil }
        return EntityBox<E>.unbox(box)
    }

    /// The boxed entity for `identifier`, made the most recently used (nil when not held): what ``getNow(_:)``
    /// unboxes, for a caller that would otherwise hold the entity in an `Optional` (a run-time metadata lookup in
    /// generic code). - Complexity: O(1) expected.
    func box(for identifier: E.Identifier) -> InMemoryTable.Box? {
        let halves = IdentifierHalves(identifier, of: E.self)
        return table.withLock { $0.use(halves) }
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
            var halves: [IdentifierHalves] = []
            halves.reserveCapacity(ids.count)
            for id in ids { halves.append(IdentifierHalves(id, of: E.self)) }
            var boxes: [InMemoryTable.Box] = []
            table.withLock { t in for key in halves { t.useAll(matching: key, into: &boxes) } }
            return evaluator.result(fromMatching: Self.dedup(unboxed(boxes)))
        }
        let matches = evaluator.predicate()
        var matching: [E] = []
        table.withLock { t in
            t.forEach { box in
                let entity = EntityBox<E>.unbox(box)
                if matches(entity) { matching.append(entity) }
            }
        }
        let result = evaluator.result(fromMatching: matching)
        var halves: [IdentifierHalves] = []
        halves.reserveCapacity(result.entities.count)
        for entity in result.entities { halves.append(IdentifierHalves(entity.identifier, of: E.self)) }
        table.withLock { t in for key in halves { _ = t.use(key) } }
        return result
    }

    public func set(_ entities: [E]) async throws(StoreError) -> [E] { setNow(entities) }

    /// Synchronous ``set(_:)``: each entity merged over the one it replaces (``LocalEntity/merging(_:)``, keeping
    /// both identifier halves), then least recently used entities evicted past ``limit``. Returns what it stored.
    @discardableResult
    public func setNow(_ entities: [E]) -> [E] {
        var stored: [E] = []
        stored.reserveCapacity(entities.count)
        store(entities) { stored.append($0) }
        return stored
    }

    /// ``setNow(_:)`` without building its answer (a cache store keeping what the disk returned).
    func storeNow(_ entities: [E]) { store(entities) { _ in } }

    /// ``storeNow(_:)`` of one entity, without an array.
    func storeNow(_ entity: E) {
        let halves = IdentifierHalves(entity.identifier, of: E.self)
        table.withLock { t in
            _ = insert(entity, halves: halves, into: &t)
            if let limit { t.evict(downTo: limit) }
        }
    }

    /// Stores `entities` in order, handing each stored (merged) entity to `body` under the lock.
    private func store(_ entities: [E], _ body: (E) -> Void) {
        // Keys are built outside the lock. Loops, not `map`, on this path (every write and every disk read a
        // cache store keeps): in this generic code `map` looks the metadata of its closure's types up at run time.
        var halves: [IdentifierHalves] = []
        halves.reserveCapacity(entities.count)
        // (`0 ..< count`: `indices` is a generic collection's, looked up at run time.)
        for i in 0 ..< entities.count { halves.append(IdentifierHalves(entities[i].identifier, of: E.self)) }
        table.withLock { t in
            for i in 0 ..< entities.count { body(insert(entities[i], halves: halves[i], into: &t)) }
            if let limit { t.evict(downTo: limit) }
        }
    }

    /// Stores `entity`, whose identifier's halves are `halves`, merged over the entity it replaces, if any;
    /// returns what it stored.
    private func insert(_ entity: E, halves: IdentifierHalves, into t: inout InMemoryTable) -> E {
        let (match, second) = t.slots(matching: halves)
        // The same thing stored once under each half: the write folds both into the remote one.
        if let j = second { t.drop(j) }
        if let i = match, let held = t.entry(at: i) {
            let stored = EntityBox<E>.unbox(held.box)
            let merged = EntityMerging.merge(stored: stored, written: entity)
            // Keyed by exactly the halves the merged entity carries (as the disk store files it): a plain
            // LocalEntity written with fewer halves is no longer found by the half it dropped.
            t.replace(i, with: E._box(merged), filedUnder: IdentifierHalves(merged.identifier, of: E.self))
            return merged
        }
        t.add(E._box(entity), filedUnder: halves)
        return entity
    }

    public func remove(_ identifiers: [E.Identifier]) async throws(StoreError) { removeNow(identifiers) }

    /// Synchronous ``remove(_:)``.
    public func removeNow(_ identifiers: [E.Identifier]) {
        var halves: [IdentifierHalves] = []
        halves.reserveCapacity(identifiers.count)
        for id in identifiers { halves.append(IdentifierHalves(id, of: E.self)) }
        table.withLock { t in for key in halves { t.remove(key) } }
    }

    public func removeAll(_ query: Query<E>) async throws(StoreError) -> [E.Identifier] {
        let ids = try await search(query).entities.map(\.identifier)
        try await remove(ids)
        return ids
    }

    /// Removes every entity.
    public func clear() { table.withLock { $0 = InMemoryTable() } }

    /// Checks the store's bookkeeping (``InMemoryTable/checkInvariants()``): for tests. O(n); traps when broken.
    func checkInvariants() { table.withLock { $0.checkInvariants() } }

    /// Identifiers held, most recently used first: for tests. O(n).
    var identifiersByRecency: [E.Identifier] {
        table.withLock { t in t.byRecency.map { EntityBox<E>.unbox($0).identifier } }
    }

    private func unboxed(_ boxes: [InMemoryTable.Box]) -> [E] {
        var entities: [E] = []
        entities.reserveCapacity(boxes.count)
        for box in boxes { entities.append(EntityBox<E>.unbox(box)) }
        return entities
    }

    static func isPureIdentifierFilter(_ filter: Query<E>.Filter) -> Bool { filter.identifiersOnly != nil }

    static func dedup(_ entities: [E]) -> [E] {
        var seen = DualHashSet<E.Identifier>()
        return entities.filter { seen.insert($0.identifier) }
    }
}
