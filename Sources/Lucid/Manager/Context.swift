/// Validates entities coming out of stores: invalid ones are left out of results (and a `get` moves on to the
/// next store).
public protocol EntityContract: Sendable {
    /// Whether entities of this type are checked at all (default: true).
    func shouldValidate<E: Entity>(_ type: E.Type) -> Bool
    /// Whether `entity` may be part of the result of `query`.
    func isEntityValid<E: Entity>(_ entity: E, for query: Query<E>) -> Bool
}

extension EntityContract {
    public func shouldValidate<E: Entity>(_ type: E.Type) -> Bool { true }

    func filter<E: Entity>(_ entities: [E], for query: Query<E>) -> [E] {
        guard shouldValidate(E.self) else { return entities }
        return entities.filter { isEntityValid($0, for: query) }
    }
}

/// The default contract: every entity is valid.
public struct AlwaysValidContract: EntityContract {
    public init() {}
    public func shouldValidate<E: Entity>(_ type: E.Type) -> Bool { false }
    public func isEntityValid<E: Entity>(_ entity: E, for query: Query<E>) -> Bool { true }
}

/// What the current user may reach.
public enum UserAccess: Sendable, Equatable {
    /// Remote and local stores.
    case remoteAccess
    /// Local stores only.
    case localAccess
    /// Nothing: operations throw ``ManagerError/userAccessInvalid``.
    case noAccess
}

/// Tells whether the current user may reach stores; read when an operation starts and again when it ends
/// (a change in between fails the operation with ``ManagerError/userAccessInvalid``).
public protocol UserAccessValidating: Sendable {
    /// The current access level.
    var userAccess: UserAccess { get }
}

/// Whether entities read from the backend are written to the local stores.
public enum PersistenceStrategy: Sendable, Equatable {
    /// What local stores hold beyond a search's remote result.
    public enum DeltaStrategy: Sendable, Equatable {
        /// Keep it.
        case retainExtraLocalData
        /// Remove local entities that match an unpaginated search but are absent from the server's result (the
        /// result is then the complete set).
        case discardExtraLocalData
    }
    /// Write remote results locally (when the user has remote access).
    case persist(DeltaStrategy)
    /// Leave the local stores alone.
    case doNotPersist
}

/// Where a read's data comes from.
public indirect enum DataSource: Sendable, Equatable {
    /// Local stores only.
    case local
    /// The backend (`orLocal`: fall back to local stores when it cannot be reached, times out or has nothing new).
    case _remote(orLocal: Bool, persistence: PersistenceStrategy, trustRemoteFiltering: Bool)
    /// The local result at once, then the remote one (through the continuous query) — or the remote one when
    /// the local result is not satisfying.
    case localThen(DataSource)
    /// The local result when satisfying (ids: all found; otherwise: not empty), else the remote one.
    case localOr(DataSource)

    /// The backend only. By default results are persisted locally (keeping extra local data) and filtered again.
    public static func remote(persistenceStrategy: PersistenceStrategy = .persist(.retainExtraLocalData),
                              trustRemoteFiltering: Bool = false) -> DataSource {
        ._remote(orLocal: false, persistence: persistenceStrategy, trustRemoteFiltering: trustRemoteFiltering)
    }

    /// The backend, falling back to local stores.
    public static func remoteOrLocal(persistenceStrategy: PersistenceStrategy = .persist(.retainExtraLocalData),
                                     trustRemoteFiltering: Bool = false) -> DataSource {
        ._remote(orLocal: true, persistence: persistenceStrategy, trustRemoteFiltering: trustRemoteFiltering)
    }

    /// Whether the source names the backend anywhere.
    var needsRemote: Bool {
        switch self {
        case .local: false
        case ._remote: true
        case .localThen(let s), .localOr(let s): s.needsRemote
        }
    }

    /// The remote part's options (defaults when the inner source is not remote).
    var remoteOptions: (persistence: PersistenceStrategy, trust: Bool) {
        switch self {
        case ._remote(_, let p, let t): (p, t)
        case .localThen(let s), .localOr(let s): s.remoteOptions
        case .local: (.persist(.retainExtraLocalData), false)
        }
    }
}

/// How a read runs: its data source, contract and access validator.
public struct ReadContext<E: LocalEntity>: Sendable {
    public var dataSource: DataSource
    public var contract: any EntityContract
    public var accessValidator: (any UserAccessValidating)? {
        didSet { validatesAccess = accessValidator != nil }
    }
    /// Whether ``accessValidator`` is set: a get's fast path asks this, without copying the existential out to
    /// compare it with nil (an outlined copy and destroy, about 140 instructions).
    private(set) var validatesAccess: Bool
    /// A request made at the call site, used instead of the entity type's (it must match the operation).
    public var remoteRequest: APIRequestConfig?
    /// How that request's answer decodes (nil: the entity type's endpoint for the operation).
    public var remoteEndpoint: RemoteEndpoint<E>?
    /// Where entities of other types nested in a remote payload are persisted (e.g. a ``ManagerRegistry``);
    /// nil: they are dropped.
    public var payloadPersistence: (any PayloadPersisting)?

    /// A context; by default local, every entity valid, no access check.
    public init(dataSource: DataSource = .local, contract: any EntityContract = AlwaysValidContract(),
                accessValidator: (any UserAccessValidating)? = nil, remoteRequest: APIRequestConfig? = nil,
                remoteEndpoint: RemoteEndpoint<E>? = nil, payloadPersistence: (any PayloadPersisting)? = nil) {
        self.dataSource = dataSource
        self.contract = contract
        self.accessValidator = accessValidator
        validatesAccess = accessValidator != nil
        self.remoteRequest = remoteRequest
        self.remoteEndpoint = remoteEndpoint
        self.payloadPersistence = payloadPersistence
    }
}

/// Where a write goes.
public enum DataTarget: Sendable, Equatable {
    /// Local stores.
    case local
    /// The backend only.
    case remote
    /// Local stores and the backend.
    case localAndRemote

    var includesLocal: Bool { self != .remote }
    var includesRemote: Bool { self != .local }
}

/// How a write runs: its target, access validator and ordering timestamp.
public struct WriteContext<E: LocalEntity>: Sendable {
    public var dataTarget: DataTarget
    public var accessValidator: (any UserAccessValidating)?
    /// When the write was decided (nanoseconds since 1970, see ``CoreManager/timestamp()``); a write older than
    /// the last one applied to an identifier is skipped. Nil: now.
    public var originTimestamp: UInt64?
    /// Builds the backend request for each write (`.request`: return one config; `.derivedFromPath`: decide per
    /// path). Nil: the entity type's ``RemoteEntity/requestConfig(for:)``.
    public var remoteRequest: (@Sendable (RemotePath<E>) -> APIRequestConfig?)?

    /// A context for `dataTarget`.
    public init(dataTarget: DataTarget = .local, accessValidator: (any UserAccessValidating)? = nil,
                originTimestamp: UInt64? = nil,
                remoteRequest: (@Sendable (RemotePath<E>) -> APIRequestConfig?)? = nil) {
        self.dataTarget = dataTarget
        self.accessValidator = accessValidator
        self.originTimestamp = originTimestamp
        self.remoteRequest = remoteRequest
    }
}
