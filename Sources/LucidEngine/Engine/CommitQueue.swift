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
///
/// One group is written at a time, by the writer thread or, when nothing is queued and no group is being
/// written, by a synchronous committer on its own thread (``tryLead()``): a lone commit then pays no wake-up of
/// the writer thread and no wake-up back. Commits queued meanwhile wait for the writer thread, in order.
final class CommitQueue: @unchecked Sendable {
    // `pending`, `queuedBytes`, the turns, `closed` and `busy` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var pending: [PendingCommit] = []
    private var closed = false
    /// Whether a group is being written (by the writer thread or a leading committer).
    private var busy = false
    /// ``WriteBatch/approximateBytes`` of the batches in `pending`.
    private var queuedBytes = 0
    /// Turns of the committers held by a limit: the next to arrive, and the one whose turn it is.
    private var nextArrival: UInt64 = 0
    private var nextAdmitted: UInt64 = 0

    /// Adds a commit. With a `limit`, first waits while the queue is not empty and the queued batches (not counting
    /// a group being written) would hold more than `limit` bytes with this one (``WriteBatch/approximateBytes``):
    /// a batch is always admitted into an empty queue. Committers held by a limit are admitted in the order they
    /// arrived (a large batch is not overtaken by smaller ones forever); commits without a limit are never held.
    /// Throws ``LucidError/Code/closed`` after ``close()``, also when it closes during the wait.
    func enqueue(_ commit: PendingCommit, limit: Int? = nil) throws {
        condition.lock()
        defer { condition.unlock() }
        let size = commit.batch.approximateBytes
        if let limit {
            let turn = nextArrival
            nextArrival &+= 1
            // The next committer's turn once this one leaves the wait (admitted or closed); it still holds the lock
            // until it has queued its batch or thrown, so the next one sees the queue with this batch in it.
            defer {
                nextAdmitted &+= 1
                condition.broadcast()
            }
            while !closed && (turn != nextAdmitted || (queuedBytes > 0 && queuedBytes + size > limit)) {
                condition.wait()
            }
        }
        guard !closed else { throw LucidError.closed() }
        pending.append(commit)
        queuedBytes += size
        // Broadcast: the writer waits on the same condition as committers held back by the limit.
        condition.broadcast()
    }

    /// Waits for work and takes a group: the first waiting batch plus those after it while their total stays
    /// within `extraBytes` beyond the first and no job comes first; or a job alone. Returns nil once closed and
    /// drained.
    /// The caller writes the group and then calls ``finishGroup()``.
    func takeGroup(extraBytes: Int) -> [PendingCommit]? {
        condition.lock()
        defer { condition.unlock() }
        while (pending.isEmpty && !closed) || busy { condition.wait() }
        if pending.isEmpty { return nil }
        busy = true
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
        queuedBytes -= group.reduce(0) { $0 + $1.batch.approximateBytes }
        condition.broadcast()   // room for committers held back by a limit
        return group
    }

    /// Ends the group taken by ``takeGroup(extraBytes:)`` or led after ``tryLead()``: the next one may start.
    func finishGroup() {
        condition.lock()
        busy = false
        condition.broadcast()
        condition.unlock()
    }

    /// Whether the caller may write its own commit now, as a group of one, on its own thread: true when the
    /// queue is open and empty and no group is being written. The caller then writes it and calls
    /// ``finishGroup()``; until then the writer thread waits.
    func tryLead() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed, pending.isEmpty, !busy else { return false }
        busy = true
        return true
    }

    /// Refuses new commits; the writer drains what is queued (after a group being led) and then stops.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A one-shot result: the first ``fulfill(_:)`` wins; threads block in ``wait()`` and tasks suspend in
/// ``value()`` until it is set.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    // `result` and `waiters` are only touched with `condition` locked.
    private let condition = NSCondition()
    private var result: Result<T, LucidError>?
    private var waiters: [CheckedContinuation<T, any Error>] = []

    /// Whether the result is set.
    var isFulfilled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return result != nil
    }

    /// Sets the result unless already set; wakes blocked threads and resumes suspended tasks.
    func fulfill(_ value: Result<T, LucidError>) {
        condition.lock()
        guard result == nil else {
            condition.unlock()
            return
        }
        result = value
        let resumed = waiters
        waiters = []
        condition.broadcast()
        condition.unlock()
        for waiter in resumed { waiter.resume(with: value.mapError { $0 as any Error }) }
    }

    /// Blocks the calling thread until the result is set.
    func wait() -> Result<T, LucidError> {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return result!
    }

    /// Suspends the calling task until the result is set; returns its value or throws its error.
    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            guard let result else {
                waiters.append(continuation)
                condition.unlock()
                return
            }
            condition.unlock()
            continuation.resume(with: result.mapError { $0 as any Error })
        }
    }
}
