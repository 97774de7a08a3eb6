import Foundation
import Testing
import Lucid

@Suite("Remote data sources and targets against a loopback backend")
struct RemoteDataSourceTests {
    struct Fixture {
        let backend: FakeBackend
        let temp: TemporaryStore
        let manager: CoreManager<Book>
        let local: DiskStore<Book>
    }

    static func fixture(server books: [Book] = [], local localBooks: [Book] = []) async throws -> Fixture {
        let backend = try FakeBackend(books)
        let temp = try TemporaryStore()
        let disk = DiskStore<Book>(engine: temp.engine)
        _ = try await disk.set(localBooks)
        let client = URLSessionAPIClient(host: backend.host, defaultTimeout: 5)
        let manager = CoreManager(stores: [RemoteStore<Book>(client: client),
                                           CacheStore(memory: InMemoryStore<Book>(limit: 100), disk: disk)])
        return Fixture(backend: backend, temp: temp, manager: manager, local: disk)
    }

    @Test("remote get persists; a 404 is nil and deletes nothing locally")
    func remoteGet() async throws {
        let f = try await Self.fixture(server: [.remote(7, "Dune", genre: "sf")], local: [.remote(8, "Local only")])
        defer { f.backend.stop() }
        let dune = try await f.manager.get(byID: .remote(7), in: ReadContext(dataSource: .remote()))
        #expect(dune?.title == "Dune")
        #expect(try f.local.getNow(.remote(7))?.title == "Dune")   // persisted
        #expect(try await f.manager.get(byID: .remote(8), in: ReadContext(dataSource: .remote())) == nil)
        #expect(try f.local.getNow(.remote(8)) != nil)              // the original deleted it
        let unpersisted = try await f.manager.get(byID: .remote(7), in: ReadContext(dataSource: .remote(persistenceStrategy: .doNotPersist)))
        #expect(unpersisted?.title == "Dune")
    }

    @Test("remoteOrLocal falls back when the server is down; remote alone fails with a typed error")
    func fallback() async throws {
        let f = try await Self.fixture(server: [.remote(1, "Server")], local: [.remote(1, "Local")])
        f.backend.stop()
        #expect(try await f.manager.get(byID: .remote(1), in: ReadContext(dataSource: .remoteOrLocal()))?.title == "Local")
        #expect(try await f.manager.search(withQuery: .all, in: ReadContext(dataSource: .remoteOrLocal())).once.map(\.title) == ["Local"])
        do {
            _ = try await f.manager.get(byID: .remote(1), in: ReadContext(dataSource: .remote()))
            Issue.record("a read from a server that is down succeeded")
        } catch {
            guard case .store(.api(.networkUnreachable)) = error else { Issue.record("unexpected \(error)"); return }
        }
    }

    /// Bug 1.15.10 of the original: a chain of errors (`composite`) never allowed the local fallback. Here the
    /// predicate the remote reads consult (`shouldFallBackToLocal`) holds for a chain exactly when it holds for the
    /// chain's latest error; an error that is not a connection failure never allows it.
    @Test("a chain of store errors allows the local fallback exactly when its latest error does")
    func compositeFallback() {
        let unreachable = StoreError.api(.networkUnreachable("connection refused"))
        let closed = StoreError.closed
        #expect(unreachable.shouldFallBackToLocal)
        #expect(StoreError.api(.timeout).shouldFallBackToLocal)
        #expect(StoreError.emptyResponse.shouldFallBackToLocal)
        #expect(StoreError.composite(current: unreachable, previous: closed).shouldFallBackToLocal)
        let older = StoreError.composite(current: closed, previous: unreachable)
        #expect(StoreError.composite(current: .emptyResponse, previous: older).shouldFallBackToLocal)
        #expect(!StoreError.composite(current: closed, previous: unreachable).shouldFallBackToLocal)
        #expect(!StoreError.api(.httpStatus(code: 500, body: [])).shouldFallBackToLocal)
        #expect(!closed.shouldFallBackToLocal)
    }

    @Test("remote search: filtered again locally, bad elements dropped, persistence strategies")
    func remoteSearch() async throws {
        let f = try await Self.fixture(server: [.remote(1, "A", genre: "sf"), .remote(2, "B", genre: "sf"), .remote(3, "C", genre: "poetry")],
                                       local: [.remote(9, "Stale", genre: "sf")])
        defer { f.backend.stop() }
        f.backend.update { $0.ignoreFilter = true; $0.malformedListElement = true }
        let query = Query<Book>.filter(.genre == .string("sf"))
        let result = try await f.manager.search(withQuery: query, in: ReadContext(dataSource: .remote())).once
        #expect(result.map(\.title) == ["A", "B"])                          // C filtered out locally, bad element dropped
        #expect(try await f.manager.search(withQuery: query).once.map(\.title) == ["A", "B", "Stale"])   // retained
        let trusted = try await f.manager.search(withQuery: query, in: ReadContext(dataSource: .remote(trustRemoteFiltering: true))).once
        #expect(trusted.map(\.title) == ["A", "B", "C"])                    // the server's word taken as is
        _ = try await f.manager.search(withQuery: query, in: ReadContext(dataSource: .remote(persistenceStrategy: .persist(.discardExtraLocalData))))
        #expect(try await f.manager.search(withQuery: query).once.map(\.title) == ["A", "B"])   // Stale discarded
    }

