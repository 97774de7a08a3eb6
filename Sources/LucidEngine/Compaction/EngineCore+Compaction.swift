import Foundation
import Logging
import Synchronization

extension EngineCore {
    /// Runs one compaction (docs/FORMAT.md, "Compaction"): plan on a snapshot, write the outputs, then swap on
    /// the writer thread (manifest write = commit point, new locations published at once, inputs unlinked).
    func compact(_ options: CompactionOptions) throws -> CompactionSummary {
        try compactionLock.withLock { _ in try compactLocked(options) }
    }

    /// The record dictionary of the newest segment that has one (``EngineOptions/PageCompression/lz4Records``):
    /// the records written last, which a compaction's output is compressed against. Nil when none has one.
    static func newestDictionary(_ state: EngineState) -> LZ4.PreparedDictionary? {
        for entry in state.manifest.segments.reversed() {
            if let file = state.segments[entry.id], let prepared = try? file.recordDictionary() { return prepared }
        }
        return nil
    }

    private func compactLocked(_ options: CompactionOptions) throws -> CompactionSummary {
        let started = ContinuousClock.now
        try checkOpen()
        if let failed = failure.withLock({ $0 }) { throw Self.failedStateError(failed) }
        let snapshot = currentState()
        let inputs = try Self.chooseInputs(options.segments, manifest: snapshot.manifest)
        var summary = CompactionSummary()
        summary.bytesBefore = storeBytes(snapshot)
        guard !inputs.isEmpty else {
            summary.bytesAfter = summary.bytesBefore
            summary.duration = ContinuousClock.now - started
            return summary
        }
        summary.inputSegments = inputs.map(\.id)
        summary.inputBytes = inputs.reduce(0) { $0 + $1.sealedLength }
        let isLogStart = snapshot.manifest.segments.first?.id == inputs[0].id

        var plan = CompactionPlan(state: snapshot, inputs: Set(inputs.map { UInt32(truncatingIfNeeded: $0.id) }))
        if !isLogStart {
            plan.addTombstones(try deletionsToKeep(inputs, state: snapshot))
        }
        var output = CompactionOutput(directory: path, fileSystem: fileSystem, pageSize: self.options.pageSize,
                                      compressionLevel: self.options.compactionCompressionLevel,
                                      compressing: self.options.pageCompression != .none,
                                      dictionary: self.options.pageCompression == .lz4Records
                                          ? Self.newestDictionary(snapshot) : nil,
                                      segmentSize: self.options.segmentSize, firstLSN: inputs[0].firstLSN,
                                      allocateId: { [self] in allocateSegmentId() })
        let committed = AtomicFlag()
        do {
            try writeOutputs(&plan, to: &output, state: snapshot, progress: options.progress)
            try output.finish(into: &plan)
            let endLSN = inputs.last!.endLSN
            let outputs = output.finished.map {
                Manifest.Segment(id: $0.file.id, sealed: true, sealedLength: $0.length, firstLSN: inputs[0].firstLSN,
                                 kind: .compacted, endLSN: endLSN)
            }
            let files = output.finished.map(\.file)
            let finishedPlan = plan
            options.beforeSwap?()
            try runOnWriter { [self] in
                try swap(inputs: inputs, outputs: outputs, files: files, plan: finishedPlan, committed: committed)
            }
        } catch {
            if !committed.isSet { output.discard() }
            throw error
        }
        summary.outputSegments = output.finished.map(\.file.id)
        summary.outputBytes = output.finished.reduce(0) { $0 + $1.length }
        summary.recordsMoved = plan.recordCount
        summary.tombstonesKept = plan.tombstoneCount
        summary.bytesAfter = storeBytes(currentState())
        summary.duration = ContinuousClock.now - started
        autoCompaction.noteCompaction(sealedBytes: sealedBytes(currentState()))
        options.progress?(CompactionProgress(bytesDone: plan.totalBytes, bytesTotal: plan.totalBytes,
                                             recordsMoved: plan.recordCount))
        self.options.logger.debug("compacted", metadata: [
            "inputs": "\(summary.inputSegments)", "outputs": "\(summary.outputSegments)",
            "bytes_before": "\(summary.bytesBefore)", "bytes_after": "\(summary.bytesAfter)",
            "records": "\(summary.recordsMoved)", "tombstones": "\(summary.tombstonesKept)"])
        return summary
    }

