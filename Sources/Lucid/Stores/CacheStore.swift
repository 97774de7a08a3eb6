import Synchronization

/// A memory store in front of a disk store, read as one disk-level store (the original's `CacheStore`).
///
/// - `get`: memory, then disk on a miss; a disk hit is cached in memory unless a write started meanwhile.
/// - `search`: from memory only for identifier-only queries without a window when memory holds every id
///   asked; otherwise from disk, caching what an identifier query found.
/// - `set`: disk first, then memory with the disk's merged entities; entities equal to their cached copy
///   (``LocalEntity/shouldOverwrite(with:)`` false) are not rewritten. `remove`/`removeAll`: disk, then memory.
/// - Writes are serialized (a FIFO async lock), so memory never shows a value the disk does not hold.
public final class CacheStore<E: LocalEntity>: SynchronousSearchStore {
    /// The memory cache.
    public let memory: InMemoryStore<E>
    /// The backing store.
    public let disk: DiskStore<E>
    private let writeLock = AsyncMutex()
    /// Incremented when a write starts; a disk read caches its result only if no write started since.
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
        if let hit = memory.getNow(identifier) { return hit }
        let before = generation.withLock { $0.started }
        guard let found = try disk.getNow(identifier) else { return nil }
        cache([found], ifUnchangedSince: before)
        return found
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
            let before = generation.withLock { $0.started }
            let fromDisk = try disk.searchNow(query)
            cache(fromDisk.entities, ifUnchangedSince: before)
            return fromDisk
        }
        return try disk.searchNow(query)
    }

    private func cache(_ entities: [E], ifUnchangedSince before: UInt64) {
        generation.withLock { g in
            if g.started == before && g.running == 0 { memory.setNow(entities) }
        }
    }

    public func set(_ entities: [E]) async throws(StoreError) -> [E] {
        await writeLock.lock()
        defer { writeLock.unlock() }
        begin()
        defer { end() }
        let changed = entities.filter { entity in
            guard let cached = memory.getNow(entity.identifier) else { return true }
            // Identifier equality ignores a newly known half, so compare the halves too.
            return cached.shouldOverwrite(with: entity) || cached.identifier.storageKey != entity.identifier.storageKey
                || cached.identifier.localValue != entity.identifier.localValue
        }
        guard !changed.isEmpty else { return entities.map { memory.getNow($0.identifier) ?? $0 } }
        let stored = try await disk.set(changed)
        memory.setNow(stored)
        if changed.count == entities.count { return stored }
        return entities.map { memory.getNow($0.identifier) ?? $0 }
    }

    public func remove(_ identifiers: [E.Identifier]) async throws(StoreError) {
        await writeLock.lock()
        defer { writeLock.unlock() }
        begin()
        defer { end() }
        try await disk.remove(identifiers)
        try await memory.remove(identifiers)
    }

    public func removeAll(_ query: Query<E>) async throws(StoreError) -> [E.Identifier] {
        let ids = try disk.searchNow(query).entities.map(\.identifier)
        try await remove(ids)
        return ids
    }

    private func begin() { generation.withLock { $0.started &+= 1; $0.running += 1 } }
    private func end() { generation.withLock { $0.running -= 1 } }
}
