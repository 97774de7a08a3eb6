import Foundation
@testable import Lucid
import LucidEngine
import Testing

/// A record that does not decode fails every read that meets it with `undecodableEntity` naming its key, on
/// every read path (get, a scan, an index query filling its result in place), and the reads that do not meet
/// it are unaffected.
@Suite("Undecodable records")
struct UndecodableRecordTests {
    @Test("get, scans and index queries that meet a bad record throw undecodableEntity with its key")
    func badRecord() async throws {
        let temp = try TemporaryStore()
        let store = DiskStore<Book>(engine: temp.engine)
        _ = try await store.set((1...9).map { Book.remote($0, "t\($0)", genre: "g") })
        // Record 5 replaced by bytes that are no entity, with the index terms of a genre "g" book.
        let bad = Book.remote(5, "t5", genre: "g")
        var batch = WriteBatch()
        batch.put([1, 0xEE, 0xEE], forKey: bad.identifier.storageKey, in: store.keyspace,
                  indexTerms: DiskStore<Book>.terms(of: bad))
        try temp.engine.commitAndWait(batch)

        func expectUndecodable(_ what: String, _ body: () async throws -> Void) async {
            do {
                try await body()
                Issue.record("\(what): the bad record was read")
            } catch let error as StoreError {
                guard case .undecodableEntity(_, let key, _) = error else {
                    Issue.record("\(what): \(error)")
                    return
                }
                #expect(key == bad.identifier.storageKey, "\(what)")
            } catch {
                Issue.record("\(what): \(error)")
            }
        }
        await expectUndecodable("get") { _ = try store.getNow(.remote(5)) }
        await expectUndecodable("scan") { _ = try await store.search(.all) }
        await expectUndecodable("index query") { _ = try await store.search(.filter(.genre == .string("g"))) }
        // Reads that do not meet it.
        #expect(try store.getNow(.remote(4))?.title == "t4")
        let firstFour = try await store.search(.filter(.genre == .string("g")).with(limit: 4))
        #expect(firstFour.entities.map(\.title) == ["t1", "t2", "t3", "t4"])
        #expect(try await store.search(.all.with(limit: 3)).entities.count == 3)
    }
}
