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
    /// End of the active segment as of the last successful sync (or open).
    var durableEnd: UInt64 = 0
    /// End of the filler this session wrote ahead of `activeEnd` (equal to it when there is none): writes below
    /// it overwrite space the file already has (``SegmentFile/writeFiller(from:to:)``). Filler kept from before
    /// a crash is not counted (the first small durable commit writes it again); roll and close cut whatever
    /// follows the log by the file's size, not by this.
    var preallocatedEnd: UInt64 = 0
    /// Set when writing filler failed (a full disk, say): the writer stops preallocating until reopened.
    var preallocationFailed = false
    /// The last sequence covered by the checkpoint on disk (0: none known).
    var checkpointSequence: UInt64 = 0
    /// Log bytes written since that checkpoint, and its size: a roll writes a new checkpoint once the log since
    /// the last one outgrows it, which bounds both the replay after a crash and the checkpoint write cost.
    var bytesSinceCheckpoint: UInt64 = 0
    var checkpointBytes: UInt64 = 0
    /// The record dictionary of the active segment (``EngineOptions/PageCompression/lz4Records``), once decided:
    /// `prepared` nil when the segment has none (written before, or by another mode), so its pages are compressed
    /// whole. A segment keeps the dictionary it was given: rewriting its first group writes the same one.
    var segmentDictionary: (segment: UInt64, prepared: LZ4.PreparedDictionary?)?
    /// Records written lately, for the next segment's dictionary.
    var recordSamples = RecordSamples()
    /// Compresses the pages the writer builds (``PageBuilder``), its state kept from one commit group to the next.
    let pageCompressor = LZ4.BlockCompressor()

    init(manifest: Manifest, active: SegmentFile, activeEnd: UInt64, nextLSN: UInt64, syncedLSN: UInt64,
         lastSequence: UInt64) {
        self.manifest = manifest
        self.active = active
        self.activeEnd = activeEnd
        self.nextLSN = nextLSN
        self.syncedLSN = syncedLSN
        self.lastSequence = lastSequence
        self.durableEnd = activeEnd
        self.preallocatedEnd = activeEnd
    }

    var hasUnsyncedData: Bool { syncedLSN + 1 < nextLSN }
}

extension PendingCommit {
    init(batch: WriteBatch, forceSync: Bool, completion: @escaping @Sendable (Result<UInt64, LucidError>) -> Void) {
        self.init(batch: batch, completion: completion)
        self.forceSync = forceSync
    }
}
