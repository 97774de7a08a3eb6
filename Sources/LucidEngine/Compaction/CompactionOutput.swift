/// Writes a compaction's records into new segments of kind compacted: full pages (each its own group, records
/// with their original sequences), a new file whenever one reaches the segment size. Nothing names the files
/// until the compaction commits; recovery deletes unnamed compacted segments.
struct CompactionOutput {
    struct Finished {
        var file: SegmentFile
        var length: UInt64
    }

    let directory: String
    let fileSystem: any FileSystem
    let pageSize: Int
    /// LZ4 level of the output pages (``EngineOptions/compactionCompressionLevel``).
    let compressionLevel: Int
    /// Whether output pages are compressed at all (``EngineOptions/pageCompression``).
    let compressing: Bool
    /// The dictionary each output's records are compressed against, written as its first page; nil: pages are
    /// compressed whole (``EngineOptions/PageCompression``).
    let dictionary: LZ4.PreparedDictionary?
    let segmentSize: UInt64
    /// The first LSN of the log the inputs hold (recorded in each output's header).
    let firstLSN: UInt64
    let allocateId: () -> UInt64

    private(set) var finished: [Finished] = []
    private var file: SegmentFile?
    private var builder: PageBuilder?
    /// Bytes of the current file written so far (header included).
    private var written: UInt64 = 0
    /// For each record appended to the current builder: its plan coordinates.
    private var appended: [(keyspace: Int, record: Int)] = []
    private(set) var rawPayloadBytes: UInt64 = 0
    private(set) var storedPayloadBytes: UInt64 = 0

    init(directory: String, fileSystem: any FileSystem, pageSize: Int, compressionLevel: Int, compressing: Bool = true,
         dictionary: LZ4.PreparedDictionary? = nil, segmentSize: UInt64, firstLSN: UInt64,
         allocateId: @escaping () -> UInt64) {
        self.dictionary = dictionary
        self.directory = directory
        self.fileSystem = fileSystem
        self.pageSize = pageSize
        self.compressionLevel = compressionLevel
        self.compressing = compressing
        self.segmentSize = segmentSize
        self.firstLSN = firstLSN
        self.allocateId = allocateId
    }

    /// Appends a record; `coordinates` (keyspace and record index in the plan, record -1 for a deletion) come
    /// back from ``finishFile(into:)`` with the record's new place.
    mutating func append(_ op: WriteBatch.Operation, sequence: UInt64, coordinates: (Int, Int),
                         plan: inout CompactionPlan) throws {
        if builder == nil { try startFile() }
        builder!.append(op, sequence: sequence)
        appended.append((coordinates.0, coordinates.1))
        if builder!.output.count >= 1 << 20 { try flush() }
        if written + UInt64(builder!.output.count) + UInt64(pageSize) >= segmentSize { try finishFile(into: &plan) }
    }

    /// Seals and syncs the current file and records the new location of each record in it.
    mutating func finishFile(into plan: inout CompactionPlan) throws {
        guard let file, var builder = self.builder else { return }
        if builder.unsealedRecords > 0 { builder.finish() }
        self.builder = builder
        try flush()
        try file.handle.sync()
        let segmentId = UInt32(truncatingIfNeeded: file.id)
        for (placement, at) in zip(builder.placements, appended) where at.record >= 0 {
            let old = plan.keyspaces[at.keyspace].oldLocations[at.record]
            plan.keyspaces[at.keyspace].newLocations[at.record] = RecordLocation(
                segment: segmentId,
                pageOffset: UInt32(UInt64(Format.segmentHeaderLength) + UInt64(placement.pageStart)),
                valueOffset: UInt32(placement.valueOffset), valueLength: old.valueLength, hasTerms: old.hasTerms,
                sequence: old.sequence)
        }
        rawPayloadBytes += UInt64(builder.rawPayloadBytes)
        storedPayloadBytes += UInt64(builder.storedPayloadBytes)
        finished.append(Finished(file: file, length: written))
        self.file = nil
        self.builder = nil
        appended.removeAll()
    }

    /// Finishes the last file. A compaction always leaves at least one (possibly empty) output, which keeps the
    /// inputs' place and LSN range in the manifest.
    mutating func finish(into plan: inout CompactionPlan) throws {
        if builder == nil && finished.isEmpty { try startFile() }
        try finishFile(into: &plan)
    }

    /// Best effort: removes every file written so far (the compaction did not commit).
    func discard() {
        for path in (finished.map(\.file.path) + [file?.path].compactMap { $0 }) {
            try? fileSystem.removeFile(at: path)
        }
        try? fileSystem.syncDirectory(at: directory)
    }

    private mutating func startFile() throws {
        let id = allocateId()
        let created = try EngineCore.createSegment(directory: directory, id: id, firstLSN: firstLSN, kind: .compacted,
                                                   fileSystem: fileSystem)
        file = created
        builder = PageBuilder(pageSize: pageSize, salt: created.header.pageSalt, firstLSN: 1, syncedLSN: 0,
                              mode: .compacted, compressionLevel: compressionLevel, compressing: compressing,
                              dictionary: dictionary)
        if let dictionary {
            created.installDictionary(dictionary)
            builder!.appendDictionaryPages(dictionary.contents)
        }
        written = UInt64(Format.segmentHeaderLength)
    }

    private mutating func flush() throws {
        guard let file, builder != nil else { return }
        let bytes = builder!.drain()
        guard !bytes.isEmpty else { return }
        try bytes.withUnsafeBytes { try file.handle.write($0, at: written) }
        written += UInt64(bytes.count)
    }
}
