import Foundation
import Logging

/// Opens a store directory: takes the lock, picks the manifest, removes orphans, replays the log into the
/// in-memory index and cuts a torn tail (docs/FORMAT.md, "Recovery"). One instance per open.
struct Recovery {
    let path: String
    let options: EngineOptions
    var fileSystem: any FileSystem { options.fileSystem }
    let cache: PageCache
    var report = RecoveryReport()
    var strict: Bool { options.recoveryMode == .strict }

    init(path: String, options: EngineOptions, cache: PageCache) {
        self.path = path
        self.options = options
        self.cache = cache
    }

    func segmentPath(_ id: UInt64) -> String { path + "/" + Format.segmentFileName(id) }

    /// Runs recovery with the lock already held; returns the published state and the writer's position.
    mutating func run() throws -> (EngineState, WriterState) {
        let manifestStore = ManifestStore(directory: path, fileSystem: fileSystem)
        let slots = try manifestStore.readSlots()
        var newest: Manifest?
        for case .valid(let m) in slots where newest.map({ m.version > $0.version }) ?? true { newest = m }
        let names = try fileSystem.contentsOfDirectory(at: path)
        var directoryChanged = false
        if !strict {
            for name in names where name.hasSuffix(Format.temporarySuffix) {
                try fileSystem.removeFile(at: path + "/" + name)
                report.removedFiles.append(name)
                directoryChanged = true
            }
        }
        let segmentIds = names.compactMap(Format.segmentId(fromFileName:)).sorted()

        guard let manifest = newest else {
            return try initialize(slots: slots, segmentIds: segmentIds, manifestStore: manifestStore)
        }
        let listed = Set(manifest.segments.map(\.id))
        let obsolete = Set(manifest.obsolete)
        for id in segmentIds where !listed.contains(id) {
            // Inputs of a committed compaction, and outputs of one that never committed (a compacted segment
            // the manifest does not name only ever holds copies): both are garbage.
            let disposable = try obsolete.contains(id) || segmentKind(id) == Format.segmentKindCompacted
            if !disposable, try segmentHoldsData(id) {
                throw LucidError.corruption(
                    "segment \(Format.segmentFileName(id)) holds data but the manifest does not name it",
                    file: segmentPath(id), offset: UInt64(Format.segmentHeaderLength))
            }
            if !strict {
                // An interrupted roll (the new file was created, the manifest naming it never written), or
                // compaction garbage.
                try fileSystem.removeFile(at: segmentPath(id))
                report.removedFiles.append(Format.segmentFileName(id))
                directoryChanged = true
            }
        }
        if directoryChanged { try fileSystem.syncDirectory(at: path) }
        do {
            return try replay(manifest: manifest, useCheckpoint: true)
        } catch is RestartWithoutCheckpoint {
            // The log after the checkpoint is not simply a clean continuation: decide from the whole log.
            options.logger.notice("the log after the checkpoint needs repair; scanning the whole log")
            report = RecoveryReport(removedFiles: report.removedFiles)
            return try replay(manifest: manifest, useCheckpoint: false)
        }
    }

    /// Thrown by a replay that started from a checkpoint and met damage or a tail to cut: only a scan of the
    /// whole log may decide what to report or repair.
    struct RestartWithoutCheckpoint: Error {}

    /// The kind in a segment file's header, or nil when the header does not decode.
    func segmentKind(_ id: UInt64) throws -> UInt32? {
        let handle = try fileSystem.openFile(at: segmentPath(id), mode: .readOnly)
        defer { try? handle.close() }
        let bytes = try handle.read(at: 0, count: Format.segmentHeaderLength)
        return (try? SegmentHeader.decode(bytes, file: segmentPath(id)))?.kind
    }

    /// True when a segment file has a valid header and a valid first page.
    func segmentHoldsData(_ id: UInt64) throws -> Bool {
        let handle = try fileSystem.openFile(at: segmentPath(id), mode: .readOnly)
        let size = try handle.size()
        guard let header = try? SegmentHeader.decode(try handle.read(at: 0, count: Format.segmentHeaderLength),
                                                     file: segmentPath(id)) else {
            try? handle.close()
            return false
        }
        let file = SegmentFile(id: id, path: segmentPath(id), header: header, handle: handle)
        var scanner = SegmentScanner(file: file, limit: size)
        if case .success = try scanner.page(at: UInt64(Format.segmentHeaderLength)) { return true }
        // A damaged first page does not make the rest disposable.
        return try scanner.findValidPage(after: UInt64(Format.segmentHeaderLength)) != nil
    }

