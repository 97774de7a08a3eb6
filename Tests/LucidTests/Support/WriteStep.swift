import Lucid

/// One write of the queued-write tests: a set of entities or the removal of identifiers, begun on the store under
/// test and replayed on a reference store.
enum WriteStep<E: LocalEntity>: Sendable {
    case set([E])
    case remove([E.Identifier])

    /// Begins the write on a disk store without waiting for it to be durable.
    func begin(on store: DiskStore<E>) throws(StoreError) -> StoreWrite<E> {
        switch self {
        case .set(let entities): try store.beginSetNow(entities)
        case .remove(let ids): try store.beginRemoveNow(ids)
        }
    }

    /// Begins the write on a cache store without waiting for it to be durable.
    func begin(on store: CacheStore<E>) throws(StoreError) -> StoreWrite<E> {
        switch self {
        case .set(let entities): try store.beginSetNow(entities)
        case .remove(let ids): try store.beginRemoveNow(ids)
        }
    }

    /// Makes the write on `store` and waits for it: as one batch, or one entity (identifier) at a time.
    func apply(to store: DiskStore<E>, oneAtATime: Bool = false) async throws {
        switch (self, oneAtATime) {
        case (.set(let entities), false): _ = try await store.set(entities)
        case (.remove(let ids), false): try await store.remove(ids)
        case (.set(let entities), true): for entity in entities { _ = try await store.set([entity]) }
        case (.remove(let ids), true): for id in ids { try await store.remove([id]) }
        }
    }
}