    /// The sealed segments to compact: all of them, or the named ones, which must be sealed and adjacent in
    /// the log order. Returned in log order.
    static func chooseInputs(_ ids: [UInt64]?, manifest: Manifest) throws -> [Manifest.Segment] {
        guard let ids else { return manifest.segments.filter(\.sealed) }
        if ids.isEmpty { return [] }
        var positions: [Int] = []
        for id in Set(ids) {
            guard let p = manifest.position(of: id) else {
                throw LucidError.invalidArgument("segment \(id) is not part of the store")
            }
            guard manifest.segments[p].sealed else {
                throw LucidError.invalidArgument("segment \(id) is the active segment; only sealed ones compact")
            }
            positions.append(p)
        }
        positions.sort()
        guard positions.last! - positions.first! == positions.count - 1 else {
            throw LucidError.invalidArgument("segments \(ids) are not adjacent in the log order")
        }
        return positions.map { manifest.segments[$0] }
    }

    /// Deletions in the inputs whose keys have no live version now (the newest deletion of each).
    private func deletionsToKeep(_ inputs: [Manifest.Segment], state: EngineState) throws -> [String: [[UInt8]: UInt64]] {
        var deleted: [String: [[UInt8]: UInt64]] = [:]
        for entry in inputs {
            guard let file = state.segments[entry.id] else { continue }
            var scanner = SegmentScanner(file: file, limit: entry.sealedLength)
            while true {
                try checkOpen()
                switch try scanner.next() {
                case .end:
                    break
                case .invalid(let offset, let reason):
                    throw LucidError.corruption("compaction input: \(reason)", file: file.path, offset: offset)
                case .page(_, let header, let raw):
                    guard header.type == Format.pageTypeData else { continue }
                    raw.bytes.withUnsafeBytes { payload in
                        _ = RecordCodec.decodeAll(payload, expectedCount: Int(header.recordCount),
                                                  baseSequence: header.baseSequence) { record in
                            guard record.kind == .delete else { return }
                            let name = String(decoding: record.keyspace, as: UTF8.self)
                            guard state.keyspaces[name]?.primary.value(forKey: record.key) == nil else { return }
                            let key = Array(record.key)
                            deleted[name, default: [:]][key] = max(deleted[name]?[key] ?? 0, record.sequence)
                        }
                    }
                    continue
                }
                break
            }
        }
        return deleted
    }

    /// Copies every planned record, in keyspace and key order, into `output`.
    private func writeOutputs(_ plan: inout CompactionPlan, to output: inout CompactionOutput, state: EngineState,
                              progress: (@Sendable (CompactionProgress) -> Void)?) throws {
        var done: UInt64 = 0
        var moved = 0
        var lastReport: UInt64 = 0
        for k in plan.keyspaces.indices {
            let name = plan.keyspaces[k].name
            plan.keyspaces[k].newLocations = plan.keyspaces[k].oldLocations
            for i in 0..<plan.keyspaces[k].count {
                if i & 1023 == 0 { try checkOpen() }
                let location = plan.keyspaces[k].oldLocations[i]
                let file = state.segments[UInt64(location.segment)]
                let page = try PageFetch.page(at: location, file: file, cache: cache, storePath: path)
                let value = try PageFetch.value(at: location, in: page, file: file, storePath: path)
                let terms = try PageFetch.terms(at: location, in: page, file: file, storePath: path)
                let op = WriteBatch.Operation(kind: .put, keyspace: name, key: plan.keyspaces[k].key(i), value: value,
                                              terms: terms)
                try output.append(op, sequence: location.sequence, coordinates: (k, i), plan: &plan)
                done += UInt64(op.key.count) + UInt64(location.valueLength) + 8
                moved += 1
                if let progress, done - lastReport >= 1 << 20 {
                    lastReport = done
                    progress(CompactionProgress(bytesDone: done, bytesTotal: plan.totalBytes, recordsMoved: moved))
                }
            }
            for tombstone in plan.keyspaces[k].tombstones {
                let op = WriteBatch.Operation(kind: .delete, keyspace: name, key: tombstone.key, value: [], terms: [])
                try output.append(op, sequence: tombstone.sequence, coordinates: (k, -1), plan: &plan)
                done += UInt64(tombstone.key.count) + 8
            }
        }
    }

    /// Runs `job` on the writer thread, between commit groups, and waits for it.
    func runOnWriter(_ job: @escaping @Sendable () throws -> Void) throws {
        let box = ResultBox<UInt64>()
        var pending = PendingCommit(batch: WriteBatch()) { box.fulfill($0) }
        pending.job = job
        try queue.enqueue(pending)
        _ = try box.wait().get()
    }

