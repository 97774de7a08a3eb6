import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// A call its caller can stop waiting for: cancelling the calling task ends the wait at once with
/// `URLError(.cancelled)`, while the work itself is abandoned, not stopped (it runs to its end and its result is
/// dropped).
///
/// Why not stop it: the work is a network transfer, and FoundationNetworking's `URLSessionTask.cancel()` is unsafe
/// when it races the end of the transfer, which is when a caller gives up on a failing request:
/// - `URLSession.data(for:)` calls it from the Swift task's cancellation handler, which runs holding that task's
///   status lock, and it waits for the session's work queue, whose thread, finishing the transfer, waits for the
///   same lock to resume the task: a deadlock (swift-corelibs-foundation issue 5412, fixed upstream after the
///   toolchain this project builds with). A test run of this package hung that way in ``APIRequestQueue/close()``.
/// - Called from elsewhere, it can find the transfer already failed and removed from the session, and stop the
///   process on an assertion ("Trying to access a behaviour for a task that in not registered", issue 3296): a
///   first version of this type, which cancelled from a dispatch queue, crashed a test run so.
///
/// A transfer abandoned this way ends when the server answers or at the request's timeout. A call cancelled before
/// it starts never starts. The caller's task is resumed from a dispatch queue when cancelled, never under its
/// status lock.
final class AbandonableCall<Value: Sendable>: Sendable {
    private typealias Continuation = CheckedContinuation<Value, any Error>

    private struct State {
        /// The caller's continuation, until the call ends (answered, failed or cancelled).
        var continuation: Continuation?
        var cancelled = false
    }
    private let state = Mutex(State())

    private init() {}

    /// The value `start` delivers: `start` begins the work and arranges for its result to be passed to `finish`
    /// (once, from any thread). Not called when the calling task is cancelled already.
    /// - Throws: the work's error, or `URLError(.cancelled)` when the calling task is cancelled first.
    static func value(
        _ start: (_ finish: @escaping @Sendable (Result<Value, any Error>) -> Void) -> Void
    ) async throws -> Value {
        let call = AbandonableCall()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Continuation) in
                guard call.register(continuation) else {
                    continuation.resume(throwing: URLError(.cancelled))
                    return
                }
                start { call.finish($0) }
            }
        } onCancel: {
            call.cancel()
        }
    }

    /// Keeps the caller's continuation; false when the call was cancelled already (nothing is to start).
    private func register(_ continuation: Continuation) -> Bool {
        state.withLock { state in
            if state.cancelled { return false }
            state.continuation = continuation
            return true
        }
    }

    /// Ends the call with the work's result, unless it ended already (cancelled).
    private func finish(_ result: Result<Value, any Error>) {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }

    /// Marks the call cancelled and ends it with `URLError(.cancelled)` from a dispatch queue: this runs in the
    /// cancellation handler, under the task's status lock, which resuming the task takes.
    private func cancel() {
        let continuation = state.withLock { state in
            state.cancelled = true
            defer { state.continuation = nil }
            return state.continuation
        }
        guard let continuation else { return }
        DispatchQueue.global().async { continuation.resume(throwing: URLError(.cancelled)) }
    }
}

extension AbandonableCall where Value == (Data, URLResponse) {
    /// `session.data(for: request)` as an abandonable call (see the type's comment); `sending` runs as the request
    /// is handed to the session (not when the calling task was cancelled before).
    /// - Throws: the `URLError` the transfer ends with, `.cancelled` when the calling task is cancelled.
    static func data(for request: URLRequest, in session: URLSession,
                     sending: () -> Void = {}) async throws -> (Data, URLResponse) {
        try await value { finish in
            sending()
            session.dataTask(with: request) { data, response, error in
                if let error {
                    finish(.failure(error))
                } else if let response {
                    finish(.success((data ?? Data(), response)))
                } else {
                    finish(.failure(URLError(.badServerResponse)))
                }
            }.resume()
        }
    }
}
