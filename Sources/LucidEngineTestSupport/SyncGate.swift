import Foundation
import Synchronization

/// A gate every file sync of a ``FaultFileSystem`` passes before it takes effect: while the gate is closed, the
/// syncing thread waits. A test closes it to hold a commit in its sync while it queues more work behind it (a
/// deterministic group commit), then opens it.
///
/// Waiting polls every 200 µs: a test aid, not a synchronization primitive for production code.
public final class SyncGate: Sendable {
    private let state = Mutex<(closed: Bool, waiting: Int)>((false, 0))

    /// An open gate.
    public init() {}

    /// Makes later syncs wait until ``open()``.
    public func close() { state.withLock { $0.closed = true } }

    /// Lets every waiting and later sync through.
    public func open() { state.withLock { $0.closed = false } }

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
            if s.closed { s.waiting += 1 }
            return s.closed
        }
        guard closed else { return }
        while state.withLock({ $0.closed }) { usleep(200) }
        state.withLock { $0.waiting -= 1 }
    }
}