    /// Makes the store directory's own entry durable before the manifest makes the store exist, and the entries of
    /// the directories above it (ALICE: a directory's entry is durable once its parent is synced): the directories
    /// may be ones the application made without syncing them (`mkdir -p`), or ones an earlier open made before a
    /// sync failed (`createDirectory` syncs nothing for a directory that exists). Every ancestor up to `/` (or `.`)
    /// is synced, once per store created. One this process cannot sync (``DirectoryPaths/cannotSync(_:)``:
    /// `EACCES`, `EPERM`, `EINVAL`, `EROFS`) is skipped with a warning: its entries are as durable as whoever made
    /// them left them. Any other failure fails the open.
    private func syncAncestors() throws {
        for directory in DirectoryPaths.ancestors(of: path) {
            do {
                try fileSystem.syncDirectory(at: directory)
            } catch let error as LucidError where DirectoryPaths.cannotSync(error) {
                options.logger.warning("cannot sync a directory above the new store: the entries in it are as durable as whoever made them left them",
                                       metadata: ["directory": "\(directory)", "error": "\(error)"])
            }
        }
    }

    /// No valid manifest: a store being created crashed before its manifest was durable, or there is no store.
    private mutating func initialize(slots: [Manifest.SlotState], segmentIds: [UInt64],
                                     manifestStore: ManifestStore) throws -> (EngineState, WriterState) {
        for id in segmentIds where try segmentHoldsData(id) {
            throw LucidError.corruption("no valid manifest, but segment \(Format.segmentFileName(id)) holds data",
                                        file: segmentPath(id), offset: UInt64(Format.segmentHeaderLength))
        }
        let nothingThere = slots.allSatisfy { $0 == .missing } && segmentIds.isEmpty
        guard options.createIfMissing else {
            if nothingThere { throw LucidError(code: .notFound, message: "no store in this directory", file: path) }
            throw LucidError.corruption("the manifest is damaged and no segment holds data",
                                        file: manifestStore.slotPath(0), offset: 0)
        }
        if strict && !nothingThere {
            throw LucidError.corruption("the manifest is damaged (an interrupted create?)",
                                        file: manifestStore.slotPath(0), offset: 0)
        }
        for id in segmentIds { try fileSystem.removeFile(at: segmentPath(id)) }
        try syncAncestors()
        let first = try EngineCore.createSegment(directory: path, id: 1, firstLSN: 1, kind: .log, fileSystem: fileSystem)
        let manifest = Manifest(version: 1, nextSegmentId: 2,
                                segments: [.init(id: 1, sealed: false, sealedLength: 0, firstLSN: 1)])
        try manifestStore.write(manifest)
        report.created = true
        var state = EngineState()
        state.manifest = manifest
        state.segments[1] = first
        state.activeSegment = 1
        state.activeEnd = UInt64(Format.segmentHeaderLength)
        if options.memoryMappedReads {
            first.mapActive(end: state.activeEnd, segmentSize: options.segmentSize,
                            readingInPlace: options.readsPagesInPlace)
        }
        let writer = WriterState(manifest: manifest, active: first, activeEnd: state.activeEnd,
                                 nextLSN: 1, syncedLSN: 0, lastSequence: 0)
        return (state, writer)
    }

