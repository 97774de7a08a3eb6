import Foundation

/// A batch waiting for the writer, with the callback that acknowledges it.
struct PendingCommit: Sendable {
    var batch: WriteBatch
    var completion: @Sendable (Result<UInt64, LucidError>) -> Void
    /// Sync even in the grouped and none modes (``Engine/sync()``).
    var forceSync = false
    /// Work to run on the writer thread between commit groups (a compaction's swap), instead of a batch.
    var job: (@Sendable () throws -> Void)?

    init(batch: WriteBatch, completion: @escaping @Sendable (Result<UInt64, LucidError>) -> Void) {
        self.batch = batch
        self.completion = completion
    }
}

/// The queue between committers and the single writer thread. The writer takes everything waiting at once
/// (group commit): many committers, one write and one fdatasync.
final class CommitQueue: @unchecked Sendable {
    // `pending` and `closed` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var pending: [PendingCommit] = []
    private var closed = false

    /// Adds a commit. Throws ``LucidError/Code/closed`` after ``close()``.
    func enqueue(_ commit: PendingCommit) throws {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { throw LucidError.closed() }
        pending.append(commit)
        condition.signal()
    }

    /// Waits for work and takes a group: the first waiting batch plus those after it while their total stays
    /// within `extraBytes` beyond the first and no job comes first; or a job alone. Returns nil once closed and
    /// drained.
    func takeGroup(extraBytes: Int) -> [PendingCommit]? {
        condition.lock()
        defer { condition.unlock() }
        while pending.isEmpty && !closed { condition.wait() }
        if pending.isEmpty { return nil }
        var total = 0
        var n = 0
        if pending[0].job != nil {
            n = 1   // a job runs alone
        } else {
            while n < pending.count && pending[n].job == nil {
                let size = pending[n].batch.approximateBytes
                if n > 0 && total + size > extraBytes { break }
                total += n == 0 ? 0 : size
                n += 1
            }
        }
        let group = Array(pending[0..<n])
        pending.removeFirst(n)
        return group
    }

    /// Refuses new commits; the writer drains what is queued and then stops.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A one-shot result box for synchronous waiters.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<T, LucidError>?

    func fulfill(_ value: Result<T, LucidError>) {
        condition.lock()
        result = value
        condition.broadcast()
        condition.unlock()
    }

    func wait() -> Result<T, LucidError> {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return result!
    }
}
