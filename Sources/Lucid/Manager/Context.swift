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

/// Where a read's data comes from.
public indirect enum DataSource: Sendable, Equatable {
    /// Local stores only.
    case local
    /// Remote stores (`orLocal`: fall back to local stores when the remote fails).
    case _remote(orLocal: Bool)
    /// Local stores first, then a remote refresh.
    case localThen(DataSource)
    /// Local stores; remote when the local result is empty.
    case localOr(DataSource)

    /// Remote stores only.
    public static func remote() -> DataSource { ._remote(orLocal: false) }
    /// Remote stores, falling back to local ones.
    public static func remoteOrLocal() -> DataSource { ._remote(orLocal: true) }

    /// Whether the source names a remote store anywhere.
    var needsRemote: Bool {
        switch self {
        case .local: false
        case ._remote: true
        case .localThen(let s), .localOr(let s): s.needsRemote
        }
    }
}

/// How a read runs: its data source, contract and access validator.
public struct ReadContext<E: Entity>: Sendable {
    public var dataSource: DataSource
    public var contract: any EntityContract
    public var accessValidator: (any UserAccessValidating)?

    /// A context; by default local, every entity valid, no access check.
    public init(dataSource: DataSource = .local, contract: any EntityContract = AlwaysValidContract(),
                accessValidator: (any UserAccessValidating)? = nil) {
        self.dataSource = dataSource
        self.contract = contract
        self.accessValidator = accessValidator
    }
}

/// Where a write goes.
public enum DataTarget: Sendable, Equatable {
    /// Local stores.
    case local
    /// Remote stores.
    case remote
    /// Both.
    case localAndRemote
}

/// How a write runs: its target, access validator and ordering timestamp.
public struct WriteContext<E: Entity>: Sendable {
    public var dataTarget: DataTarget
    public var accessValidator: (any UserAccessValidating)?
    /// When the write was decided (nanoseconds since 1970, see ``CoreManager/timestamp()``); a write older than
    /// the last one applied to an identifier is skipped. Nil: now.
    public var originTimestamp: UInt64?

    /// A context for `dataTarget`.
    public init(dataTarget: DataTarget = .local, accessValidator: (any UserAccessValidating)? = nil,
                originTimestamp: UInt64? = nil) {
        self.dataTarget = dataTarget
        self.accessValidator = accessValidator
        self.originTimestamp = originTimestamp
    }
}