    /// Opens every listed segment and replays the log: from a valid checkpoint's position when there is one,
    /// from the start otherwise; cuts a torn tail of the active segment.
    private mutating func replay(manifest: Manifest, useCheckpoint: Bool) throws -> (EngineState, WriterState) {
        var state = EngineState()
        // Segments are opened one by one as replay reaches them; a replaced record's terms are always in an
        // earlier (already opened) position of the log.
        let opened = SegmentTable()
        let cache = self.cache, storePath = path
        var replayer = Replayer { location in
            try PageFetch.terms(at: location, file: opened.files[UInt64(location.segment)], cache: cache,
                                storePath: storePath)
        }
        // Replay follows the manifest's order (a compaction's outputs sit where its inputs were), never file ids.
        let ordered = manifest.segments
        for entry in ordered {
            let file = try openSegment(entry)
            state.segments[entry.id] = file
            opened.files[entry.id] = file
        }
        let start = useCheckpoint ? try checkpointStart(manifest: manifest, files: opened.files) : nil
        if let start {
            replayer.keyspaces = start.keyspaces
            replayer.lastSequence = start.header.lastSequence
            report.checkpointUsed = true
        }
        var expectedLSN: UInt64? = nil
        var activeFile: SegmentFile?
        var activeEnd: UInt64 = 0
        let coveredPosition = start.flatMap { manifest.position(of: $0.header.coveredSegment) }
        for (position, entry) in ordered.enumerated() {
            let file = opened.files[entry.id]!
            // A compacted segment may pick up inside the stretch the compacted one before it replaced (the later
            // outputs of one compaction, or a compaction of the last of them with the log after it).
            let continuesCompaction = position > 0 && ordered[position - 1].continuedBy(entry)
            var from = UInt64(Format.segmentHeaderLength)
            var firstLSN = entry.firstLSN
            if let start, let coveredPosition {
                if position < coveredPosition {
                    // Wholly covered by the checkpoint: not read.
                    if entry.sealed { state.sealedLengths[entry.id] = entry.sealedLength }
                    expectedLSN = entry.endLSN == 0 ? nil : entry.endLSN
                    continue
                }
                if position == coveredPosition {
                    from = start.header.coveredOffset
                    firstLSN = start.header.nextLSN
                    expectedLSN = firstLSN
                }
            }
            if entry.kind == .compacted {
                // Pages of a compacted segment count their LSNs from 1; the log continues at its end LSN.
                if let expected = expectedLSN, expected != entry.firstLSN, !continuesCompaction {
                    if start != nil { throw RestartWithoutCheckpoint() }
                    throw LucidError.corruption("compacted segment replaces the log from LSN \(entry.firstLSN), "
                                                + "expected \(expected)", file: file.path, offset: 32)
                }
                firstLSN = 1
            } else if let expected = expectedLSN, expected != firstLSN {
                if start != nil { throw RestartWithoutCheckpoint() }
                throw LucidError.corruption("segment starts at LSN \(entry.firstLSN), expected \(expected)",
                                            file: file.path, offset: 32)
            }
            report.segmentsScanned += 1
            do {
                if entry.sealed {
                    let next = try replaySealed(file, entry: entry, from: from, firstLSN: firstLSN, into: &replayer)
                    if entry.kind == .log, entry.endLSN != 0, next != entry.endLSN {
                        throw LucidError.corruption("sealed segment ends before LSN \(next); the manifest says "
                                                    + "\(entry.endLSN)", file: file.path, offset: entry.sealedLength)
                    }
                    expectedLSN = entry.kind == .log ? next : (entry.endLSN == 0 ? nil : entry.endLSN)
                    state.sealedLengths[entry.id] = entry.sealedLength
                    continue
                }
                (activeEnd, expectedLSN) = try replayActive(file, from: from, firstLSN: firstLSN,
                                                            repair: start == nil, into: &replayer)
            } catch let error as LucidError where start != nil && error.code == .corruption {
                throw RestartWithoutCheckpoint()
            }
            activeFile = file
            state.activeSegment = entry.id
            state.activeEnd = activeEnd
            if options.memoryMappedReads {
                file.mapActive(end: activeEnd, segmentSize: options.segmentSize, readingInPlace: options.readsPagesInPlace)
            }
        }
        guard let active = activeFile, let nextLSN = expectedLSN else {
            throw LucidError.corruption("manifest names no active segment", file: path, offset: 0)
        }
        // What replay read may have been only in the OS page cache (a process that died before its fsync, or
        // whose fsync failed). New pages will claim everything before them is durable: make it so first.
        try active.handle.sync()
        state.keyspaces = replayer.keyspaces
        state.lastSequence = replayer.lastSequence
        state.manifest = manifest
        report.recordsReplayed = replayer.records
        report.lastSequence = replayer.lastSequence
        let writer = WriterState(manifest: manifest, active: active, activeEnd: activeEnd,
                                 nextLSN: nextLSN, syncedLSN: nextLSN - 1, lastSequence: replayer.lastSequence)
        if let start, replayer.records == 0 { writer.checkpointSequence = start.header.lastSequence }
        return (state, writer)
    }

