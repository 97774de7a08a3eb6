import LucidEngine

/// Where a store keeps its entities; reads through a stack go from the lowest level up.
public enum StoreLevel: Int, Sendable, Comparable {
    case memory = 0
    case disk = 1
    case remote = 2

    public static func < (lhs: StoreLevel, rhs: StoreLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A store of entities of one type. Every method validates its query first (``QueryError``) and reports a
/// failure as a ``StoreError``; nothing is only logged.
public protocol Store<E>: Sendable {
    /// The entity type.
    associatedtype E: LocalEntity
    /// Where the store keeps entities.
    var level: StoreLevel { get }
    /// The entity with this identifier (by local, remote or both), or nil.
    func get(byID identifier: E.Identifier) async throws(StoreError) -> E?
    /// The result of `query`.
    func search(_ query: Query<E>) async throws(StoreError) -> QueryResult<E>
    /// Writes `entities` (each merged over the stored one with `merging`), atomically for the whole list when the
    /// store can; returns the stored entities in the order given.
    func set(_ entities: [E]) async throws(StoreError) -> [E]
    /// Removes the entities with these identifiers (absent ones are ignored).
    func remove(_ identifiers: [E.Identifier]) async throws(StoreError)
    /// Removes the entities matching `query`; returns their identifiers.
    func removeAll(_ query: Query<E>) async throws(StoreError) -> [E.Identifier]
    /// Begins ``set(_:)``: returns once the write's place among this store's writes is fixed (a write begun
    /// later merges over it) and its stored entities are known; ``StoreWrite/finish()`` waits until it is durable
    /// and visible to reads. The default runs `set` whole; ``DiskStore`` returns before its engine's sync.
    func beginSet(_ entities: [E]) async throws(StoreError) -> StoreWrite<E>
    /// Begins ``remove(_:)`` as ``beginSet(_:)`` begins `set`.
    func beginRemove(_ identifiers: [E.Identifier]) async throws(StoreError) -> StoreWrite<E>
}

/// A store whose reads by identifier never suspend (the memory, disk and cache stores):
/// ``CoreManager/get(byID:in:)`` reads a stack of them without an async call per store.
public protocol SynchronousGetStore<E>: Store {
    /// ``Store/get(byID:)`` without suspending. - Throws: as `get(byID:)`.
    func getNow(_ identifier: E.Identifier) throws(StoreError) -> E?
}

/// A store whose searches never suspend either (the memory, disk and cache stores):
/// ``CoreManager/search(withQuery:in:)`` reads a stack of them without an async call per store.
public protocol SynchronousSearchStore<E>: SynchronousGetStore {
    /// ``Store/search(_:)`` without suspending. - Throws: as `search(_:)`.
    func searchNow(_ query: Query<E>) throws(StoreError) -> QueryResult<E>
}

/// A store failure.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// The query is invalid.
    case invalidQuery(QueryError)
    /// The storage engine failed (I/O, corruption, closed store, ...).
    case engine(LucidError)
    /// A stored entity could not be decoded (`key` is the record's primary key, `detail` the decoder's reason).
    case undecodableEntity(keyspace: String, key: [UInt8], detail: String)
    /// An entity could not be encoded.
    case unencodableEntity(String)
    /// The store was closed.
    case closed
    /// The backend failed or could not be reached.
    case api(APIError)
    /// The backend answered 304 with no body: nothing new (reads fall back to local stores).
    case emptyResponse
    /// The store cannot do this (e.g. the entity type has no request for the operation).
    case notSupported(String)
    /// Several stores failed; `current` is the last one tried.
    indirect case composite(current: StoreError, previous: StoreError)

    public var description: String {
        switch self {
        case .invalidQuery(let e): "\(e)"
        case .engine(let e): "storage engine: \(e)"
        case .undecodableEntity(let ks, let key, let detail):
            "entity \(String(decoding: key, as: UTF8.self)) in \(ks) cannot be decoded: \(detail)"
        case .unencodableEntity(let d): "entity cannot be encoded: \(d)"
        case .closed: "the store is closed"
        case .api(let e): "\(e)"
        case .emptyResponse: "the server had nothing new (304)"
        case .notSupported(let d): "not supported: \(d)"
        case .composite(let c, let p): "\(c) (after: \(p))"
        }
    }
}

extension StoreError {
    /// Whether a read should fall back to local stores: the server could not be reached, timed out, or had
    /// nothing new. A chain of errors counts when its latest does (the original never fell back after a
    /// composite error, bug 1.15.10).
    public var shouldFallBackToLocal: Bool {
        switch self {
        case .api(.networkUnreachable), .api(.timeout), .emptyResponse: true
        case .composite(let current, _): current.shouldFallBackToLocal
        default: false
        }
    }

    /// Wraps an engine or other error thrown below a store.
    static func wrap(_ error: any Error) -> StoreError {
        switch error {
        case let e as StoreError: e
        case let e as LucidError: .engine(e)
        case let e as QueryError: .invalidQuery(e)
        case let e as APIError: .api(e)
        default: .unencodableEntity("\(error)")
        }
    }
}
