// Checkpoint files as plain values, for FuzzCheckpoint: decoded by the loader open runs, encoded by the writer
// close runs.

@_spi(Fuzzing) extension FuzzingSupport {
    /// One segment a checkpoint names: id, salt, first LSN.
    public struct CheckpointSegment: Hashable, Sendable {
        public var id: UInt64
        public var salt: UInt64
        public var firstLSN: UInt64
        public init(id: UInt64, salt: UInt64, firstLSN: UInt64) {
            self.id = id
            self.salt = salt
            self.firstLSN = firstLSN
        }
    }

    /// One primary entry of a checkpoint: a key and its record's location.
    public struct CheckpointEntry: Hashable, Sendable {
        public var key: [UInt8]
        public var segment: UInt32
        public var pageOffset: UInt32
        public var valueOffset: UInt32
        public var valueLength: UInt32
        public var hasTerms: Bool
        public var sequence: UInt64
        public init(key: [UInt8], segment: UInt32, pageOffset: UInt32, valueOffset: UInt32, valueLength: UInt32,
                    hasTerms: Bool, sequence: UInt64) {
            self.key = key
            self.segment = segment
            self.pageOffset = pageOffset
            self.valueOffset = valueOffset
            self.valueLength = valueLength
            self.hasTerms = hasTerms
            self.sequence = sequence
        }
    }

    /// One secondary-index entry: `term ‖ primary key` and the term's length.
    public struct CheckpointIndexEntry: Hashable, Sendable {
        public var entry: [UInt8]
        public var termLength: Int
        public init(entry: [UInt8], termLength: Int) {
            self.entry = entry
            self.termLength = termLength
        }
    }

    /// One keyspace of a checkpoint. Decoded: entries in the order the loaded trees iterate them, and the counts
    /// the trees report. For encoding only the entries are used (inserted one by one, a later duplicate key wins).
    public struct CheckpointKeyspace: Hashable, Sendable {
        public var primary: [CheckpointEntry]
        public var indexes: [String: [CheckpointIndexEntry]]
        /// `BTree.count` of the loaded trees (decoding only; equal to the entry counts when the trees are sound).
        public var primaryCount: Int
        public var indexCounts: [String: Int]
        public init(primary: [CheckpointEntry], indexes: [String: [CheckpointIndexEntry]]) {
            self.primary = primary
            self.indexes = indexes
            self.primaryCount = primary.count
            self.indexCounts = indexes.mapValues(\.count)
        }
    }

    /// A whole checkpoint: header fields, segment list and keyspaces.
    public struct Checkpoint: Hashable, Sendable {
        public var coveredSegment: UInt64
        public var coveredOffset: UInt64
        public var nextLSN: UInt64
        public var lastSequence: UInt64
        public var segments: [CheckpointSegment]
        public var keyspaces: [String: CheckpointKeyspace]
        public init(coveredSegment: UInt64, coveredOffset: UInt64, nextLSN: UInt64, lastSequence: UInt64,
                    segments: [CheckpointSegment], keyspaces: [String: CheckpointKeyspace]) {
            self.coveredSegment = coveredSegment
            self.coveredOffset = coveredOffset
            self.nextLSN = nextLSN
            self.lastSequence = lastSequence
            self.segments = segments
            self.keyspaces = keyspaces
        }

        /// Primary entries over all keyspaces.
        public var entryCount: Int { keyspaces.values.reduce(0) { $0 + $1.primary.count } }
        /// Secondary-index entries over all keyspaces and indexes.
        public var indexEntryCount: Int {
            keyspaces.values.reduce(0) { $0 + $1.indexes.values.reduce(0) { $0 + $1.count } }
        }
    }

    /// What ``decodeCheckpoint(_:)`` found.
    public enum CheckpointOutcome: Hashable, Sendable {
        case valid(Checkpoint)
        /// Rejected (open would ignore the checkpoint and scan the log): the loader's reason.
        case invalid(String)
    }

    /// Decodes `bytes` as a `CHECKPOINT` file exactly as open loads one (``CheckpointLoader/load(directory:fileSystem:)``:
    /// its size guard, then ``CheckpointLoader/decode(_:)``), and converts the loaded trees to plain values by
    /// iterating them. Never traps; allocates at most what the bytes present allow.
    public static func decodeCheckpoint(_ bytes: [UInt8]) -> CheckpointOutcome {
        // The same guard as CheckpointLoader.load: decode(_:) itself assumes at least a trailer's worth of bytes.
        guard bytes.count >= Format.checkpointTrailerLength + 8 else {
            return .invalid("checkpoint of \(bytes.count) bytes")
        }
        let result = bytes.withUnsafeBytes { CheckpointLoader.decode($0) }
        switch result {
        case .failure(let rejection): return .invalid(rejection.description)
        case .success(let loaded): return .valid(checkpoint(loaded))
        }
    }

