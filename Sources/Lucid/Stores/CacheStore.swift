import Synchronization

/// A memory store in front of a disk store, read as one disk-level store (the original's `CacheStore`).
///
/// - `get`: memory, then disk on a miss; a disk hit is cached in memory only if no write was running when the
///   read began and none started meanwhile (a write running then may publish a newer value before the hit is
///   cached).
/// - `search`: from memory only for identifier-only queries without a window when memory holds every id
///   asked; otherwise from disk, caching what an identifier query found.
/// - `set`: disk first, then memory with the disk's merged entities; entities equal to their cached copy
///   (``LocalEntity/shouldOverwrite(with:)`` false) are not rewritten, unless another write of this store is
///   still on its way to the disk or an earlier entity of the batch has the same identifier.
///   `remove`/`removeAll`: disk, then memory.
/// - Writes begin one at a time (a lock held while they compare with memory and queue their disk write) and
///   update memory when the disk publishes them, in the order they began, so memory never shows a value the
///   disk does not hold; concurrent durable writes share the engine's syncs.
public final class CacheStore<E: LocalEntity>: SynchronousSearchStore {
    /// The memory cache.
    public let memory: InMemoryStore<E>
    /// The backing store.
    public let disk: DiskStore<E>
    /// Held while a write compares with memory and begins its disk write (never across a suspension).
    private let writeLock = Mutex(())
    /// Incremented when a write starts, with the writes running; a disk read caches its result only if none ran when
    /// it began and none started since.
    private let generation = Mutex<(started: UInt64, running: Int)>((0, 0))

    public var level: StoreLevel { .disk }

    /// A cache of `memory` over `disk`.
    public init(memory: InMemoryStore<E>, disk: DiskStore<E>) {
        self.memory = memory
        self.disk = disk
    }

    public func get(byID identifier: E.Identifier) async throws(StoreError) -> E? {
        try getNow(identifier)
    }

    /// Synchronous ``get(byID:)``.
    public func getNow(_ identifier: E.Identifier) throws(StoreError) -> E? {
        // The memory's box and the disk's callback, not `E?` locals: in this generic code each `Optional<E>`
        // looks its metadata up at run time (about 330 instructions).
        if let box = memory.box(for: identifier) { return EntityBox<E>.unbox(box) }
        let before = generation.withLock { $0.running == 0 ? $0.started : nil }
        return try disk.getNow(identifier) { found in
            guard let before else { return }
            generation.withLock { g in
                if g.started == before && g.running == 0 { memory.storeNow(found) }
            }
        }
    }

    public func search(_ query: Query<E>) async throws(StoreError) -> QueryResult<E> {
        try searchNow(query)
    }

    /// Synchronous ``search(_:)`` (the rules are the type's): memory's ``InMemoryStore/searchNow(_:)`` for an
    /// identifier query it can answer, else the disk's ``DiskStore/searchNow(_:)``. - Throws: the store errors
    /// of the store that answers.
    public func searchNow(_ query: Query<E>) throws(StoreError) -> QueryResult<E> {
        if let ids = query.identifiers, !query.isPaginated, !query.order.contains(.natural) {
            let result = try memory.searchNow(query)
            if result.count >= DualHashSet(ids).count { return result }
            let before = generation.withLock { $0.running == 0 ? $0.started : nil }
            let fromDisk = try disk.searchNow(query)
            cache(fromDisk.entities, ifUnchangedSince: before)
            return fromDisk
        }
        return try disk.searchNow(query)
    }

    private func cache(_ entities: [E], ifUnchangedSince before: UInt64?) {
        guard let before else { return }
        generation.withLock { g in
            if g.started == before && g.running == 0 { memory.storeNow(entities) }
        }
    }

    public func set(_ entities: [E]) async throws(StoreError) -> [E] {
        try await beginSetNow(entities).finish()
    }

