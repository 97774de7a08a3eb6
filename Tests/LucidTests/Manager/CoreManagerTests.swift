import Foundation
import Synchronization
import Testing
import Lucid
import LucidEngine

/// An access validator whose level the test changes, optionally after a number of reads.
final class SwitchableAccess: UserAccessValidating, Sendable {
    private let state: Mutex<(access: UserAccess, flipAfterReads: Int?, reads: Int)>
    init(_ access: UserAccess, flipToLocalAfterReads: Int? = nil) { state = Mutex((access, flipToLocalAfterReads, 0)) }
    var userAccess: UserAccess {
        state.withLock { s in
            s.reads += 1
            if let n = s.flipAfterReads, s.reads > n { return .localAccess }
            return s.access
        }
    }
}

/// Rejects books with fewer than 100 pages.
struct LongBooksOnly: EntityContract {
    func isEntityValid<E: Entity>(_ entity: E, for query: Query<E>) -> Bool {
        (entity as? Book).map { $0.pages >= 100 } ?? true
    }
}

/// A store that answers only through the async `Store` API (as a custom store would), so that `CoreManager.get`
/// takes its general, suspending path instead of calling `SynchronousGetStore.getNow`.
struct AsyncOnlyStore: Store {
    let base: DiskStore<Book>
    var level: StoreLevel { base.level }
    func get(byID identifier: Book.Identifier) async throws(StoreError) -> Book? { try await base.get(byID: identifier) }
    func search(_ query: Query<Book>) async throws(StoreError) -> QueryResult<Book> { try await base.search(query) }
    func set(_ entities: [Book]) async throws(StoreError) -> [Book] { try await base.set(entities) }
    func remove(_ identifiers: [Book.Identifier]) async throws(StoreError) { try await base.remove(identifiers) }
    func removeAll(_ query: Query<Book>) async throws(StoreError) -> [Book.Identifier] { try await base.removeAll(query) }
}

@Suite("CoreManager")
struct CoreManagerTests {
    static func manager() throws -> (CoreManager<Book>, TemporaryStore) {
        let temp = try TemporaryStore()
        let store = CacheStore(memory: InMemoryStore<Book>(limit: 100), disk: DiskStore<Book>(engine: temp.engine))
        return (CoreManager(store: store), temp)
    }

    @Test("get, search, set one and many, remove, removeAll, all, first")
    func operations() async throws {
        let (manager, temp) = try Self.manager()
        let books = (1...50).map { Book.remote($0, "Book \($0)", genre: $0 % 2 == 0 ? "even" : "odd", pages: $0 * 10) }
        let stored = try await manager.set(books)
        #expect(stored.count == 50)
        #expect(try await manager.get(byID: .remote(7))?.title == "Book 7")
        #expect(try await manager.get(byID: .remote(77)) == nil)
        let single = try await manager.set(Book.remote(7, "Seven", genre: "odd", pages: 70))
        #expect(single.title == "Seven")
        let (once, _) = try await manager.search(withQuery: .filter(.genre == .string("odd") && .pages < .int(100)))
        #expect(once.map(\.title) == ["Book 1", "Book 3", "Book 5", "Seven", "Book 9"])
        #expect(try await manager.first(for: .all.order([.desc(by: .pages)]))?.title == "Book 50")
        #expect(try await manager.all().count == 50)
        try await manager.remove(atID: .remote(1))
        try await manager.remove([.remote(2), .remote(3)])
        #expect(try await manager.all().count == 47)
        let removed = try await manager.removeAll(withQuery: .filter(.pages > .int(450)))
        #expect(removed.count == 5)
        #expect(try await manager.all().count == 42)
        let (byIDs, _) = try await manager.get(byIDs: [.remote(9), .remote(4), .remote(1)])
        #expect(byIDs.map(\.title) == ["Book 9", "Book 4"])
        // Everything is on disk: a manager over a reopened store sees the same.
        try temp.reopen()
        let reopened = CoreManager(store: DiskStore<Book>(engine: temp.engine))
        #expect(try await reopened.all().count == 42)
        #expect(try await reopened.get(byID: .remote(7))?.title == "Seven")
    }

