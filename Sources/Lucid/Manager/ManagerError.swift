/// A ``CoreManager`` failure, by domain.
public enum ManagerError: Error, Sendable, CustomStringConvertible {
    /// A store failed.
    case store(StoreError)
    /// The query is invalid.
    case invalidQuery(QueryError)
    /// Two writes or identifiers conflict (e.g. a stale single `set` with nothing stored, identifiers whose
    /// halves differ).
    case conflict(String)
    /// The operation needs something this manager lacks (e.g. a remote data source without a remote store).
    case notSupported(String)
    /// The access validator denied the operation, or the access level changed while it ran.
    case userAccessInvalid
    /// The manager was misused (a bug in the caller).
    case logicalError(String)

    public var description: String {
        switch self {
        case .store(let e): "store: \(e)"
        case .invalidQuery(let e): "\(e)"
        case .conflict(let d): "conflict: \(d)"
        case .notSupported(let d): "not supported: \(d)"
        case .userAccessInvalid: "user access invalid"
        case .logicalError(let d): "logical error: \(d)"
        }
    }
}

extension ManagerError {
    static func wrap(_ error: StoreError) -> ManagerError {
        if case .invalidQuery(let q) = error { return .invalidQuery(q) }
        return .store(error)
    }
}
