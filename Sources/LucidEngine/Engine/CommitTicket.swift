/// The outcome, to come, of a batch queued with ``Engine/submit(_:)``: its sequence number once the batch is
/// committed (durable per the sync mode), or the error that failed it.
///
/// Tickets of one engine complete in submission order. A write or sync failure fails its commit group and puts
/// the engine in a failed state that fails every later commit until reopened, so a ticket that succeeds tells
/// that every batch submitted before it on the same engine succeeded too: a bulk load may keep only its last
/// ticket.
///
/// Waiting costs nothing once the ticket is complete; ``wait()`` blocks the calling thread until then, and
/// ``sequence`` suspends the calling task.
public final class CommitTicket: Sendable {
    let box = ResultBox<UInt64>()

    init() {}

    /// Whether the commit has completed (succeeded or failed). O(1); never blocks but on the ticket's lock.
    public var isComplete: Bool { box.isFulfilled }

    /// Blocks the calling thread until the batch is committed; returns its sequence number. Do not call from the
    /// Swift concurrency pool (use ``sequence`` there).
    /// - Throws: the ``LucidError`` that failed the commit: ``LucidError/Code/io`` when its group's write, sync or
    ///   segment roll failed, ``LucidError/Code/corruption`` when a record the group replaces could not be read
    ///   back (its index terms), ``LucidError/Code/failedState`` after an earlier failure. (Closing the engine
    ///   writes every queued batch first, so a queued ticket never fails with `closed`.)
    @discardableResult
    public func wait() throws -> UInt64 { try box.wait().get() }

    /// The batch's sequence number once it is committed; suspends the calling task until then. Not cancellable:
    /// a cancelled task waits for the commit all the same (the batch is queued and will be written).
    /// - Throws: as ``wait()``.
    public var sequence: UInt64 {
        get async throws { try await box.value() }
    }
}
