import Synchronization

/// A FIFO lock for async code: `withLock` runs its body with no other body of the same lock running, in the
/// order callers arrived, and suspends (never blocks a thread) while waiting.
final class AsyncMutex: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    func lock() async {
        let acquired = state.withLock { s -> Bool in
            if s.locked { return false }
            s.locked = true
            return true
        }
        if acquired { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.locked {
                    s.waiters.append(continuation)
                    return false
                }
                s.locked = true
                return true
            }
            if ready { continuation.resume() }
        }
    }

    func unlock() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.locked = false
                return nil
            }
            return s.waiters.removeFirst()   // stays locked: ownership passes to the next waiter
        }
        next?.resume()
    }

    func withLock<T>(_ body: () async throws -> T) async rethrows -> T {
        await lock()
        defer { unlock() }
        return try await body()
    }
}
