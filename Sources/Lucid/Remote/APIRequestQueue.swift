import Foundation
import LucidEngine
import Synchronization

/// A persistent, ordered queue of backend writes, kept in an engine keyspace so it survives a crash or restart.
///
/// - Each request is committed durably before ``enqueue(_:)`` returns, then sent in order, one at a time (every
///   write is a barrier; reads do not go through the queue).
/// - When the server cannot be reached or times out, the head request is retried after a growing delay
///   (``RetryPolicy``); it keeps its place, so later writes never overtake it. Any other outcome (success or an
///   HTTP error) is final: the request leaves the queue and its outcome goes to the caller waiting in
///   ``send(_:)`` (if any, in this process) and to every registered handler, which runs before the next request
///   is sent (a handler that learns a server-assigned id can rewrite the placeholders of queued requests).
/// - Delivery is at least once: a crash between the server's answer and the removal sends the request again on
///   the next run.
public final class APIRequestQueue: Sendable {
    /// When and how long to retry a request the network could not deliver.
    public struct RetryPolicy: Sendable {
        /// First delay, in seconds; doubled after each failure up to `maximumDelay`.
        public var initialDelay: Double
        public var maximumDelay: Double
        public init(initialDelay: Double = 0.25, maximumDelay: Double = 30) {
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
        }
    }

    /// The final outcome of one queued request.
    public struct Outcome: Sendable {
        public var id: UInt64
        public var request: APIRequestConfig
        public var result: Result<APIResponse, APIError>
        /// Whether a caller in this process was waiting for it (false for requests queued by an earlier run).
        public var hadWaiter: Bool
    }

    private struct State {
        var nextID: UInt64 = 1
        var waiters: [UInt64: CheckedContinuation<Result<APIResponse, APIError>, Never>] = [:]
        var responders: [UInt64: @Sendable (Result<APIResponse, APIError>) async -> Void] = [:]
        var handlers: [@Sendable (Outcome) async -> Void] = []
        var wake: CheckedContinuation<Void, Never>?
        var idle: [CheckedContinuation<Void, Never>] = []
        var closed = false
    }

    private let engine: Engine
    private let client: any APIClient
    private let keyspace: String
    private let retry: RetryPolicy
    private let state = Mutex(State())
    private let worker = Mutex<Task<Void, Never>?>(nil)

    /// A queue in `keyspace` of `engine`; requests left by an earlier run are sent first. With
    /// `startsImmediately: false` nothing is sent until ``start()``, so that managers can register their outcome
    /// handlers before the requests of an earlier run are answered.
    public init(engine: Engine, client: any APIClient, keyspace: String = "__lucid_requests",
                retry: RetryPolicy = RetryPolicy(), startsImmediately: Bool = true) {
        self.engine = engine
        self.client = client
        self.keyspace = keyspace
        self.retry = retry
        let last = engine.snapshot().keys(in: keyspace, reverse: true, limit: 1).first.map(Self.id) ?? 0
        state.withLock { $0.nextID = last + 1 }
        if startsImmediately { start() }
    }

    /// Starts sending (once; later calls do nothing).
    ///
    /// The worker holds the queue only while it takes a step (sends one request), never while it waits for work
    /// or for a retry: a queue released without ``close()`` is freed (its `deinit` wakes a waiting worker, which
    /// then ends) instead of being kept, with its engine, by a task that never ends.
    public func start() {
        worker.withLock { task in
            guard task == nil else { return }
            task = Task { [weak self, initialDelay = retry.initialDelay] in
                var delay = initialDelay
                while let next = await self?.step(&delay) {
                    switch next {
                    case .stop: return
                    case .proceed: continue
                    case .park: await withCheckedContinuation { if self?.park($0) != true { $0.resume() } }
                    case .pause(let seconds): try? await Task.sleep(for: .seconds(seconds))
                    }
                }
            }
        }
    }

