/// Which remote operation a request is built for.
public enum RemotePath<E: LocalEntity>: Sendable {
    case get(E.Identifier)
    /// A search; the query's ``Query/context`` tells which endpoint serves it.
    case search(Query<E>)
    /// Creating an entity the server does not know yet (its identifier has no remote value).
    case create(E)
    /// Updating an entity the server knows.
    case update(E)
    case remove(E.Identifier)
    case removeAll(Query<E>)

    /// `.create` for an entity without a remote id, `.update` otherwise.
    public static func set(_ entity: E) -> RemotePath {
        entity.identifier.remoteValueDescription == nil ? .create(entity) : .update(entity)
    }
}

/// An entity the backend serves: how to build the request for each remote operation, and how to read the
/// response.
public protocol RemoteEntity: LocalEntity {
    /// The request for `remotePath`, or nil when the backend has no such endpoint (default: nil).
    static func requestConfig(for remotePath: RemotePath<Self>) -> APIRequestConfig?
    /// How the response to `remotePath` decodes (nil: the response carries no entity, e.g. a DELETE).
    static func endpoint(for remotePath: RemotePath<Self>) -> RemoteEndpoint<Self>?
}

extension RemoteEntity {
    public static func requestConfig(for remotePath: RemotePath<Self>) -> APIRequestConfig? { nil }
    public static func endpoint(for remotePath: RemotePath<Self>) -> RemoteEndpoint<Self>? { nil }
}
