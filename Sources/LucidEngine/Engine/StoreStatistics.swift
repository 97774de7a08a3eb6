/// A description of a store's files and contents, from ``Engine/storeStatistics()``.
public struct StoreStatistics: Sendable, Hashable {
    /// The on-disk format version this engine writes.
    public var formatVersion: UInt32
    /// Bytes of every segment, manifest slot and checkpoint.
    public var sizeBytes: UInt64
    /// Estimated bytes of the segments that hold live records, and the rest.
    public var liveBytes: UInt64
    public var deadBytes: UInt64
    /// Uncompressed page payload bytes divided by stored payload bytes, over every page (1 when empty).
    public var compressionRatio: Double
    /// The segments in log order (the order recovery replays them).
    public var segments: [SegmentStatistics]
    /// Keyspaces sorted by name.
    public var keyspaces: [KeyspaceStatistics]
}

/// One segment file.
public struct SegmentStatistics: Sendable, Hashable {
    /// Whether a segment holds the log as written, or the output of a compaction.
    public enum Kind: String, Sendable, Hashable {
        case log
        case compacted
    }

    public var id: UInt64
    public var fileName: String
    public var kind: Kind
    /// False only for the active segment (the one being appended to).
    public var sealed: Bool
    /// Bytes of the file (the visible length for the active segment).
    public var bytes: UInt64
    public var pages: Int
    public var records: Int
    /// Records that are the current version of their key.
    public var liveRecords: Int
    /// Estimated stored bytes of the live records: each page's bytes weighted by the share of its records that
    /// are live. `deadBytes` is the rest of the file.
    public var liveBytes: UInt64
    public var deadBytes: UInt64
}

/// One keyspace.
public struct KeyspaceStatistics: Sendable, Hashable {
    public var name: String
    /// Live records.
    public var records: Int
    /// Secondary indexes sorted by name, with their entry counts.
    public var indexes: [IndexStatistics]
}

/// One secondary index of a keyspace.
public struct IndexStatistics: Sendable, Hashable {
    public var name: String
    public var entries: Int
}