    /// Writes `checkpoint` with the engine's ``CheckpointWriter`` into `directory` on `fileSystem` (created when
    /// missing; any previous `CHECKPOINT` there is replaced) and returns the file's bytes. Each keyspace's trees
    /// are built by inserting its entries in the given order (a repeated key keeps the last location); term
    /// lengths are clamped to `UInt16`. Index trees without entries are not written (as the engine does).
    public static func encodeCheckpoint(_ checkpoint: Checkpoint, directory: String,
                                        fileSystem: any FileSystem = PosixFileSystem()) throws -> [UInt8] {
        if !fileSystem.directoryExists(at: directory) { try fileSystem.createDirectory(at: directory) }
        var keyspaces: [String: KeyspaceState] = [:]
        for (name, ks) in checkpoint.keyspaces {
            var state = KeyspaceState()
            for e in ks.primary {
                _ = state.primary.updateValue(
                    RecordLocation(segment: e.segment, pageOffset: e.pageOffset, valueOffset: e.valueOffset,
                                   valueLength: e.valueLength, hasTerms: e.hasTerms, sequence: e.sequence),
                    forKey: e.key)
            }
            for (indexName, entries) in ks.indexes {
                var tree = BTree<UInt16>()
                for e in entries { _ = tree.updateValue(UInt16(clamping: e.termLength), forKey: e.entry) }
                state.indexes[indexName] = tree
            }
            keyspaces[name] = state
        }
        let header = CheckpointHeader(
            coveredSegment: checkpoint.coveredSegment, coveredOffset: checkpoint.coveredOffset,
            nextLSN: checkpoint.nextLSN, lastSequence: checkpoint.lastSequence,
            segments: checkpoint.segments.map { .init(id: $0.id, salt: $0.salt, firstLSN: $0.firstLSN) })
        // Chunks of a few entries, so that inputs of a few hundred entries reach the loading of many chunks.
        let writer = CheckpointWriter(directory: directory, fileSystem: fileSystem, chunkEntries: fuzzChunkEntries)
        try writer.write(header: header, keyspaces: keyspaces)
        let handle = try fileSystem.openFile(at: writer.path, mode: .readOnly)
        defer { try? handle.close() }
        return try handle.read(at: 0, count: Int(try handle.size()))
    }

    /// `bytes` (a checkpoint file) with its trailer (length of everything before it, masked CRC32C) recomputed,
    /// so fuzzed bytes reach the decoder behind the checksum. Unchanged when shorter than the trailer.
    public static func withValidCheckpointChecksum(_ bytes: [UInt8]) -> [UInt8] {
        let trailer = Format.checkpointTrailerLength
        guard bytes.count >= trailer else { return bytes }
        var out = bytes
        let bodyEnd = bytes.count - trailer
        out.replaceSubrange(bodyEnd..<(bodyEnd + 8),
                            with: withUnsafeBytes(of: UInt64(bodyEnd).littleEndian) { Array($0) })
        let crc = CRC32C.mask(CRC32C.checksum(Array(out[0..<(bodyEnd + 8)])))
        out.replaceSubrange((bodyEnd + 8)..<(bodyEnd + 12), with: littleEndian(crc))
        return out
    }

    /// The most entries ``encodeCheckpoint(_:directory:fileSystem:)`` writes in one chunk (the engine writes
    /// `Format.checkpointChunkEntries`).
    public static let fuzzChunkEntries = 37

    /// The format's caps a checkpoint entry is checked against.
    public static let maxKeyLength = Format.maxKeyLength
    public static let maxValueLength = Format.maxValueLength
    public static let maxIndexTermLength = Format.maxIndexTermLength
    public static let maxNameLength = Format.maxKeyspaceNameLength
    public static let checkpointTrailerLength = Format.checkpointTrailerLength

    private static func checkpoint(_ loaded: CheckpointLoader.Loaded) -> Checkpoint {
        var keyspaces: [String: CheckpointKeyspace] = [:]
        for (name, state) in loaded.keyspaces {
            var primary: [CheckpointEntry] = []
            state.primary.forEach { key, l in
                primary.append(CheckpointEntry(key: Array(key), segment: l.segment, pageOffset: l.pageOffset,
                                               valueOffset: l.valueOffset, valueLength: l.valueLength,
                                               hasTerms: l.hasTerms, sequence: l.sequence))
                return true
            }
            var indexes: [String: [CheckpointIndexEntry]] = [:]
            for (indexName, tree) in state.indexes {
                var entries: [CheckpointIndexEntry] = []
                tree.forEach { entry, termLength in
                    entries.append(CheckpointIndexEntry(entry: Array(entry), termLength: Int(termLength)))
                    return true
                }
                indexes[indexName] = entries
            }
            var ks = CheckpointKeyspace(primary: primary, indexes: indexes)
            ks.primaryCount = state.primary.count
            ks.indexCounts = state.indexes.mapValues(\.count)
            keyspaces[name] = ks
        }
        let h = loaded.header
        return Checkpoint(coveredSegment: h.coveredSegment, coveredOffset: h.coveredOffset, nextLSN: h.nextLSN,
                          lastSequence: h.lastSequence,
                          segments: h.segments.map { CheckpointSegment(id: $0.id, salt: $0.salt, firstLSN: $0.firstLSN) },
                          keyspaces: keyspaces)
    }
}
