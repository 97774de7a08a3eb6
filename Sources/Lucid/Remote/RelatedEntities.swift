import Synchronization

/// Entities of another type that arrived nested in a payload (e.g. the authors inside a list of books), kept
/// type-erased until a ``PayloadPersisting`` writes them through their own manager.
public struct RelatedEntities: Sendable {
    /// The entity type's id.
    public let identifierTypeID: String
    /// How many entities.
    public let count: Int
    let apply: @Sendable (any PayloadPersisting) async throws(ManagerError) -> Void

    /// A batch of nested entities.
    public init<T: LocalEntity>(_ entities: [T]) {
        identifierTypeID = T.identifierTypeID
        count = entities.count
        apply = { (persisting: any PayloadPersisting) async throws(ManagerError) in try await persisting.persist(entities) }
    }
}

/// Writes nested entities of any type to their local stores (the original's payload persistence manager).
public protocol PayloadPersisting: Sendable {
    /// Writes `entities` locally through the manager of their type; entities of an unregistered type are ignored.
    func persist<T: LocalEntity>(_ entities: [T]) async throws(ManagerError)
}

/// The managers of an app, by entity type: persists nested payload entities through the right one, so their
/// stores and continuous queries update like any other write.
public final class ManagerRegistry: PayloadPersisting {
    private let managers = Mutex<[ObjectIdentifier: any Sendable]>([:])

    public init() {}

    /// Registers the manager of `T` (replacing an earlier one).
    public func register<T: LocalEntity>(_ manager: CoreManager<T>) {
        managers.withLock { $0[ObjectIdentifier(T.self)] = manager }
    }

    public func persist<T: LocalEntity>(_ entities: [T]) async throws(ManagerError) {
        guard !entities.isEmpty,
              let manager = managers.withLock({ $0[ObjectIdentifier(T.self)] }) as? CoreManager<T> else { return }
        _ = try await manager.applyLocal(entities, origin: nil)
    }
}