    /// Begins ``set(_:)`` (see ``Store/beginSet(_:)``): the disk write is queued; memory takes the disk's merged
    /// entities once the disk write is published, in the order writes were begun.
    public func beginSet(_ entities: [E]) async throws(StoreError) -> StoreWrite<E> {
        try beginSetNow(entities)
    }

    /// Synchronous ``beginSet(_:)``: compares the entities with their cached copies and begins the disk write.
    public func beginSetNow(_ entities: [E]) throws(StoreError) -> StoreWrite<E> {
        try writeLock.withLock { _ throws(StoreError) -> StoreWrite<E> in
            // Memory is current only when no earlier write is still on its way to the disk: otherwise every
            // entity is written (skipping one equal to a cached copy that a queued write replaces would lose it).
            let alone = begin()
            // A later entity of an identifier already written in this batch is written too (it merges over that one).
            var written = DualHashSet<E.Identifier>()
            let changed = !alone ? entities : entities.filter { entity in
                if written.contains(entity.identifier) { return true }
                guard let cached = memory.getNow(entity.identifier) else {
                    _ = written.insert(entity.identifier)
                    return true
                }
                // Identifier equality ignores a newly known half, so compare the halves too.
                let changes = cached.shouldOverwrite(with: entity)
                    || cached.identifier.storageKey != entity.identifier.storageKey
                    || cached.identifier.localValue != entity.identifier.localValue
                if changes { _ = written.insert(entity.identifier) }
                return changes
            }
            guard !changed.isEmpty else {
                defer { end() }
                return StoreWrite(stored: entities.map { memory.getNow($0.identifier) ?? $0 })
            }
            let partial = changed.count != entities.count
            // The answer of a partial write, taken from memory right after it applies the write (later writes'
            // callbacks come after, in begin order).
            let answer = Answer()
            let write: StoreWrite<E>
            do throws(StoreError) {
                write = try disk.beginSetNow(changed) { [memory, self] published, stored in
                    if published {
                        memory.storeNow(stored)
                        if partial {
                            let current = entities.map { memory.getNow($0.identifier) ?? $0 }
                            answer.value.withLock { $0 = current }
                        }
                    }
                    end()
                }
            } catch {
                end()
                throw error
            }
            if !partial { return write }
            return write.then { answer.value.withLock { $0 } ?? entities }
        }
    }

    public func remove(_ identifiers: [E.Identifier]) async throws(StoreError) {
        _ = try await beginRemoveNow(identifiers).finish()
    }

    /// Begins ``remove(_:)`` (see ``Store/beginRemove(_:)``): memory drops the entities once the disk removal is
    /// published.
    public func beginRemove(_ identifiers: [E.Identifier]) async throws(StoreError) -> StoreWrite<E> {
        try beginRemoveNow(identifiers)
    }

    /// Synchronous ``beginRemove(_:)``.
    public func beginRemoveNow(_ identifiers: [E.Identifier]) throws(StoreError) -> StoreWrite<E> {
        try writeLock.withLock { _ throws(StoreError) -> StoreWrite<E> in
            begin()
            do throws(StoreError) {
                return try disk.beginRemoveNow(identifiers) { [memory, self] published, _ in
                    if published { memory.removeNow(identifiers) }
                    end()
                }
            } catch {
                end()
                throw error
            }
        }
    }

    public func removeAll(_ query: Query<E>) async throws(StoreError) -> [E.Identifier] {
        let ids = try disk.searchNow(query).entities.map(\.identifier)
        try await remove(ids)
        return ids
    }

    /// The answer of a partly unchanged write, set by its disk callback (see ``beginSetNow(_:)``).
    private final class Answer: Sendable { let value = Mutex<[E]?>(nil) }

    /// Counts a write as started and running; returns whether it is the only one running.
    @discardableResult
    private func begin() -> Bool {
        generation.withLock { g in
            g.started &+= 1
            g.running += 1
            return g.running == 1
        }
    }
    private func end() { generation.withLock { $0.running -= 1 } }
}
