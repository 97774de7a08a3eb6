import Foundation
import Logging

/// Opens a store directory: takes the lock, picks the manifest, removes orphans, replays the log into the
/// in-memory index and cuts a torn tail (docs/FORMAT.md, "Recovery"). One instance per open.
struct Recovery {
    let path: String
    let options: EngineOptions
    var fileSystem: any FileSystem { options.fileSystem }
    var report = RecoveryReport()
    var strict: Bool { options.recoveryMode == .strict }

    init(path: String, options: EngineOptions) {
        self.path = path
        self.options = options
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
        for id in segmentIds where !listed.contains(id) {
            if try segmentHoldsData(id) {
                throw LucidError.corruption(
                    "segment \(Format.segmentFileName(id)) holds data but the manifest does not name it",
                    file: segmentPath(id), offset: UInt64(Format.segmentHeaderLength))
            }
            if !strict {
                // An interrupted roll: the file was created, the manifest naming it never written.
                try fileSystem.removeFile(at: segmentPath(id))
                report.removedFiles.append(Format.segmentFileName(id))
                directoryChanged = true
            }
        }
        if directoryChanged { try fileSystem.syncDirectory(at: path) }
        return try replay(manifest: manifest)
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
        return false
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
        let first = try EngineCore.createSegment(directory: path, id: 1, firstLSN: 1, fileSystem: fileSystem)
        let manifest = Manifest(version: 1, nextSegmentId: 2,
                                segments: [.init(id: 1, sealed: false, sealedLength: 0, firstLSN: 1)])
        try manifestStore.write(manifest)
        report.created = true
        var state = EngineState()
        state.segments[1] = first
        state.activeSegment = 1
        state.activeEnd = UInt64(Format.segmentHeaderLength)
        let writer = WriterState(manifest: manifest, active: first, activeEnd: state.activeEnd,
                                 nextLSN: 1, syncedLSN: 0, lastSequence: 0)
        return (state, writer)
    }

    /// Opens every listed segment and replays it; cuts a torn tail of the active segment.
    private mutating func replay(manifest: Manifest) throws -> (EngineState, WriterState) {
        var state = EngineState()
        var replayer = Replayer()
        var expectedLSN: UInt64? = nil
        var activeFile: SegmentFile?
        var activeEnd: UInt64 = 0
        for entry in manifest.segments.sorted(by: { $0.firstLSN < $1.firstLSN }) {
            let file = try openSegment(entry)
            state.segments[entry.id] = file
            if let expected = expectedLSN, expected != entry.firstLSN {
                throw LucidError.corruption("segment starts at LSN \(entry.firstLSN), expected \(expected)",
                                            file: file.path, offset: 32)
            }
            report.segmentsScanned += 1
            if entry.sealed {
                expectedLSN = try replaySealed(file, entry: entry, into: &replayer)
                state.sealedLengths[entry.id] = entry.sealedLength
            } else {
                (activeEnd, expectedLSN) = try replayActive(file, firstLSN: entry.firstLSN, into: &replayer)
                activeFile = file
                state.activeSegment = entry.id
                state.activeEnd = activeEnd
            }
        }
        guard let active = activeFile, let nextLSN = expectedLSN else {
            throw LucidError.corruption("manifest names no active segment", file: path, offset: 0)
        }
        state.keyspaces = replayer.keyspaces
        state.lastSequence = replayer.lastSequence
        report.recordsReplayed = replayer.records
        report.lastSequence = replayer.lastSequence
        let writer = WriterState(manifest: manifest, active: active, activeEnd: activeEnd,
                                 nextLSN: nextLSN, syncedLSN: nextLSN - 1, lastSequence: replayer.lastSequence)
        return (state, writer)
    }

    private func openSegment(_ entry: Manifest.Segment) throws -> SegmentFile {
        let path = segmentPath(entry.id)
        guard fileSystem.fileExists(at: path) else {
            throw LucidError.corruption("segment named by the manifest is missing", file: path, offset: 0)
        }
        let writable = !entry.sealed && !strict
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
        return SegmentFile(id: entry.id, path: path, header: header, handle: handle)
    }
}
