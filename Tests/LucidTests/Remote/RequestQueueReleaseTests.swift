import Foundation
import Synchronization
import Testing
import Lucid
import LucidEngine

/// Managers, remote stores and request queues are freed once released, and with them their engine.
@Suite("Request queue and managers are freed when released")
struct RequestQueueReleaseTests {
    struct UnreachableClient: APIClient {
        func send(_ request: APIRequestConfig) async throws(APIError) -> APIResponse { throw .networkUnreachable("test") }
    }

    /// How long a release may take to be seen: a worker may be finishing a step on a busy machine, whose other
    /// tests can hold the cooperative threads for many seconds (a correct release is seen at the first checks).
    static let patience = Duration.seconds(60)

    @Test("a manager with a queued remote store: manager, store, queue and engine are freed after close()")
    func managerWithClosedQueue() async throws {
        weak var manager: CoreManager<Book>?, remote: RemoteStore<Book>?, queue: APIRequestQueue?, engine: Engine?
        do {
            let temp = try TemporaryStore()
            let q = APIRequestQueue(engine: temp.engine, client: UnreachableClient())
            let r = RemoteStore<Book>(client: UnreachableClient(), queue: q)
            let m = CoreManager(stores: [r, DiskStore<Book>(engine: temp.engine)])
            manager = m; remote = r; queue = q; engine = temp.engine
            try await m.set(Book.remote(1, "a"))
            await q.close()
        }
        #expect(await eventually(timeout: Self.patience) { manager == nil && remote == nil && queue == nil && engine == nil })
    }

    @Test("a create still queued when the queue is closed: manager, store, queue and engine are freed")
    func managerWithQueuedCreate() async throws {
        weak var manager: CoreManager<Book>?, queue: APIRequestQueue?, engine: Engine?
        do {
            let temp = try TemporaryStore()
            let q = APIRequestQueue(engine: temp.engine, client: UnreachableClient(),
                                    retry: .init(initialDelay: 30, maximumDelay: 30))
            let m = CoreManager(stores: [RemoteStore<Book>(client: UnreachableClient(), queue: q),
                                         DiskStore<Book>(engine: temp.engine)])
            manager = m; queue = q; engine = temp.engine
            // The create waits in the queue (the server is unreachable) with its id rewrite registered.
            let write = Task {
                try? await m.set(Book(.local("draft"), title: "Draft"), in: WriteContext(dataTarget: .localAndRemote))
            }
            #expect(await eventually(timeout: Self.patience) { q.pendingCount == 1 })
            await q.close()
            _ = await write.value
        }
        #expect(await eventually(timeout: Self.patience) { manager == nil && queue == nil && engine == nil })
    }

    @Test("close() ends a wait for the queue to empty (the request stays queued)")
    func closeEndsWaitUntilEmpty() async throws {
        let temp = try TemporaryStore()
        let queue = APIRequestQueue(engine: temp.engine, client: UnreachableClient(),
                                    retry: .init(initialDelay: 30, maximumDelay: 30))
        try await queue.enqueue(APIRequestConfig(method: .post, path: .path("books")))
        let returned = Mutex(false)
        let waiter = Task {
            await queue.waitUntilEmpty()
            returned.withLock { $0 = true }
        }
        await queue.close()
        #expect(await eventually(timeout: Self.patience) { returned.withLock { $0 } }, "waitUntilEmpty returned after close()")
        waiter.cancel()
        #expect(queue.pendingCount == 1)
    }

    @Test("a queue released without close() is freed, idle or waiting to retry")
    func queueNotClosed() async throws {
        weak var idle: APIRequestQueue?, retrying: APIRequestQueue?
        do {
            let temp = try TemporaryStore()
            let a = APIRequestQueue(engine: temp.engine, client: UnreachableClient(), keyspace: "a")
            let b = APIRequestQueue(engine: temp.engine, client: UnreachableClient(), keyspace: "b",
                                    retry: .init(initialDelay: 30, maximumDelay: 30))
            idle = a; retrying = b
            try await b.enqueue(APIRequestConfig(method: .post, path: .path("books")))
            #expect(await eventually(timeout: Self.patience) { a.pendingCount == 0 })
        }
        #expect(await eventually(timeout: Self.patience) { idle == nil && retrying == nil })
    }
}
