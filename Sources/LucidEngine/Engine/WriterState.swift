import Foundation

/// The writer's private position in the log. Touched only by open (before the writer thread starts) and by
/// the writer thread afterwards, and by close after the thread has stopped.
final class WriterState: @unchecked Sendable {
    var manifest: Manifest
    var active: SegmentFile
    /// End of the last commit group written to the active segment.
    var activeEnd: UInt64
    var nextLSN: UInt64
    /// Highest LSN known durable.
    var syncedLSN: UInt64
    var lastSequence: UInt64
    var lastSync = ContinuousClock.now

    init(manifest: Manifest, active: SegmentFile, activeEnd: UInt64, nextLSN: UInt64, syncedLSN: UInt64,
         lastSequence: UInt64) {
        self.manifest = manifest
        self.active = active
        self.activeEnd = activeEnd
        self.nextLSN = nextLSN
        self.syncedLSN = syncedLSN
        self.lastSequence = lastSequence
    }

    var hasUnsyncedData: Bool { syncedLSN + 1 < nextLSN }
}

extension PendingCommit {
    init(batch: WriteBatch, forceSync: Bool, completion: @escaping @Sendable (Result<UInt64, LucidError>) -> Void) {
        self.init(batch: batch, completion: completion)
        self.forceSync = forceSync
    }
}
