import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// A response from the backend.
public struct APIResponse: Sendable, Hashable {
    /// The HTTP status (200–299, or 304).
    public var status: Int
    /// Header fields, names lowercased.
    public var headers: [String: String]
    /// The body bytes.
    public var body: [UInt8]
    /// A 304: the cached representation is still valid; the body is usually empty.
    public var isNotModified: Bool { status == 304 }
}

/// Sends requests to the backend. Bring your own by conforming; ``URLSessionAPIClient`` is the default.
public protocol APIClient: Sendable {
    /// Sends `request` and returns the response when its status is 2xx or 304.
    /// - Throws: ``APIError``: unreachable, timeout, another status (with the body), invalid request.
    func send(_ request: APIRequestConfig) async throws(APIError) -> APIResponse
}

/// An ``APIClient`` over Foundation's `URLSession` (FoundationNetworking on Linux: it ships with the toolchain,
/// so it adds no package to build, unlike an NIO-based client).
///
/// Every request goes through `prepare` (authentication headers, ...). Identical in-flight requests whose
/// ``APIRequestConfig/deduplicate`` is set share one network call and its response (the original skipped this on
/// its async path).
///
/// Cancelling the task that awaits ``send(_:)`` ends it at once with ``APIError/networkUnreachable(_:)``; the
/// transfer already under way is abandoned rather than stopped (it ends when the server answers or at the request's
/// timeout, and its result is dropped), because FoundationNetworking's `URLSessionTask.cancel()` can deadlock or stop
/// the process when it races the transfer's end on Linux. A request whose caller is cancelled before it is sent is
/// not sent; a shared call goes on for the callers still waiting. An abandoned transfer still holds one of the
/// session's connections to its host (6 at most) until it ends: give requests that are often cancelled, to a server
/// that can be slow, a short ``APIRequestConfig/timeoutInterval``.
public final class URLSessionAPIClient: APIClient {
    /// Scheme, host and port requests go to unless they name their own host.
    public let host: String
    /// Seconds before a request without its own timeout gives up.
    public let defaultTimeout: Double
    private let prepare: @Sendable (inout URLRequest) -> Void
    private let session: URLSession
    /// The deduplicated calls in flight, each with a number that tells it from a later call for the same request.
    private let inFlight = Mutex<(calls: [APIRequestConfig: (id: UInt64, task: Task<APIResponse, any Error>)], nextID: UInt64)>(([:], 0))
    private let sentCount = Mutex(0)

    /// A client for `host` (e.g. `https://api.example.com`).
    public init(host: String, defaultTimeout: Double = 30, prepare: @escaping @Sendable (inout URLRequest) -> Void = { _ in }) {
        self.host = host
        self.defaultTimeout = defaultTimeout
        self.prepare = prepare
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    /// Requests actually sent on the network (deduplicated ones count once).
    public var requestsSent: Int { sentCount.withLock { $0 } }

    public func send(_ request: APIRequestConfig) async throws(APIError) -> APIResponse {
        let urlRequest = try makeRequest(request)
        guard request.deduplicate else { return try await perform(urlRequest) }
        // A cancelled caller starts no shared call (one it would join goes on for the others).
        if Task.isCancelled { throw Self.apiError(URLError(.cancelled)) }
        var key = request
        key.tag = nil
        let task = inFlight.withLock { flights -> Task<APIResponse, any Error> in
            if let running = flights.calls[key] { return running.task }
            flights.nextID += 1
            let id = flights.nextID
            // The shared call forgets itself as it ends, before any waiter gets its response, so that a later
            // identical request starts a call of its own.
            let task = Task { [self, key] in
                defer { inFlight.withLock { if $0.calls[key]?.id == id { $0.calls[key] = nil } } }
                return try await perform(urlRequest)
            }
            flights.calls[key] = (id, task)
            return task
        }
        // A caller that is cancelled stops waiting; the shared call goes on for the others (``AbandonableCall``).
        do {
            return try await AbandonableCall<APIResponse>.value { finish in Task { finish(await task.result) } }
        } catch let error as APIError { throw error } catch {
            throw Self.apiError(error)
        }
    }

    /// The ``APIError`` for an error of the transfer: a timeout, or an unreachable network (any other `URLError`,
    /// `.cancelled` included, named by its code).
    private static func apiError(_ error: any Error) -> APIError {
        guard let error = error as? URLError else { return .networkUnreachable("\(error)") }
        switch error.code {
        case .timedOut: return .timeout
        default: return .networkUnreachable("\(error.code.rawValue): \(error.localizedDescription)")
        }
    }

    private func makeRequest(_ config: APIRequestConfig) throws(APIError) -> URLRequest {
        var request = URLRequest(url: try config.url(defaultHost: host))
        request.httpMethod = config.method.rawValue
        request.timeoutInterval = config.timeoutInterval ?? defaultTimeout
        for (name, value) in config.headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body = config.body?.encoded {
            request.httpBody = body.data
            request.setValue(body.contentType, forHTTPHeaderField: "Content-Type")
        }
        prepare(&request)
        return request
    }

    private func perform(_ request: URLRequest) async throws(APIError) -> APIResponse {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await AbandonableCall.data(for: request, in: session) { sentCount.withLock { $0 += 1 } }
        } catch {
            throw Self.apiError(error)
        }
        guard let http = response as? HTTPURLResponse else { throw .undecodableBody("not an HTTP response") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        let result = APIResponse(status: http.statusCode, headers: headers, body: Array(data))
        guard (200..<300).contains(http.statusCode) || http.statusCode == 304 else {
            throw .httpStatus(code: http.statusCode, body: result.body)
        }
        return result
    }
}
