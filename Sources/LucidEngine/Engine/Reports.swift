/// What recovery did when the store was opened.
public struct RecoveryReport: Sendable, Hashable {
    /// True when the store did not exist and was created.
    public var created = false
    /// Segments read (sealed and active).
    public var segmentsScanned = 0
    /// True when the index was loaded from a checkpoint and only the log after it was replayed.
    public var checkpointUsed = false
    /// Commit groups replayed.
    public var groupsReplayed = 0
    /// Records replayed.
    public var recordsReplayed = 0
    /// Bytes cut from the end of the active segment (a torn or never-synced tail).
    public var droppedBytes: UInt64 = 0
    /// Whole or partial pages among the dropped bytes.
    public var droppedPages = 0
    /// The segment that was truncated, if any.
    public var truncatedFile: String?
    /// Where the tail was cut.
    public var truncatedAtOffset: UInt64?
    /// Files removed because no manifest named them (an interrupted roll) or because they were temporary.
    public var removedFiles: [String] = []
    /// The last commit sequence in the recovered state.
    public var lastSequence: UInt64 = 0
}

/// One problem found by ``Engine/verify()``.
public struct VerifyProblem: Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: String, Sendable, Hashable {
        /// A page, header or manifest failed a check.
        case corruption
        /// A file the manifest names is missing or has the wrong length.
        case missingOrWrongLength
        /// The in-memory index disagrees with the log.
        case indexMismatch
        /// A file could not be read.
        case io
    }
    /// What is wrong.
    public var kind: Kind
    /// The file concerned (the store directory for index problems).
    public var file: String
    /// Where in ``file``, when known.
    public var offset: UInt64?
    /// A one-line explanation.
    public var detail: String

    /// `file:offset: kind: detail`.
    public var description: String {
        "\(file)" + (offset.map { ":\($0)" } ?? "") + ": \(kind.rawValue): \(detail)"
    }
}

/// The result of ``Engine/verify()``.
public struct VerifyReport: Sendable, Hashable {
    /// Every problem found; empty when the store is sound.
    public var problems: [VerifyProblem] = []
    /// Segments checked.
    public var segments = 0
    /// Pages checked (every checksum verified and every payload decoded).
    public var pages = 0
    /// Records decoded.
    public var records = 0
    /// Live keys across keyspaces, as the log says.
    public var liveKeys = 0
    /// Bytes of segment files checked.
    public var bytes: UInt64 = 0
    /// True when no problem was found.
    public var ok: Bool { problems.isEmpty }
}

/// The result of ``Engine/salvage(from:to:options:)``.
public struct SalvageReport: Sendable, Hashable {
    /// Commit groups copied to the new store.
    public var groupsCopied = 0
    /// Records copied.
    public var recordsCopied = 0
    /// Commit groups that could not be verified and were left behind (best estimate: groups whose pages failed).
    public var groupsLost = 0
    /// Byte ranges of the source that failed verification: (file, offset, length).
    public var damagedRanges: [DamagedRange] = []

    /// A range of a source file that was skipped.
    public struct DamagedRange: Sendable, Hashable {
        /// The damaged file.
        public var file: String
        /// Where the damage starts.
        public var offset: UInt64
        /// How many bytes were skipped.
        public var length: UInt64
    }
}

/// Counters describing an open engine.
public struct EngineStatistics: Sendable, Hashable {
    /// Last committed sequence number.
    public var lastSequence: UInt64
    /// Segment files in use.
    public var segments: Int
    /// Bytes of log in all segment files: the active one counts up to its last commit group, without the
    /// filler that may follow it while the store is open (docs/FORMAT.md, "Filler").
    public var totalBytes: UInt64
    /// Live keys across keyspaces.
    public var liveKeys: Int
    /// Page cache hits since open.
    public var cacheHits: UInt64
    /// Page cache misses since open (each one read and verified a page).
    public var cacheMisses: UInt64
    /// Lookups of single decoded records that found their value, since open: reads of pages whose records are
    /// compressed one by one, read in place (``EngineOptions/PageCompression/lz4Records`` with
    /// ``EngineOptions/memoryMappedReads``); 0 otherwise.
    public var recordCacheHits: UInt64
    /// Such lookups that did not: the record was then decoded from its page, or read the usual way when its page
    /// was not checked yet or is of another kind (a store written with other compressions before).
    public var recordCacheMisses: UInt64
    /// Commit groups written since open (group commit makes groups fewer than batches).
    public var groupsWritten: UInt64
    /// `fdatasync` calls made by the writer since open.
    public var syncs: UInt64
    /// Non-empty batches committed since open.
    public var batchesCommitted: UInt64
    /// Automatic compactions (``EngineOptions/autoCompaction``) that failed since open (one stopped by `close()`
    /// does not count). A failed compaction loses nothing (its inputs stay and the manifest is unchanged); the
    /// policy tries again once the sealed bytes have doubled.
    public var automaticCompactionFailures: UInt64 = 0
    /// The error of the last automatic compaction that failed, if any: `corruption` names the damaged file and
    /// offset, found while the compaction read a sealed segment that a reopen from the checkpoint did not read.
    public var lastAutomaticCompactionError: LucidError?
    /// Segments that compaction removed from the store and that snapshots taken before it still hold: their files
    /// are unlinked but stay open, so the file system gives their space back only when the last such snapshot is
    /// released. Not counted in ``segments`` or ``totalBytes``.
    public var pinnedSegments: Int = 0
    /// Bytes of the ``pinnedSegments``.
    public var pinnedSegmentBytes: UInt64 = 0
    /// How long ago compaction removed the oldest segment still pinned; nil when none is. Past
    /// ``EngineOptions/pinnedSegmentWarningAge`` the engine logs a warning naming the segment.
    public var oldestPinnedSegmentAge: Duration?
    /// Keys held by the point index (``EngineOptions/pointIndex``): every key of at most 16 bytes; 0 when it is off,
    /// and while it is being built after open.
    public var pointIndexKeys: Int = 0
    /// Bytes of memory the point index's tables take.
    public var pointIndexBytes: Int = 0
}
