import Foundation
import Synchronization

/// A gate every file sync of a ``FaultFileSystem`` passes before it takes effect: while the gate is closed, the
/// syncing thread waits. A test closes it to hold a commit in its sync while it queues more work behind it (a
/// deterministic group commit), then opens it.
///
/// Waiting polls every 200 µs: a test aid, not a synchronization primitive for production code.
public final class SyncGate: Sendable {
    private let state = Mutex<(closed: Bool, waiting: Int, permits: Int, passed: Int)>((false, 0, 0, 0))

    /// An open gate.
    public init() {}

    /// Makes later syncs wait until ``open()``.
    public func close() { state.withLock { $0.closed = true; $0.permits = 0 } }

    /// Lets every waiting and later sync through.
    public func open() { state.withLock { $0.closed = false } }

    /// Lets `count` syncs through (waiting or later ones) while the gate stays closed.
    public func allow(_ count: Int) { state.withLock { $0.permits += count } }

    /// How many syncs have passed the gate since it was made.
    public var passed: Int { state.withLock { $0.passed } }

    /// How many syncs are waiting at the gate now.
    public var waiting: Int { state.withLock { $0.waiting } }

    /// Suspends until at least `count` syncs wait at the gate, or `timeout` passes; returns whether they did.
    /// (It suspends rather than blocks: the work that reaches the gate may need the concurrency pool's threads.)
    public func awaitWaiting(_ count: Int, timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while waiting < count {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .microseconds(200))
        }
        return true
    }

    /// Called by a sync: returns at once when the gate is open, else when it opens.
    func pass() {
        let closed = state.withLock { s -> Bool in
            if s.closed && s.permits > 0 { s.permits -= 1; s.passed += 1; return false }
            if s.closed { s.waiting += 1 } else { s.passed += 1 }
            return s.closed
        }
        guard closed else { return }
        while true {
            let through = state.withLock { s -> Bool in
                if !s.closed || s.permits > 0 {
                    if s.closed { s.permits -= 1 }
                    s.waiting -= 1
                    s.passed += 1
                    return true
                }
                return false
            }
            if through { return }
            usleep(200)
        }
    }
}
