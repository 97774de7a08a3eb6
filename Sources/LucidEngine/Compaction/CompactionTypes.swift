import Foundation

/// What ``Engine/compact(_:)`` rewrites and how it reports progress.
public struct CompactionOptions: Sendable {
    /// The sealed segments to compact, by id. They must be sealed and adjacent in the log order (as listed by
    /// ``Engine/storeStatistics()``). Nil (the default): every sealed segment.
    public var segments: [UInt64]?
    /// Called on the compacting thread after every output page batch and once at the end, with bytes of input
    /// live data copied so far and the total to copy. Must be cheap and must not call back into the engine's
    /// compaction.
    public var progress: (@Sendable (CompactionProgress) -> Void)?
    /// Test hook: runs after the outputs are written and before the swap (so a test can write meanwhile).
    var beforeSwap: (@Sendable () -> Void)?

    /// Every sealed segment, no progress callback.
    public init(segments: [UInt64]? = nil, progress: (@Sendable (CompactionProgress) -> Void)? = nil) {
        self.segments = segments
        self.progress = progress
    }
}

/// Progress of a running compaction.
public struct CompactionProgress: Sendable, Hashable {
    /// Bytes of live records (key + value + terms, uncompressed) copied so far.
    public var bytesDone: UInt64
    /// Bytes of live records to copy in total.
    public var bytesTotal: UInt64
    /// Records copied so far.
    public var recordsMoved: Int
}

/// What a compaction did.
public struct CompactionSummary: Sendable, Hashable {
    /// Ids of the sealed segments that were rewritten (and removed).
    public var inputSegments: [UInt64] = []
    /// Ids of the compacted segments written in their place.
    public var outputSegments: [UInt64] = []
    /// Size of every segment of the store before and after the compaction, in bytes (the active segment may
    /// have grown meanwhile).
    public var bytesBefore: UInt64 = 0
    public var bytesAfter: UInt64 = 0
    /// Bytes of the input segments and of the output segments.
    public var inputBytes: UInt64 = 0
    public var outputBytes: UInt64 = 0
    /// Live records copied.
    public var recordsMoved = 0
    /// Deletion records kept because an older segment outside the compaction may still hold the deleted key.
    public var tombstonesKept = 0
    /// Wall-clock time of the whole compaction.
    public var duration: Duration = .zero

    public init() {}
}

/// When the engine compacts by itself (``EngineOptions/autoCompaction``).
public struct AutoCompactionPolicy: Sendable, Hashable {
    /// Compact every sealed segment when the estimated dead share of the sealed bytes reaches this ratio
    /// (0 < ratio < 1). Default 0.5.
    public var deadRatio: Double
    /// ... and the sealed segments hold at least this many bytes. Default 64 MiB.
    public var minimumSealedBytes: UInt64

    /// A policy; see the properties.
    public init(deadRatio: Double = 0.5, minimumSealedBytes: UInt64 = 64 << 20) {
        self.deadRatio = deadRatio
        self.minimumSealedBytes = minimumSealedBytes
    }
}

extension Engine {
    /// Rewrites the live records of sealed segments into new compacted segments (full pages, key order) and
    /// removes the inputs. Online: reads, writes and snapshots go on; a snapshot taken before keeps reading the
    /// old files until it is released. Crash-safe at every step (the manifest write is the commit point).
    /// One compaction runs at a time; a second call waits for the first.
    /// - Complexity: reads every live record of the inputs once, writes them once; O(live keys) memory for the
    ///   new locations.
    /// - Throws: ``LucidError/Code/invalidArgument`` for segments that are not sealed or not adjacent;
    ///   ``LucidError/Code/closed``, ``LucidError/Code/failedState``, ``LucidError/Code/io``,
    ///   ``LucidError/Code/corruption`` when an input page fails its checksum (nothing is changed then).
    public func compact(_ options: CompactionOptions = CompactionOptions()) async throws -> CompactionSummary {
        try await withCheckedThrowingContinuation { continuation in
            let core = self.core
            let thread = Thread { continuation.resume(with: Result { try core.compact(options) }) }
            thread.name = "lucid.compaction"
            thread.start()
        }
    }

    /// The blocking form of ``compact(_:)``, for command-line tools and tests.
    public func compactAndWait(_ options: CompactionOptions = CompactionOptions()) throws -> CompactionSummary {
        try core.compact(options)
    }

    /// Seals the active segment now (if it holds anything) and starts a new one, so that a following
    /// ``compact(_:)`` includes everything written so far. - Complexity: one fsync, one segment creation and one
    /// manifest write. - Throws: closed, failedState, io (the engine then refuses writes until reopened, as for
    /// any failed write).
    public func sealActiveSegment() throws {
        let core = self.core
        try core.runOnWriter {
            guard core.writer.activeEnd > UInt64(Format.segmentHeaderLength) else { return }
            do {
                try core.roll()
            } catch {
                let lucidError = error as? LucidError ?? LucidError(code: .io, message: "\(error)")
                core.failure.withLock { $0 = lucidError }
                throw lucidError
            }
        }
    }

    /// Describes the store: segments with live and dead bytes, keyspaces with record counts, indexes with entry
    /// counts. - Complexity: reads every page header of every segment (not the payloads) and walks the primary
    /// index once. - Throws: ``LucidError/Code/closed``, ``LucidError/Code/io``.
    public func storeStatistics() throws -> StoreStatistics { try core.storeStatistics() }
}
