import LucidEngine

/// A write a store has begun (``Store/beginSet(_:)``, ``Store/beginRemove(_:)``): its place among the store's
/// writes is fixed and what it stores is known, but it may not be durable yet. ``finish()`` waits until it is.
///
/// Splitting a write in two lets a caller that orders writes (``CoreManager``) hold its lock only while the
/// write is prepared: concurrent durable writes then wait for their syncs together, and share them.
public struct StoreWrite<E: LocalEntity>: Sendable {
    /// The stored entities, merged, in the order given (empty for a removal), unless `resolve` gives them.
    private let stored: [E]
    /// The engine commit still to wait for, if any.
    private let ticket: CommitTicket?
    /// What ``finish()`` returns, computed once the write is durable, when it depends on that (a cache store's
    /// answer for entities it did not rewrite).
    private let resolve: (@Sendable () -> [E])?

    /// A write already finished (durable, or needing nothing more) that stored `stored`.
    public init(stored: [E]) {
        self.stored = stored
        self.ticket = nil
        self.resolve = nil
    }

    /// A write that is finished once `ticket` completes; `resolve`, if given, computes then what it stored.
    init(stored: [E], ticket: CommitTicket?, resolve: (@Sendable () -> [E])? = nil) {
        self.stored = stored
        self.ticket = ticket
        self.resolve = resolve
    }

    /// This write, with ``finish()`` returning what `resolve` computes once the write is durable.
    func then(_ resolve: @escaping @Sendable () -> [E]) -> StoreWrite<E> {
        StoreWrite(stored: stored, ticket: ticket, resolve: resolve)
    }

    /// Waits until the write is durable (per the engine's sync mode) and visible to reads; returns the stored
    /// entities, merged, in the order given (empty for a removal). Free once finished; otherwise suspends, not
    /// cancellably (the write is queued and goes on).
    /// - Throws: ``StoreError/engine(_:)`` when the engine failed the write (then nothing of it is stored).
    public func finish() async throws(StoreError) -> [E] {
        if let ticket {
            do { _ = try await ticket.sequence } catch { throw .wrap(error) }
        }
        return resolve?() ?? stored
    }
}

extension Store {
    /// ``Store/set(_:)`` whole: returns once the write is finished.
    public func beginSet(_ entities: [E]) async throws(StoreError) -> StoreWrite<E> {
        StoreWrite(stored: try await set(entities))
    }

    /// ``Store/remove(_:)`` whole: returns once the removal is finished.
    public func beginRemove(_ identifiers: [E.Identifier]) async throws(StoreError) -> StoreWrite<E> {
        try await remove(identifiers)
        return StoreWrite(stored: [])
    }
}