    @Test("localOr asks the server only when the local result is not satisfying; localThen refreshes continuous queries")
    func localFirst() async throws {
        let f = try await Self.fixture(server: [.remote(1, "Server one"), .remote(2, "Server two")], local: [.remote(1, "Local one")])
        defer { f.backend.stop() }
        let before = f.backend.requests.count
        #expect(try await f.manager.get(byID: .remote(1), in: ReadContext(dataSource: .localOr(.remote())))?.title == "Local one")
        #expect(f.backend.requests.count == before)
        #expect(try await f.manager.get(byID: .remote(2), in: ReadContext(dataSource: .localOr(.remote())))?.title == "Server two")
        #expect(f.backend.requests.count == before + 1)

        let ids = Query<Book>.identifiers([Book.Identifier.remote(1)])
        var updates = try await f.manager.search(withQuery: ids).continuous.makeAsyncIterator()
        #expect(await updates.next()?.map(\.title) == ["Local one"])
        let first = try await f.manager.search(withQuery: ids, in: ReadContext(dataSource: .localThen(.remote()))).once
        #expect(first.map(\.title) == ["Local one"])                        // the local result at once
        #expect(await updates.next()?.map(\.title) == ["Server one"])       // then the remote refresh
    }

    @Test("local and remote writes: the server's id is merged into a locally created entity; failures reach the caller")
    func writes() async throws {
        let f = try await Self.fixture()
        defer { f.backend.stop() }
        let draft = Book(.local("draft"), title: "Draft", genre: "essay")
        let stored = try await f.manager.set(draft, in: WriteContext(dataTarget: .localAndRemote))
        #expect(stored.identifier.remoteValue == 1000)
        #expect(stored.identifier.localValue == "draft")
        #expect(try f.local.getNow(.remote(1000))?.title == "Draft")
        #expect(try f.local.getNow(.local("draft"))?.identifier.remoteValue == 1000)
        #expect(f.backend.books[1000]?.title == "Draft")
        // An update goes to PUT /books/1000.
        var edited = stored
        edited.title = "Edited"
        try await f.manager.set(edited, in: WriteContext(dataTarget: .localAndRemote))
        #expect(f.backend.requests.last.map { "\($0.method) \($0.path)" } == "PUT /books/1000")
        #expect(f.backend.books[1000]?.title == "Edited")
        // A failing server: the caller sees it (the original never reported remote write errors).
        f.backend.update { $0.failWrites = true }
        do {
            try await f.manager.set(Book.remote(5, "X"), in: WriteContext(dataTarget: .remote))
            Issue.record("a failed remote write succeeded")
        } catch {
            guard case .store(.api(.httpStatus(503, _))) = error else { Issue.record("unexpected \(error)"); return }
        }
        // removeAll reaches the server even with no local match.
        try await f.manager.removeAll(withQuery: .filter(.genre == .string("none")), in: WriteContext(dataTarget: .localAndRemote))
        #expect(f.backend.requests.last.map { "\($0.method) \($0.path)" } == "DELETE /books")
        #expect(f.backend.books.isEmpty)
    }

    @Test("a slow server times out and remoteOrLocal answers from local stores; remote alone reports the timeout")
    func slowServer() async throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response(status: 200, body: Array("{}".utf8), delay: 2) }
        defer { server.stop() }
        let temp = try TemporaryStore()
        let disk = DiskStore<Book>(engine: temp.engine)
        _ = try await disk.set([Book.remote(1, "Local")])
        let manager = CoreManager(stores: [RemoteStore<Book>(client: URLSessionAPIClient(host: server.host, defaultTimeout: 0.3)), disk])
        #expect(try await manager.get(byID: .remote(1), in: ReadContext(dataSource: .remoteOrLocal()))?.title == "Local")
        do {
            _ = try await manager.get(byID: .remote(1), in: ReadContext(dataSource: .remote()))
            Issue.record("a timed-out read succeeded")
        } catch {
            guard case .store(.api(.timeout)) = error else { Issue.record("unexpected \(error)"); return }
        }
    }

    @Test("a call-site request with its own result payload")
    func contextualRequest() async throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/discover/top" ? .json(#"{"result":{"items":[{"id":5,"title":"Top","rating":5,"page_count":1}]}}"#) : .json("{}", status: 404)
        }
        defer { server.stop() }
        let temp = try TemporaryStore()
        let manager = CoreManager(stores: [RemoteStore<Book>(client: URLSessionAPIClient(host: server.host)), DiskStore<Book>(engine: temp.engine)])
        let context = ReadContext<Book>(dataSource: .remote(), remoteRequest: APIRequestConfig(method: .get, path: .path("discover") / "top"),
                                        remoteEndpoint: .list(BookPayload.self, at: ["result", "items"]) { $0.book })
        #expect(try await manager.search(withQuery: .all, in: context).once.map(\.title) == ["Top"])
        #expect(try await manager.get(byID: .remote(5))?.title == "Top")   // persisted
    }
}
