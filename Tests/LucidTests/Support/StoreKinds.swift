import Lucid
import LucidEngine

/// One store of each kind, so the conformance suite runs against every one.
enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case memory, lru, disk, cache

    var description: String { rawValue }

    /// A fresh store (and the engine directory keeping it alive, for disk kinds).
    func make() throws -> (store: any Store<Book>, holder: TemporaryStore?) {
        switch self {
        case .memory:
            return (InMemoryStore<Book>(), nil)
        case .lru:
            return (InMemoryStore<Book>(limit: 10_000), nil)
        case .disk:
            let temp = try TemporaryStore()
            return (DiskStore<Book>(engine: temp.engine), temp)
        case .cache:
            let temp = try TemporaryStore()
            return (CacheStore(memory: InMemoryStore<Book>(limit: 50), disk: DiskStore<Book>(engine: temp.engine)), temp)
        }
    }
}
