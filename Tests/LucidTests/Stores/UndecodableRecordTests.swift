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

    /// A fetch of more records than `ParallelDecode.minimumCount` decodes them on several threads: it returns what
    /// one-key reads return, in the order asked, and a bad record fails it with the key of the first bad one in
    /// that order, as a fetch decoding them in turn would.
    @Test("a large fetch, decoded on several threads, answers and fails as one decoding in turn")
    func largeFetch() async throws {
        let temp = try TemporaryStore()
        let store = DiskStore<Book>(engine: temp.engine)
        let count = ParallelDecode.minimumCount + 1_000
        let books = (0..<count).map { Book.remote($0, "t\($0)", pages: $0 % 50) }
        for start in stride(from: 0, to: count, by: 1_000) {
            _ = try await store.set(Array(books[start..<min(start + 1_000, count)]))
        }
        // Keys in a scrambled order, some twice, none cached.
        var keys = books.map(\.identifier.storageKey)
        keys = (0..<keys.count).map { keys[($0 &* 7_919) % keys.count] } + keys.prefix(50)
        let fresh = DiskStore<Book>(engine: temp.engine)
        let fetched = try fresh.fetch(keys, in: try fresh.openSnapshot())
        #expect(fetched.map(\.identifier.storageKey) == keys)
        #expect(fetched.allSatisfy { $0 == books[$0.identifier.remoteValue!] })
        // Keys with no record and keys the cache answers, among the reads: the reads are not the slots.
        let warm = DiskStore<Book>(engine: temp.engine)
        let cachedKeys = Array(keys[100..<400])
        for _ in 0..<2 { _ = try warm.fetch(cachedKeys, in: try warm.openSnapshot()) }
        let absent = (0..<300).map { Book.remote(1_000_000 + $0, "none").identifier.storageKey }
        let mixed = keys.enumerated().flatMap { i, key in i % 20 == 0 ? [absent[(i / 20) % absent.count], key] : [key] }
        let mixedFetched = try warm.fetch(mixed, in: try warm.openSnapshot())
        #expect(mixedFetched.map(\.identifier.storageKey) == keys)
        #expect(mixedFetched.allSatisfy { $0 == books[$0.identifier.remoteValue!] })

        // Two records replaced by bytes that are no entity: the one met first in the fetch's order is named.
        let badIDs = [keys[4_000], keys[1_200]].map { key in books.first { $0.identifier.storageKey == key }! }
        for bad in badIDs {
            var batch = WriteBatch()
            batch.put([1, 0xEE, 0xEE], forKey: bad.identifier.storageKey, in: store.keyspace,
                      indexTerms: DiskStore<Book>.terms(of: bad))
            try temp.engine.commitAndWait(batch)
        }
        func expectFetchFails(naming expected: [UInt8]) {
            let another = DiskStore<Book>(engine: temp.engine)
            do {
                _ = try another.fetch(keys, in: try another.openSnapshot())
                Issue.record("the bad records were read")
            } catch {
                guard case .undecodableEntity(_, let key, _) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(key == expected)
            }
        }
        expectFetchFails(naming: keys[1_200])
        // Raw records written as the store would (a `set` would merge with the bad record and fail).
        func putRaw(_ bytes: [UInt8], for book: Book) throws {
            var batch = WriteBatch()
            batch.put(bytes, forKey: book.identifier.storageKey, in: store.keyspace, indexTerms: DiskStore<Book>.terms(of: book))
            try temp.engine.commitAndWait(batch)
        }
        // The first one written good again: the other, in a later chunk, is named.
        try putRaw(try badIDs[1].encodeRecord(), for: badIDs[1])
        expectFetchFails(naming: keys[4_000])
        // And one in the last chunk, after it.
        let last = books.first { $0.identifier.storageKey == keys[keys.count - 60] }!
        try putRaw([1, 0xEE], for: last)
        try putRaw(try badIDs[0].encodeRecord(), for: badIDs[0])
        expectFetchFails(naming: keys[keys.count - 60])
    }
}
