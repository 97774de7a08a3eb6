/// A checkpoint: the whole in-memory index (every keyspace's primary tree and secondary indexes) as of a
/// position in the log, so that open rebuilds the index without reading data pages (docs/FORMAT.md,
/// "Checkpoint"). Entries are written in key order, so loading is a linear bulk build.
///
/// It is only an accelerator: a missing, truncated, damaged or foreign checkpoint makes open scan the log
/// instead, never fail, and the result is the same state.
struct CheckpointHeader: Sendable, Hashable {
    /// The segment and offset where the log after the checkpoint starts.
    var coveredSegment: UInt64
    var coveredOffset: UInt64
    /// The LSN of the first page at that position, and the last commit sequence covered.
    var nextLSN: UInt64
    var lastSequence: UInt64

    /// Every segment whose records the checkpoint holds locations in: id, salt and first LSN.
    struct SegmentIdentity: Sendable, Hashable {
        var id: UInt64
        var salt: UInt64
        var firstLSN: UInt64
    }
    var segments: [SegmentIdentity]
}

/// Streams a checkpoint to a file: `CHECKPOINT.tmp`, fdatasync, rename to `CHECKPOINT`, directory fsync.
///
/// Each tree's entries are cut into chunks of at most `chunkEntries`, each prefix-coded on its own, so that open
/// decodes the chunks on several threads; the directory at the end lists them (docs/FORMAT.md, "Checkpoint").
struct CheckpointWriter {
    let directory: String
    let fileSystem: any FileSystem
    /// The most entries a chunk holds. Tests and fuzzers set it small to make many chunks of few entries.
    var chunkEntries = Format.checkpointChunkEntries

    init(directory: String, fileSystem: any FileSystem, chunkEntries: Int = Format.checkpointChunkEntries) {
        precondition(chunkEntries >= 1, "CheckpointWriter: a chunk holds at least one entry")
        self.directory = directory
        self.fileSystem = fileSystem
        self.chunkEntries = chunkEntries
    }

    var path: String { directory + "/" + Format.checkpointFileName }
    var temporaryPath: String { path + Format.temporarySuffix }

    /// Writes the checkpoint of `keyspaces` at `header`'s position; returns its size in bytes.
    /// - Complexity: O(entries + key bytes); streams through a 1 MiB buffer.
    /// - Throws: the file system's errors; the temporary file is removed and no `CHECKPOINT` is replaced.
    @discardableResult
    func write(header: CheckpointHeader, keyspaces: [String: KeyspaceState]) throws -> UInt64 {
        let handle = try fileSystem.openFile(at: temporaryPath, mode: .readWrite(create: true))
        var sink = Sink(handle: handle)
        do {
            try handle.truncate(to: 0)
            var w = ByteWriter(capacity: 1 << 20)
            w.raw(Format.checkpointMagic)
            w.u32(Format.checkpointVersion)
            w.u64(header.coveredSegment)
            w.u64(header.coveredOffset)
            w.u64(header.nextLSN)
            w.u64(header.lastSequence)
            w.u32(UInt32(header.segments.count))
            for s in header.segments { w.u64(s.id); w.u64(s.salt); w.u64(s.firstLSN) }
            // The chunks follow, then the directory that names and measures them.
            var directory = ByteWriter(capacity: 4096)
            directory.u32(UInt32(keyspaces.count))
            for (name, keyspace) in keyspaces.sorted(by: { $0.key < $1.key }) {
                directory.lengthPrefixed(Array(name.utf8))
                var keys = PrefixEncoder()
                var previousSegment: UInt32?
                try writeChunks(of: keyspace.primary, to: &sink, through: &w,
                                listing: &directory) { key, location, restart, w in
                    if restart { keys = PrefixEncoder(); previousSegment = nil }
                    let sameSegment = location.segment == previousSegment
                    keys.append(key, flag: sameSegment, to: &w)
                    if !sameSegment { w.varint(UInt64(location.segment)) }
                    previousSegment = location.segment
                    w.varint(UInt64(location.pageOffset))
                    w.varint(UInt64(location.valueOffset))
                    w.varint(UInt64(location.valueLength) << 1 | (location.hasTerms ? 1 : 0))
                    w.varint(location.sequence)
                }
                let indexes = keyspace.indexes.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
                directory.u32(UInt32(indexes.count))
                for (indexName, tree) in indexes {
                    directory.lengthPrefixed(Array(indexName.utf8))
                    var entries = PrefixEncoder()
                    var previousTermLength: UInt16?
                    try writeChunks(of: tree, to: &sink, through: &w,
                                    listing: &directory) { entry, termLength, restart, w in
                        if restart { entries = PrefixEncoder(); previousTermLength = nil }
                        let sameTermLength = termLength == previousTermLength
                        entries.append(entry, flag: sameTermLength, to: &w)
                        if !sameTermLength { w.varint(UInt64(termLength)) }
                        previousTermLength = termLength
                    }
                }
            }
            try sink.flush(&w)
            directory.u64(sink.written)   // where the directory starts
            try sink.flush(&directory)
            // Trailer: total length of everything before it, and the CRC of all of it.
            var trailer = ByteWriter(capacity: 12)
            trailer.u64(sink.written)
            sink.crc = CRC32C.checksum(trailer.bytes, extending: sink.crc)
            trailer.u32(CRC32C.mask(sink.crc))
            try sink.flush(&trailer)
            try handle.sync()
            try handle.close()
        } catch {
            try? handle.close()
            try? fileSystem.removeFile(at: temporaryPath)
            throw error
        }
        try fileSystem.rename(from: temporaryPath, to: path)
        try fileSystem.syncDirectory(at: directory)
        return sink.written
    }

    /// Writes `tree`'s entries in key order as chunks of at most ``chunkEntries`` (`encode` is told to restart its
    /// coding at each chunk's first entry), and appends to `directory` the chunk count, then each chunk's byte
    /// length and entry count. Bytes reach the file whenever `w` holds 1 MiB.
    private func writeChunks<Value>(
        of tree: BTree<Value>, to sink: inout Sink, through w: inout ByteWriter, listing directory: inout ByteWriter,
        _ encode: (UnsafeRawBufferPointer, Value, _ restart: Bool, inout ByteWriter) -> Void
    ) throws {
        let chunks = (tree.count + chunkEntries - 1) / chunkEntries
        directory.u32(UInt32(chunks))
        var inChunk = 0
        var chunkStart = sink.written + UInt64(w.count)
        try tree.forEach(from: nil, to: nil, reverse: false) { key, value in
            encode(key, value, inChunk == 0, &w)
            inChunk += 1
            if inChunk == chunkEntries {
                let end = sink.written + UInt64(w.count)
                directory.varint(end - chunkStart)
                directory.varint(UInt64(inChunk))
                chunkStart = end
                inChunk = 0
            }
            if w.count >= 1 << 20 { try sink.flush(&w) }
            return true
        }
        if inChunk > 0 {
            let end = sink.written + UInt64(w.count)
            directory.varint(end - chunkStart)
            directory.varint(UInt64(inChunk))
        }
    }

    /// Appends buffered bytes to the file, folding them into the running CRC.
    private struct Sink {
        let handle: any FileHandle
        var written: UInt64 = 0
        var crc: UInt32 = 0

        mutating func flush(_ w: inout ByteWriter) throws {
            guard w.count > 0 else { return }
            crc = CRC32C.checksum(w.bytes, extending: crc)
            try handle.write(w.bytes, at: written)
            written += UInt64(w.count)
            w.bytes.removeAll(keepingCapacity: true)
        }
    }
}