    deinit {
        // Nobody can be waiting in `send` or `waitUntilEmpty` (they hold the queue). A parked worker ends; one
        // waiting to retry is cancelled, so that it ends now rather than after its delay.
        state.withLock { s in defer { s.wake = nil }; return s.wake }?.resume()
        worker.withLock { $0 }?.cancel()
    }

    /// Requests waiting to be delivered. - Complexity: O(1).
    public var pendingCount: Int { engine.count(in: keyspace) }

    /// Registers a handler for every final outcome, including those of requests queued by an earlier run.
    public func onOutcome(_ handler: @escaping @Sendable (Outcome) async -> Void) {
        state.withLock { $0.handlers.append(handler) }
    }

    /// Queues `request` durably and returns its id. - Throws: ``StoreError`` when it cannot be persisted.
    @discardableResult
    public func enqueue(_ request: APIRequestConfig) async throws(StoreError) -> UInt64 {
        try await enqueue(request, waiting: nil, beforeNext: nil)
    }

    /// Queues `request` and waits for its final outcome (retrying while the network is down). `beforeNext` runs
    /// with the outcome before the queue sends its next request (e.g. to rewrite placeholders with a new id).
    public func send(_ request: APIRequestConfig,
                     beforeNext: (@Sendable (Result<APIResponse, APIError>) async -> Void)? = nil) async throws(APIError) -> APIResponse {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<APIResponse, APIError>, Never>) in
            Task {
                do { _ = try await self.enqueue(request, waiting: continuation, beforeNext: beforeNext) } catch {
                    continuation.resume(returning: .failure(.invalidRequest("the request could not be queued: \(error)")))
                }
            }
        }
        return try result.get()
    }

    /// Rewrites every queued request naming the local id `local` of `typeID` to name `remote`.
    public func rewriteIdentifier(typeID: String, local: String, remote: String) async throws(StoreError) {
        var batch = WriteBatch()
        do {
            for record in try engine.snapshot().scan(in: keyspace) {
                let request = try JSONDecoder().decode(APIRequestConfig.self, from: Data(record.value))
                let rewritten = request.rewritingIdentifier(typeID: typeID, local: local, remote: remote)
                if rewritten != request { batch.put(Array(try JSONEncoder().encode(rewritten)), forKey: record.key, in: keyspace) }
            }
            if !batch.isEmpty { _ = try await engine.commit(batch) }
        } catch { throw .wrap(error) }
    }

    /// Returns once the queue is empty, or once it is closed (a closed queue sends nothing more: what it holds
    /// stays queued for the next run).
    public func waitUntilEmpty() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Checked under the lock the worker takes to resume waiters when it finds the queue empty, so a waiter
            // cannot arrive just after that and wait for a request that never comes.
            let now = state.withLock { s -> Bool in
                if s.closed || engine.count(in: keyspace) == 0 { return true }
                s.idle.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Stops sending (queued requests stay persisted for the next run); waiters get `networkUnreachable`, and
    /// callers of ``waitUntilEmpty()`` return. Returns
    /// without waiting for a request being sent: over ``URLSessionAPIClient`` its transfer is abandoned, not
    /// stopped, so it may still reach the server, and it stays queued, so it is sent again (delivery is at least
    /// once). Reopen the queue once that transfer has ended (its timeout at most): before, its old copy could
    /// reach the server after a later write the reopened queue sends.
    public func close() async {
        let (waiters, wake, idle) = state.withLock { s -> ([CheckedContinuation<Result<APIResponse, APIError>, Never>], CheckedContinuation<Void, Never>?, [CheckedContinuation<Void, Never>]) in
            s.closed = true
            defer { s.waiters = [:]; s.wake = nil; s.idle = [] }
            return (Array(s.waiters.values), s.wake, s.idle)
        }
        wake?.resume()
        for continuation in idle { continuation.resume() }
        for waiter in waiters { waiter.resume(returning: .failure(.networkUnreachable("the request queue was closed"))) }
        let task = worker.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    // MARK: Internals

    private static func key(_ id: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: id >> (56 - 8 * UInt64($0))) } }
    private static func id(_ key: [UInt8]) -> UInt64 { key.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }

    private func enqueue(_ request: APIRequestConfig,
                         waiting: CheckedContinuation<Result<APIResponse, APIError>, Never>?,
                         beforeNext: (@Sendable (Result<APIResponse, APIError>) async -> Void)?) async throws(StoreError) -> UInt64 {
        let bytes: [UInt8]
        do { bytes = Array(try JSONEncoder().encode(request)) } catch { throw .unencodableEntity("\(error)") }
        let id = state.withLock { s -> UInt64 in
            defer { s.nextID += 1 }
            if let waiting { s.waiters[s.nextID] = waiting }
            if let beforeNext { s.responders[s.nextID] = beforeNext }
            return s.nextID
        }
        var batch = WriteBatch()
        batch.put(bytes, forKey: Self.key(id), in: keyspace)
        do { _ = try await engine.commit(batch) } catch {
            state.withLock { _ = $0.waiters.removeValue(forKey: id); _ = $0.responders.removeValue(forKey: id) }
            throw .wrap(error)
        }
        let wake = state.withLock { s -> CheckedContinuation<Void, Never>? in defer { s.wake = nil }; return s.wake }
        wake?.resume()
        return id
    }

    /// What the worker does after a step.
    private enum Next { case stop, proceed, park, pause(Double) }

    /// One step of the worker: sends the head request (if any) and reports it, or says to wait for work (`park`),
    /// to retry after a delay (`pause`) or to end. `delay` is the next retry's delay.
    private func step(_ delay: inout Double) async -> Next {
        guard !Task.isCancelled && !state.withLock({ $0.closed }) else { return .stop }
        let first: KeyValue?
        do { first = try engine.snapshot().scan(in: keyspace, limit: 1).first } catch { return .stop }   // engine closed
        guard let head = first else {
            let idle = state.withLock { s -> [CheckedContinuation<Void, Never>] in defer { s.idle = [] }; return s.idle }
            for continuation in idle { continuation.resume() }
            return .park
        }
        let id = Self.id(head.key)
        guard let request = try? JSONDecoder().decode(APIRequestConfig.self, from: Data(head.value)) else {
            await finish(id, head.key, APIRequestConfig(method: .get, path: .path("")), .failure(.invalidRequest("undecodable queued request")))
            return .proceed
        }
        do {
            let response = try await client.send(request)
            await finish(id, head.key, request, .success(response))
            delay = retry.initialDelay
        } catch {
            switch error {
            case .networkUnreachable, .timeout:
                defer { delay = min(delay * 2, retry.maximumDelay) }
                return .pause(delay)
            default:
                await finish(id, head.key, request, .failure(error))
                delay = retry.initialDelay
            }
        }
        return .proceed
    }

    /// Keeps `continuation` to be resumed by the next enqueue, ``close()`` or `deinit`; false (resume it now)
    /// when the queue is closed or has work.
    private func park(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        state.withLock { s -> Bool in
            if s.closed || engine.count(in: keyspace) > 0 { return false }
            s.wake = continuation
            return true
        }
    }

    /// Removes the delivered request, then reports. If the removal cannot be committed the request is sent again
    /// by the next run: delivery is at least once.
    private func finish(_ id: UInt64, _ key: [UInt8], _ request: APIRequestConfig, _ result: Result<APIResponse, APIError>) async {
        var batch = WriteBatch()
        batch.delete(key, in: keyspace)
        if (try? await engine.commit(batch)) == nil { state.withLock { $0.closed = true } }
        let (waiter, responder, handlers) = state.withLock { s in
            (s.waiters.removeValue(forKey: id), s.responders.removeValue(forKey: id), s.handlers)
        }
        let outcome = Outcome(id: id, request: request, result: result, hadWaiter: waiter != nil)
        await responder?(result)
        for handler in handlers { await handler(outcome) }
        waiter?.resume(returning: result)
    }
}