    @Test("a remote source or target without a remote store is a clear error")
    func remoteWithoutRemoteStore() async throws {
        let (manager, temp) = try Self.manager()
        for source in [DataSource.remote(), .remoteOrLocal(), .localThen(.remote()), .localOr(.remote())] {
            do {
                _ = try await manager.get(byID: .remote(1), in: ReadContext(dataSource: source))
                Issue.record("\(source) was accepted")
            } catch {
                guard case .notSupported = error else { Issue.record("unexpected \(error)"); continue }
            }
        }
        await #expect(throws: ManagerError.self) {
            try await manager.set(Book.remote(1, "A"), in: WriteContext(dataTarget: .localAndRemote))
        }
        #expect(try await manager.all().isEmpty)
        _ = temp
    }

    @Test("an access validator set on a context after it was made is checked; cleared again, it is not")
    func accessValidatorSetLater() async throws {
        let (manager, temp) = try Self.manager()
        try await manager.set(Book.remote(1, "A"))
        var context = ReadContext<Book>()
        context.accessValidator = SwitchableAccess(.noAccess)
        do {
            _ = try await manager.get(byID: .remote(1), in: context)
            Issue.record("no access was accepted")
        } catch {
            guard case .userAccessInvalid = error else { Issue.record("unexpected \(error)"); return }
        }
        context.accessValidator = nil
        #expect(try await manager.get(byID: .remote(1), in: context)?.title == "A")
        _ = temp
    }

    @Test("access validators: no access fails, a change during the operation fails")
    func access() async throws {
        let (manager, temp) = try Self.manager()
        try await manager.set(Book.remote(1, "A"))
        do {
            _ = try await manager.get(byID: .remote(1), in: ReadContext(accessValidator: SwitchableAccess(.noAccess)))
            Issue.record("no access was accepted")
        } catch {
            guard case .userAccessInvalid = error else { Issue.record("unexpected \(error)"); return }
        }
        do {
            try await manager.set(Book.remote(2, "B"), in: WriteContext(accessValidator: SwitchableAccess(.noAccess)))
            Issue.record("a write without access was accepted")
        } catch {
            guard case .userAccessInvalid = error else { Issue.record("unexpected \(error)"); return }
        }
        #expect(try await manager.get(byID: .remote(2)) == nil)
        let flipping = SwitchableAccess(.remoteAccess, flipToLocalAfterReads: 1)
        await #expect(throws: ManagerError.self) {
            _ = try await manager.search(withQuery: .all, in: ReadContext(accessValidator: flipping))
        }
        // A get, found or not: the access it started with is checked again before it returns.
        for id in [1, 99] {
            do {
                let flips = SwitchableAccess(.remoteAccess, flipToLocalAfterReads: 1)
                _ = try await manager.get(byID: .remote(id), in: ReadContext(accessValidator: flips))
                Issue.record("a get whose access changed returned (id \(id))")
            } catch {
                guard case .userAccessInvalid = error else { Issue.record("unexpected \(error)"); return }
            }
        }
        #expect(try await manager.get(byID: .remote(1), in: ReadContext(accessValidator: SwitchableAccess(.localAccess)))?.title == "A")
        _ = temp
    }

    @Test("contracts leave invalid entities out")
    func contracts() async throws {
        let (manager, temp) = try Self.manager()
        try await manager.set([Book.remote(1, "Short", pages: 40), Book.remote(2, "Long", pages: 400)])
        let context = ReadContext<Book>(contract: LongBooksOnly())
        #expect(try await manager.search(withQuery: .all, in: context).once.map(\.title) == ["Long"])
        #expect(try await manager.get(byID: .remote(1), in: context) == nil)
        #expect(try await manager.get(byID: .remote(1))?.title == "Short")
        _ = temp
    }

    @Test("get answers the same through stores that never suspend and through an async-only one: level order, contracts, errors",
          arguments: [false, true])
    func getPaths(asyncOnly: Bool) async throws {
        let temp = try TemporaryStore()
        let disk = DiskStore<Book>(engine: temp.engine)
        let memory = InMemoryStore<Book>(limit: 100)
        let manager = CoreManager<Book>(stores: asyncOnly ? [memory, AsyncOnlyStore(base: disk)] : [memory, disk])
        try await manager.set([Book.remote(1, "Short", pages: 40), Book.remote(2, "Long", pages: 400)])
        _ = try await disk.set([Book.remote(3, "Disk only", pages: 300)])
        _ = try await memory.set([Book.remote(4, "Memory copy", pages: 10)])
        _ = try await disk.set([Book.remote(4, "Disk copy", pages: 500)])
        #expect(try await manager.get(byID: .remote(3))?.title == "Disk only", "memory misses, disk answers")
        #expect(try await manager.get(byID: .remote(4))?.title == "Memory copy", "memory first")
        let long = ReadContext<Book>(contract: LongBooksOnly())
        #expect(try await manager.get(byID: .remote(4), in: long)?.title == "Disk copy", "a rejected entity: next store")
        #expect(try await manager.get(byID: .remote(1), in: long) == nil)
        #expect(try await manager.get(byID: .remote(2), in: long)?.title == "Long")
        #expect(try await manager.get(byID: .remote(9)) == nil)
        // Searches go through the same stores the same way (the synchronous path when every store has one).
        func titles(_ query: Query<Book>, _ context: ReadContext<Book> = ReadContext()) async throws -> [String] {
            try await manager.search(withQuery: query, in: context).once.map(\.title)
        }
        #expect(try await titles(.identifier(.remote(3))) == ["Disk only"], "memory has nothing: disk answers")
        #expect(try await titles(.identifier(.remote(4))) == ["Memory copy"], "memory first")
        #expect(try await titles(.identifier(.remote(4)), long) == ["Disk copy"], "nothing valid in memory: next store")
        #expect(try await titles(.identifier(.remote(9))).isEmpty)
        try temp.engine.close()
        #expect(try await titles(.identifier(.remote(1))) == ["Short"], "memory answers before the closed disk")
        // Memory answered (nothing): that answer stands, the closed disk's error is not thrown.
        #expect(try await titles(.identifier(.remote(9))).isEmpty)
        #expect(try await manager.get(byID: .remote(1))?.title == "Short", "memory answers before the closed disk")
        do {
            _ = try await manager.get(byID: .remote(3))
            Issue.record("a get that memory misses must fail on the closed disk store")
        } catch {
            guard case .store = error else { Issue.record("unexpected \(error)"); return }
        }
    }

    @Test("writes are ordered per identifier: a stale write never overwrites a newer one")
    func writeOrdering() async throws {
        let (manager, temp) = try Self.manager()
        let early = manager.timestamp()
        try await manager.set(Book.remote(1, "new"))
        // A write decided before the last one (e.g. a late server response) is skipped.
        let stale = try await manager.set(Book.remote(1, "old"), in: WriteContext(originTimestamp: early))
        #expect(stale.title == "new")
        #expect(try await manager.get(byID: .remote(1))?.title == "new")
        // In a batch, stale items are dropped and the others written.
        let batch = try await manager.set([Book.remote(1, "old"), Book.remote(2, "fresh")],
                                          in: WriteContext(originTimestamp: early))
        #expect(batch.map(\.title) == ["fresh"])
        // A stale single write with nothing stored is a conflict.
        try await manager.remove(atID: .remote(1))
        do {
            try await manager.set(Book.remote(1, "older"), in: WriteContext(originTimestamp: early))
            Issue.record("a stale write with nothing stored succeeded")
        } catch {
            guard case .conflict = error else { Issue.record("unexpected \(error)"); return }
        }
        // A stale removal is skipped too.
        try await manager.set(Book.remote(3, "kept"))
        try await manager.remove(atID: .remote(3), in: WriteContext(originTimestamp: early))
        #expect(try await manager.get(byID: .remote(3))?.title == "kept")
        // A newer origin timestamp goes through.
        try await manager.set(Book.remote(3, "later"), in: WriteContext(originTimestamp: manager.timestamp()))
        #expect(try await manager.get(byID: .remote(3))?.title == "later")
        _ = temp
    }

    @Test("concurrent writers to one identifier: the last applied write is what every store holds")
    func concurrentWrites() async throws {
        let (manager, temp) = try Self.manager()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                group.addTask { _ = try? await manager.set(Book.remote(1, "w\(i)", pages: i)) }
            }
        }
        let viaCache = try await manager.get(byID: .remote(1))
        let onDisk = try DiskStore<Book>(engine: temp.engine).getNow(.remote(1))
        #expect(viaCache != nil && viaCache == onDisk)
    }

    @Test("store failures reach the caller (the original only logged remove failures)")
    func failuresSurface() async throws {
        let (manager, temp) = try Self.manager()
        try await manager.set(Book.remote(1, "A"))
        try temp.engine.close()
        do {
            try await manager.remove(atID: .remote(1))
            Issue.record("remove on a closed store succeeded")
        } catch {
            guard case .store = error else { Issue.record("unexpected \(error)"); return }
        }
        await #expect(throws: ManagerError.self) { try await manager.set(Book.remote(2, "B")) }
        await #expect(throws: ManagerError.self) { _ = try await manager.search(withQuery: .filter(.title == .string("B"))) }
    }

    @Test("invalid queries are typed errors")
    func invalidQuery() async throws {
        let (manager, temp) = try Self.manager()
        do {
            _ = try await manager.search(withQuery: .all.with(limit: -2))
            Issue.record("a negative limit was accepted")
        } catch {
            guard case .invalidQuery(.negativeLimit(-2)) = error else { Issue.record("unexpected \(error)"); return }
        }
        _ = temp
    }
}