    /// On the writer thread: commits the compaction (manifest), publishes the new locations, removes the inputs,
    /// writes a checkpoint of the new layout.
    private func swap(inputs: [Manifest.Segment], outputs: [Manifest.Segment], files: [SegmentFile],
                      plan: CompactionPlan, committed: AtomicFlag) throws {
        var manifest = writer.manifest
        guard let position = manifest.position(of: inputs[0].id),
              position + inputs.count <= manifest.segments.count,
              Array(manifest.segments[position..<(position + inputs.count)]) == inputs else {
            throw LucidError.invalidArgument("the segments changed while the compaction ran")
        }
        manifest.version += 1
        manifest.nextSegmentId = nextSegmentId()
        manifest.segments.replaceSubrange(position..<(position + inputs.count), with: outputs)
        manifest.obsolete += inputs.map(\.id)
        do {
            try manifestStore.write(manifest)
        } catch {
            // The new manifest may or may not be on disk: both name complete files, but this process can no
            // longer tell which is in force. Stop writing; the next open decides.
            let lucidError = error as? LucidError ?? LucidError(code: .io, message: "\(error)")
            failure.withLock { $0 = lucidError }
            _ = committed.setOnce()
            throw lucidError
        }
        _ = committed.setOnce()
        writer.manifest = manifest

        // New state: built aside (readers go on with the published one), then published at once.
        var next = currentState()
        for keyspace in plan.keyspaces {
            for i in 0..<keyspace.count {
                keyspace.withKey(i) { key in
                    if next.keyspaces[keyspace.name]?.primary.value(forKey: key) == keyspace.oldLocations[i] {
                        _ = next.keyspaces[keyspace.name]!.primary.updateValue(keyspace.newLocations[i], forKey: key)
                    }
                }
            }
        }
        for (entry, file) in zip(outputs, files) {
            if options.memoryMappedReads {
                file.mapSealed(length: entry.sealedLength, readingInPlace: options.readsPagesInPlace)
            }
            next.segments[entry.id] = file
            next.sealedLengths[entry.id] = entry.sealedLength
        }
        var retired: [(file: SegmentFile, bytes: UInt64)] = []
        for entry in inputs {
            if let file = next.segments[entry.id] { retired.append((file, entry.sealedLength)) }
            next.segments[entry.id] = nil
            next.sealedLengths[entry.id] = nil
        }
        next.manifest = manifest
        // The point index moves the same records: large moves in copies built now, the rest in the exclusive section.
        points.waitUntilBuilt()
        let relocation = points.relocated(by: plan)
        var retiredTables: PointIndex.Retired = []
        state.write { s in
            s = next
            retiredTables = points.install(relocation)
        }
        retiredTables.removeAll()   // freed once readers are not waiting
        // Snapshots taken before now may go on holding the inputs (see `PinnedSegments`).
        pinned.retire(retired, at: .now)
        retired.removeAll()

        // The inputs go now; snapshots that still hold them keep their open descriptors until released.
        do {
            for entry in inputs { try fileSystem.removeFile(at: path + "/" + Format.segmentFileName(entry.id)) }
            try fileSystem.syncDirectory(at: path)
            writer.manifest.obsolete.removeAll { id in inputs.contains { $0.id == id } }
            state.write { $0.manifest.obsolete = writer.manifest.obsolete }
        } catch {
            options.logger.warning("could not remove compacted segments; the next open removes them",
                                   metadata: ["error": "\(error)"])
        }
        for entry in inputs { cache.removeAll(segment: entry.id) }
        // The checkpoint on disk names the inputs: replace it so the next open need not scan the log.
        if writer.hasUnsyncedData { try syncActive() }
        do {
            try writeCheckpoint()
        } catch {
            writer.checkpointSequence = 0
            options.logger.warning("could not write a checkpoint", metadata: ["error": "\(error)"])
        }
    }

    /// Bytes of every segment in `state`.
    func storeBytes(_ state: EngineState) -> UInt64 {
        state.manifest.segments.reduce(0) { $0 + ($1.sealed ? $1.sealedLength : state.activeEnd) }
    }

    /// Bytes of the sealed segments in `state`.
    func sealedBytes(_ state: EngineState) -> UInt64 {
        state.manifest.segments.reduce(0) { $0 + ($1.sealed ? $1.sealedLength : 0) }
    }
}