    /// The checkpoint to start from, when there is one that matches this manifest and these files exactly.
    private func checkpointStart(manifest: Manifest, files: [UInt64: SegmentFile]) throws -> CheckpointLoader.Loaded? {
        let loaded: CheckpointLoader.Loaded
        switch CheckpointLoader.load(directory: path, fileSystem: fileSystem) {
        case .success(let l): loaded = l
        case .failure(let rejection):
            if rejection.description != "no checkpoint" {
                options.logger.notice("ignoring checkpoint; scanning the log", metadata: ["reason": "\(rejection)"])
            }
            return nil
        }
        let header = loaded.header
        func reject(_ reason: String) -> CheckpointLoader.Loaded? {
            options.logger.notice("ignoring checkpoint; scanning the log", metadata: ["reason": "\(reason)"])
            return nil
        }
        guard let covered = manifest.segments.first(where: { $0.id == header.coveredSegment }),
              let coveredFile = files[covered.id] else { return reject("covered segment not in the manifest") }
        let needed = manifest.segments.prefix(through: manifest.position(of: covered.id)!)
        guard needed.count == header.segments.count else { return reject("segment set differs") }
        for identity in header.segments {
            guard let entry = needed.first(where: { $0.id == identity.id }), entry.firstLSN == identity.firstLSN,
                  files[identity.id]?.header.salt == identity.salt else { return reject("segment identity differs") }
        }
        let length = covered.sealed ? covered.sealedLength : try coveredFile.handle.size()
        guard header.coveredOffset >= UInt64(Format.segmentHeaderLength), header.coveredOffset <= length,
              header.nextLSN >= covered.firstLSN else { return reject("covered position outside the segment") }
        if header.coveredOffset < length {
            // The next page must continue the checkpoint's LSN; a valid page with another LSN means the checkpoint
            // does not belong to this log. (Invalid bytes there are a torn tail, handled by replay.)
            var scanner = SegmentScanner(file: coveredFile, limit: length)
            if case .success(let (page, _)) = try scanner.page(at: header.coveredOffset), page.lsn != header.nextLSN {
                return reject("LSN at the covered position differs")
            }
        }
        return loaded
    }

    private func openSegment(_ entry: Manifest.Segment) throws -> SegmentFile {
        let path = segmentPath(entry.id)
        guard fileSystem.fileExists(at: path) else {
            throw LucidError.corruption("segment named by the manifest is missing", file: path, offset: 0)
        }
        let writable = !entry.sealed
        let handle = try fileSystem.openFile(at: path, mode: writable ? .readWrite(create: false) : .readOnly)
        let header = try SegmentHeader.decode(try handle.read(at: 0, count: Format.segmentHeaderLength), file: path)
        guard header.segmentId == entry.id, header.firstLSN == entry.firstLSN else {
            throw LucidError.corruption("segment header says id \(header.segmentId) first LSN \(header.firstLSN); "
                                        + "the manifest says \(entry.id), \(entry.firstLSN)", file: path, offset: 16)
        }
        if entry.sealed {
            let size = try handle.size()
            guard size == entry.sealedLength else {
                throw LucidError.corruption("sealed segment is \(size) bytes; the manifest says \(entry.sealedLength)",
                                            file: path, offset: min(size, entry.sealedLength))
            }
        }
        let file = SegmentFile(id: entry.id, path: path, header: header, handle: handle)
        if entry.sealed, options.memoryMappedReads {
            file.mapSealed(length: entry.sealedLength, readingInPlace: options.readsPagesInPlace)
        }
        return file
    }
}

/// The segments opened so far during a replay (a reference, so the replayer's term reader sees new ones).
final class SegmentTable {
    var files: [UInt64: SegmentFile] = [:]
}
