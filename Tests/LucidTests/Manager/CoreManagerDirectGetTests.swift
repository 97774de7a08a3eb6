import Foundation
@testable import Lucid
import LucidEngine
import Testing

/// `CoreManager.get` over one synchronous store, with no access validator and a contract that validates nothing,
/// returns the store's answer directly; it must throw what the checked path throws.
@Suite("CoreManager: the direct get")
struct CoreManagerDirectGetTests {
    /// Accepts every entity but validates (the default `shouldValidate`), so that `get` takes its checked path.
    struct AcceptEverything: EntityContract {
        func isEntityValid<E: Entity>(_ entity: E, for query: Query<E>) -> Bool { true }
    }

    @Test("an undecodable record and a closed engine: the same errors as the checked path")
    func errors() async throws {
        let temp = try TemporaryStore()
        let disk = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 0)
        let manager = CoreManager<Book>(store: disk)
        _ = try await disk.set([Book.remote(1, "one")])
        let bad = Book.remote(2, "two")
        var batch = WriteBatch()
        batch.put([1, 0xEE, 0xEE], forKey: bad.identifier.storageKey, in: disk.keyspace)
        try temp.engine.commitAndWait(batch)

        func failure(_ id: Int, _ context: ReadContext<Book>) async -> ManagerError? {
            do {
                _ = try await manager.get(byID: .remote(id), in: context)
                return nil
            } catch { return error }
        }
        let direct = ReadContext<Book>()
        let checked = ReadContext<Book>(contract: AcceptEverything())
        #expect(try await manager.get(byID: .remote(1))?.title == "one")
        let undecodable = await failure(2, direct)
        #expect(String(describing: undecodable) == String(describing: await failure(2, checked)))
        guard case .store(.undecodableEntity(_, let key, _))? = undecodable else {
            Issue.record("direct path: \(String(describing: undecodable))")
            return
        }
        #expect(key == bad.identifier.storageKey)
        try temp.engine.close()
        let closed = await failure(1, direct)
        #expect(String(describing: closed) == String(describing: await failure(1, checked)))
        guard case .store(.closed)? = closed else {
            Issue.record("direct path: \(String(describing: closed))")
            return
        }
    }
}
