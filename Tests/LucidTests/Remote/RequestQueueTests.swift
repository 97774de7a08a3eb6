import Foundation
import Testing
import Lucid
import LucidEngine

@Suite("Persistent request queue against a loopback backend that goes down and comes back")
struct RequestQueueTests {
    static let fastRetry = APIRequestQueue.RetryPolicy(initialDelay: 0.05, maximumDelay: 0.2)

    /// A port that was free a moment ago (the backend is started on it later).
    static func freePort() throws -> UInt16 {
        let probe = try FakeBackend()
        let port = probe.server.port
        probe.stop()
        return port
    }

    @Test("writes queued while the server is down are delivered in order when it comes back, placeholders rewritten")
    func offlineWrites() async throws {
        let port = try Self.freePort()
        let temp = try TemporaryStore()
        let client = URLSessionAPIClient(host: "http://127.0.0.1:\(port)", defaultTimeout: 2)
        let queue = APIRequestQueue(engine: temp.engine, client: client, retry: Self.fastRetry)
        let manager = CoreManager(stores: [RemoteStore<Book>(client: client, queue: queue),
                                           DiskStore<Book>(engine: temp.engine)])
        let create = Task { try await manager.set(Book(.local("draft"), title: "Offline"), in: WriteContext(dataTarget: .localAndRemote)) }
        #expect(await eventually { queue.pendingCount == 1 })
        // Written locally at once, found by its local id while the server is away.
        #expect(try await manager.get(byID: .local("draft"))?.title == "Offline")
        let remove = Task { try await manager.remove(atID: .local("draft"), in: WriteContext(dataTarget: .remote)) }
        #expect(await eventually { queue.pendingCount == 2 })
        try await Task.sleep(for: .milliseconds(300))   // a few failed attempts
        let backend = try FakeBackend(port: port)
        defer { backend.stop() }
        let stored = try await create.value
        #expect(stored.identifier.remoteValue == 1000 && stored.identifier.localValue == "draft")
        try await remove.value
        #expect(backend.requests.map { "\($0.method) \($0.path)" } == ["POST /books", "DELETE /books/1000"])
        #expect(backend.books.isEmpty)
        #expect(queue.pendingCount == 0)
        await queue.close()
    }

    @Test("a queued write survives a restart of the client and is delivered by the next run")
    func restart() async throws {
        let port = try Self.freePort()
        let temp = try TemporaryStore()
        let client = URLSessionAPIClient(host: "http://127.0.0.1:\(port)", defaultTimeout: 2)
        var queue = APIRequestQueue(engine: temp.engine, client: client, retry: Self.fastRetry)
        let request = APIRequestConfig(method: .post, path: .path("books"),
                                       body: try .json(encoding: BookBody(Book.remote(0, "Queued before the restart"))))
        try await queue.enqueue(request)
        try await Task.sleep(for: .milliseconds(150))
        await queue.close()
        try temp.reopen()

        let backend = try FakeBackend(port: port)
        defer { backend.stop() }
        queue = APIRequestQueue(engine: temp.engine, client: client, retry: Self.fastRetry)
        let outcomes = OutcomeLog()
        queue.onOutcome { await outcomes.add($0) }
        #expect(queue.pendingCount == 1)
        await queue.waitUntilEmpty()
        #expect(await eventually { backend.books.count == 1 })
        #expect(backend.books[1000]?.title == "Queued before the restart")
        #expect(await outcomes.statuses() == [200])
        await queue.close()
    }

    @Test("a create and an update queued offline, answered by the next run: the id is adopted and the update rewritten")
    func createAnsweredAfterRestart() async throws {
        let port = try Self.freePort()
        let temp = try TemporaryStore()
        func wire(start: Bool) -> (APIRequestQueue, CoreManager<Book>) {
            let client = URLSessionAPIClient(host: "http://127.0.0.1:\(port)", defaultTimeout: 2)
            let queue = APIRequestQueue(engine: temp.engine, client: client, retry: Self.fastRetry, startsImmediately: start)
            let manager = CoreManager(stores: [RemoteStore<Book>(client: client, queue: queue), DiskStore<Book>(engine: temp.engine)])
            return (queue, manager)
        }
        let (firstQueue, firstManager) = wire(start: true)
        let create = Task { try? await firstManager.set(Book(.local("offline"), title: "Draft"), in: WriteContext(dataTarget: .localAndRemote)) }
        #expect(await eventually { firstQueue.pendingCount == 1 })
        let remove = Task { try? await firstManager.remove(atID: .local("offline"), in: WriteContext(dataTarget: .remote)) }
        #expect(await eventually { firstQueue.pendingCount == 2 })
        await firstQueue.close()
        _ = await (create.value, remove.value)
        try temp.reopen()

        // The next run: managers wired before the queue starts, then the server is back.
        let (queue, manager) = wire(start: false)
        let backend = try FakeBackend(port: port)
        defer { backend.stop() }
        queue.start()
        await queue.waitUntilEmpty()
        #expect(backend.requests.map { "\($0.method) \($0.path)" } == ["POST /books", "DELETE /books/1000"])
        #expect(backend.books.isEmpty)
        // The local entity got the server's id.
        #expect(try await manager.get(byID: .remote(1000))?.identifier.localValue == "offline")
        await queue.close()
    }

    @Test("an HTTP error is final: reported to the caller, not retried")
    func finalErrors() async throws {
        let backend = try FakeBackend()
        defer { backend.stop() }
        backend.update { $0.failWrites = true }
        let temp = try TemporaryStore()
        let client = URLSessionAPIClient(host: backend.host, defaultTimeout: 2)
        let queue = APIRequestQueue(engine: temp.engine, client: client, retry: Self.fastRetry)
        let manager = CoreManager(stores: [RemoteStore<Book>(client: client, queue: queue)])
        do {
            try await manager.set(Book.remote(1, "x"), in: WriteContext(dataTarget: .remote))
            Issue.record("a 503 succeeded")
        } catch {
            guard case .store(.api(.httpStatus(503, _))) = error else { Issue.record("unexpected \(error)"); return }
        }
        #expect(backend.requests.count == 1)
        #expect(queue.pendingCount == 0)
        await queue.close()
    }
}

actor OutcomeLog {
    private var outcomes: [APIRequestQueue.Outcome] = []
    func add(_ outcome: APIRequestQueue.Outcome) { outcomes.append(outcome) }
    func statuses() -> [Int] { outcomes.map { (try? $0.result.get().status) ?? -1 } }
}
