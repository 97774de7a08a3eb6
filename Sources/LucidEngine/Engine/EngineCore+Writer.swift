import Foundation
import Logging

extension EngineCore {
    /// The writer thread: takes every waiting batch, writes them as one commit group, syncs once, publishes,
    /// acknowledges (a lone synchronous commit may do the same on its own thread: ``writeLeading(_:)``). After
    /// any write or sync error the engine is failed: nothing more is written or acknowledged.
    func runWriter() {
        while let group = queue.takeGroup(extraBytes: Format.groupCommitExtraBytes) {
            if let job = group.first?.job {
                // A job (a compaction's swap) runs alone, between commit groups.
                runJob(job, completion: group[0].completion)
            } else {
                write(group)
            }
            queue.finishGroup()
            release(consume group)
        }
    }

    /// Drops a written group's batches. A large group's (a bulk load's) are freed on another thread: freeing
    /// thousands of keys, values and terms is work the writer thread, a bulk load's bottleneck, need not do. At
    /// most two groups wait to be freed (``EngineCore/releaseSlots``); past that the writer waits for one, so a
    /// fast producer cannot pile up written groups that are not freed yet.
    private func release(_ group: consuming [PendingCommit]) {
        guard group.reduce(0, { $0 + $1.batch.count }) >= Self.releaseAsynchronouslyFrom else { return }
        let garbage = Garbage(group)
        releaseSlots.wait()
        DispatchQueue.global(qos: .utility).async { [releaseSlots] in
            garbage.drop()
            releaseSlots.signal()
        }
    }

    /// Operations in a group from which ``release(_:)`` frees it on another thread.
    private static let releaseAsynchronouslyFrom = 256

    /// A written group on its way to be freed by another thread. `@unchecked Sendable`: only the thread that
    /// drops it touches it after the hand-off.
    private final class Garbage: @unchecked Sendable {
        private var group: [PendingCommit]?
        init(_ group: consuming [PendingCommit]) { self.group = group }
        func drop() { group = nil }
    }

    /// Writes a commit on the calling thread when the writer is idle and nothing is queued (see
    /// ``CommitQueue/tryLead()``); returns false, having done nothing, otherwise.
    func writeLeading(_ commit: PendingCommit) -> Bool {
        guard queue.tryLead() else { return false }
        write([commit])
        queue.finishGroup()
        return true
    }

    /// Writes one group and acknowledges each of its commits (or fails them all).
    private func write(_ group: [PendingCommit]) {
        if pinned.hasUnwarned { warnAboutPinnedSegments(now: .now) }
        if let failed = failure.withLock({ $0 }) {
            let error = Self.failedStateError(failed)
            for pending in group { pending.completion(.failure(error)) }
            return
        }
        do {
            let sequences = try writeGroup(group)
            for (pending, sequence) in zip(group, sequences) { pending.completion(.success(sequence)) }
        } catch {
            let lucidError = error as? LucidError ?? LucidError(code: .io, message: "\(error)")
            failure.withLock { $0 = lucidError }
            discardUnacknowledgedTail()
            options.logger.error("write failed; the engine refuses writes until reopened",
                                 metadata: ["error": "\(lucidError)"])
            for pending in group { pending.completion(.failure(lucidError)) }
        }
    }

    private func runJob(_ job: @Sendable () throws -> Void,
                        completion: @Sendable (Result<UInt64, LucidError>) -> Void) {
        if let failed = failure.withLock({ $0 }) {
            completion(.failure(Self.failedStateError(failed)))
            return
        }
        do {
            try job()
            completion(.success(writer.lastSequence))
        } catch {
            completion(.failure(error as? LucidError ?? LucidError(code: .io, message: "\(error)")))
        }
    }

    private func needsSync(_ group: [PendingCommit]) -> Bool {
        if group.contains(where: \.forceSync) { return true }
        switch options.syncMode {
        case .always: return true
        case .none: return false
        case .grouped(let ms): return ContinuousClock.now - writer.lastSync >= .milliseconds(ms)
        }
    }

    /// Writes one commit group; returns each pending commit's sequence (an empty batch gets the sequence of the
    /// last commit before it).
    func writeGroup(_ group: [PendingCommit]) throws -> [UInt64] {
        let batches = group.filter { !$0.batch.isEmpty }
        var sequences: [UInt64] = []
        var next = writer.lastSequence
        for pending in group {
            if !pending.batch.isEmpty { next += 1 }
            sequences.append(next)
        }
        if batches.isEmpty {
            // Only sync requests (or empty batches): make everything written so far durable.
            if group.contains(where: \.forceSync) && writer.hasUnsyncedData { try syncActive() }
            return sequences
        }
        // A full segment is sealed before the next group is written, so a failing roll fails that group (with
        // nothing written or published), never one that was already acknowledged.
        if writer.activeEnd >= options.segmentSize { try roll() }
        // Read what the group replaces first: a failure here fails the commit before anything is written.
        let plan = try planGroup(batches)
        let segment = writer.active
        let startsSegment = writer.activeEnd == UInt64(Format.segmentHeaderLength)
        let dictionary = options.pageCompression == .lz4Records
            ? recordDictionary(for: segment, startingIt: startsSegment, batches: batches) : nil
        var builder = PageBuilder(pageSize: options.pageSize, salt: segment.header.pageSalt,
                                  firstLSN: writer.nextLSN, syncedLSN: writer.syncedLSN,
                                  expectedBytes: batches.reduce(0) { $0 + $1.batch.approximateBytes }
                                      + (startsSegment ? 2 * (dictionary?.count ?? 0) : 0),
                                  compressing: options.pageCompression != .none, dictionary: dictionary,
                                  sampling: options.pageCompression == .lz4Records,
                                  compressor: writer.pageCompressor)
        if let dictionary, startsSegment { builder.appendDictionaryPages(dictionary.contents) }
        let sequence = writer.lastSequence + UInt64(batches.count)
        plan.operations.withPacked { ops in
            let first = writer.lastSequence + 1
            for i in 0 ..< ops.count { builder.append(ops, i, sequence: first + UInt64(plan.batchOf[i])) }
        }
        builder.finish()

        let writeOffset = writer.activeEnd
        try builder.output.withUnsafeBytes { try segment.handle.write($0, at: writeOffset) }
        writer.nextLSN = builder.nextLSN
        writer.activeEnd += UInt64(builder.output.count)
        writer.bytesSinceCheckpoint += UInt64(builder.output.count)
        if needsSync(group) {
            preallocate(after: builder.output.count)
            try syncActive()
        }
        writer.lastSequence = sequence
        writer.recordSamples.add(builder.samples)
        groupsWritten.add(1, ordering: .relaxed)
        batchesCommitted.add(UInt64(batches.count), ordering: .relaxed)

        // Warm the cache with the pages just written, then publish the whole group at once.
        for (start, raw) in builder.rawPages {
            cache.insert(PageBuffer(raw), for: PageCache.Key(segment: segment.id, offset: writeOffset + UInt64(start)))
        }
        let segmentId = UInt32(truncatingIfNeeded: segment.id)
        let placements = builder.placements
        let newEnd = writer.activeEnd
        segment.setReadableEnd(newEnd)
        autoCompaction.rawWritten += UInt64(builder.rawPayloadBytes)
        autoCompaction.storedWritten += UInt64(builder.storedPayloadBytes)
        // The point index's grown tables are built before the exclusive section, which only installs them (and
        // after the index's build at open, which must see the state it was built from still published).
        points.waitUntilBuilt()
        points.prepare(plan)
        // Operations read in place, as `publish` reads them: only the fields each record needs.
        var retired: PointIndex.Retired = []
        let liveDelta = plan.operations.entries.withUnsafeBufferPointer { ops in
            state.write { s in
                let firstSequence = s.lastSequence + 1
                // A local function, not a closure in a constant: passed to the two non-escaping parameters below, its
                // context stays on the stack (a closure stored in a constant cost an allocation per commit).
                func location(_ i: Int) -> RecordLocation {
                    let placement = placements[i]
                    return RecordLocation(
                        segment: segmentId, pageOffset: UInt32(writeOffset + UInt64(placement.pageStart)),
                        valueOffset: UInt32(placement.valueOffset), valueLength: UInt32(ops[i].valueLength),
                        hasTerms: ops[i].termCount > 0, sequence: firstSequence + UInt64(plan.batchOf[i]))
                }
                let delta = s.publish(plan, location: location)
                retired = points.publish(plan, location: location)
                s.lastSequence = sequence
                s.activeEnd = newEnd
                return delta
            }
        }
        retired.removeAll()   // tables a growth replaced, freed now that readers are not waiting
        if let live = autoCompaction.liveRawBytes { autoCompaction.liveRawBytes = live + liveDelta }
        return sequences
    }

    /// The dictionary the records of a group written to `segment` are compressed against
    /// (``EngineOptions/PageCompression/lz4Records``), or nil to compress its pages whole. A segment the group
    /// starts gets one built from the records written lately; when fewer than half a dictionary's worth were (just
    /// after open), the previous segment's dictionary, or the newest one the store holds; in a new store, one
    /// built from the group's own records and those written lately. A segment that already holds pages keeps what
    /// it has (after a reopen: its first pages, when they are a dictionary). Writer thread only.
    private func recordDictionary(for segment: SegmentFile, startingIt: Bool,
                                  batches: [PendingCommit]) -> LZ4.PreparedDictionary? {
        if let known = writer.segmentDictionary, known.segment == segment.id { return known.prepared }
        var prepared: LZ4.PreparedDictionary?
        if startingIt {
            var bytes = writer.recordSamples.dictionary
            if bytes.count < Format.maxDictionaryLength / 2 {
                if let previous = writer.segmentDictionary?.prepared ?? Self.newestDictionary(currentState()) {
                    bytes = previous.contents
                } else {
                    bytes = Self.sampleRecords(batches, upTo: Format.maxDictionaryLength - bytes.count) + bytes
                }
            }
            prepared = bytes.isEmpty ? nil : segment.installDictionary(LZ4.PreparedDictionary(bytes))
        } else {
            do {
                prepared = try segment.recordDictionary()
            } catch {
                // Pages written before (by another mode, or without a dictionary): this segment's pages are
                // compressed whole until it rolls. An I/O error does the same, and says so.
                if (error as? LucidError)?.code != .corruption {
                    options.logger.notice("could not read the active segment's dictionary; compressing whole pages until it rolls",
                                          metadata: ["segment": "\(segment.path)", "error": "\(error)"])
                }
            }
        }
        writer.segmentDictionary = (segment.id, prepared)
        return prepared
    }

    /// Records of `batches`, encoded, spread evenly over them, at most `limit` bytes.
    static func sampleRecords(_ batches: [PendingCommit], upTo limit: Int) -> [UInt8] {
        let count = batches.reduce(0) { $0 + $1.batch.count }
        let stride = max(1, count / 256)
        var writer = ByteWriter(capacity: limit)
        var i = 0
        for pending in batches {
            pending.batch.withPacked { ops in
                for j in 0 ..< ops.count {
                    defer { i += 1 }
                    guard i % stride == 0, writer.bytes.count + RecordCodec.encodedSize(ops[j], seqDelta: 0) <= limit
                    else { continue }
                    _ = RecordCodec.encode(ops, j, seqDelta: 0, into: &writer)
                }
            }
        }
        return writer.bytes
    }

    /// Plans a group against the published state. The copy of that state is released on return, before the
    /// group is published: a tree still referenced from here would make the publish copy every node it touches.
    private func planGroup(_ batches: [PendingCommit]) throws -> CommitGroupPlan {
        let published = state.read { (keyspaces: $0.keyspaces, segments: $0.segments) }
        return try CommitGroupPlan(batches, current: published.keyspaces) { location in
            try PageFetch.terms(at: location, file: published.segments[UInt64(location.segment)], cache: cache,
                                storePath: path)
        }
    }

    /// Before the sync of a group of `written` bytes: when the next group of that size would run past the
    /// filler, writes up to ``EngineOptions/logPreallocationBytes`` more after the log's end (not past
    /// `segmentSize`, where the next group rolls), so that the next small commits overwrite instead of append
    /// (see ``SegmentFile/writeFiller(from:to:)``). Large groups gain nothing from it and append as before. The
    /// same sync makes the filler durable. A filler `pwrite` that fails fails nothing: the tail it leaves is filler
    /// or nothing, and the writer stops preallocating until reopened. (A failure the file system only reports at
    /// the sync, such as a writeback error, fails the group like any failed sync.)
    private func preallocate(after written: Int) {
        let chunk = UInt64(options.logPreallocationBytes)
        let end = writer.activeEnd
        guard chunk > 0, !writer.preallocationFailed, UInt64(written) <= chunk / 4,
              end + UInt64(written) > writer.preallocatedEnd, end < options.segmentSize else { return }
        let start = max(end, writer.preallocatedEnd)
        let target = min(end + chunk, options.segmentSize)
        guard target > start else { return }
        do {
            try writer.active.writeFiller(from: start, to: target)
            writer.preallocatedEnd = target
        } catch {
            // The file may now end inside the range: roll and close cut it by the file's size.
            writer.preallocationFailed = true
            options.logger.warning("could not preallocate the log; appending from now on", metadata: ["error": "\(error)"])
        }
    }

    /// Cuts whatever follows the active segment's last group (before a roll seals it at its exact length, and on
    /// close): the filler, and a part of one whose write failed, which `preallocatedEnd` does not cover. Returns
    /// whether the file was cut; the caller syncs when the cut must be durable.
    @discardableResult
    func cutFiller() throws -> Bool {
        writer.preallocatedEnd = writer.activeEnd
        guard try writer.active.handle.size() > writer.activeEnd else { return false }
        try writer.active.handle.truncate(to: writer.activeEnd)
        return true
    }

    /// After a failed write or sync, cuts the active segment back to what was acknowledged, so that a later open
    /// in the same boot cannot read bytes that a failed fsync may have left only in the page cache ("fsyncgate")
    /// and build on them, nor replay a commit that threw. With ``EngineOptions/SyncMode/always`` that is the end of
    /// the last successful sync (nothing after it was acknowledged). With `.grouped` and `.none` it is the end of
    /// the last published group: the groups before the failed one were acknowledged (not as durable) and readers
    /// see them, and no reader reads past that end (so a mapped read never faults on the cut). Best effort, and no
    /// fsync: the cut only has to be seen by this boot (after a power loss those bytes were never durable anyway).
    private func discardUnacknowledgedTail() {
        let keep: UInt64
        if options.syncMode == .always {
            keep = writer.durableEnd
        } else {
            let published = currentState()
            guard published.activeSegment == writer.active.id else { return }   // a roll failed half-way
            keep = published.activeEnd
        }
        do {
            guard try writer.active.handle.size() > keep else { return }
            try writer.active.handle.truncate(to: keep)
            writer.preallocatedEnd = keep
        } catch {
            options.logger.warning("could not cut the unacknowledged tail after a failure", metadata: ["error": "\(error)"])
        }
    }

    func syncActive() throws {
        try writer.active.handle.sync()
        writer.durableEnd = writer.activeEnd
        writer.syncedLSN = writer.nextLSN - 1
        writer.lastSync = .now
        syncCount.add(1, ordering: .relaxed)
    }

    /// Seals the active segment and starts the next one. The manifest write is the commit point: until it is
    /// durable, recovery still treats the old segment as active and removes the new (empty) file.
    func roll() throws {
        // The sealed length is the file's exact length (recovery checks it): cut the filler, durably, first.
        let cut = try cutFiller()
        if writer.hasUnsyncedData || cut { try syncActive() }
        let old = writer.active
        let sealedLength = writer.activeEnd
        let newId = allocateSegmentId()
        let file = try Self.createSegment(directory: path, id: newId, firstLSN: writer.nextLSN, kind: .log,
                                          fileSystem: fileSystem)
        var manifest = writer.manifest
        manifest.version += 1
        manifest.nextSegmentId = nextSegmentId()
        for i in manifest.segments.indices where manifest.segments[i].id == old.id {
            manifest.segments[i].sealed = true
            manifest.segments[i].sealedLength = sealedLength
            manifest.segments[i].endLSN = writer.nextLSN
        }
        manifest.segments.append(.init(id: newId, sealed: false, sealedLength: 0, firstLSN: writer.nextLSN))
        try manifestStore.write(manifest)
        writer.manifest = manifest
        writer.active = file
        writer.activeEnd = UInt64(Format.segmentHeaderLength)
        writer.durableEnd = writer.activeEnd
        writer.preallocatedEnd = writer.activeEnd
        if options.memoryMappedReads {
            old.mapSealed(length: sealedLength, readingInPlace: options.readsPagesInPlace)
            file.mapActive(end: UInt64(Format.segmentHeaderLength), segmentSize: options.segmentSize,
                           readingInPlace: options.readsPagesInPlace)
        }
        state.write { s in
            s.sealedLengths[old.id] = sealedLength
            s.segments[newId] = file
            s.activeSegment = newId
            s.activeEnd = UInt64(Format.segmentHeaderLength)
            s.manifest = manifest
        }
        options.logger.debug("rolled segment", metadata: ["sealed": "\(old.id)", "active": "\(newId)"])
        considerAutoCompaction()
        // Everything before the new segment is synced: a checkpoint here covers it.
        if writer.bytesSinceCheckpoint >= max(options.segmentSize * 2, writer.checkpointBytes) {
            do {
                try writeCheckpoint()
            } catch {
                // A checkpoint is only an accelerator; the log stays the truth.
                options.logger.warning("could not write a checkpoint", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Creates a segment file with its header, durable with its directory entry before anything names it.
    static func createSegment(directory: String, id: UInt64, firstLSN: UInt64, kind: Manifest.Segment.Kind,
                              fileSystem: any FileSystem) throws -> SegmentFile {
        let path = directory + "/" + Format.segmentFileName(id)
        let header = SegmentHeader(segmentId: id, salt: UInt64.random(in: 1...UInt64.max), firstLSN: firstLSN,
                                   createdAtMillis: UInt64(Date().timeIntervalSince1970 * 1000),
                                   kind: kind == .log ? Format.segmentKindLog : Format.segmentKindCompacted)
        let handle = try fileSystem.openFile(at: path, mode: .readWrite(create: true))
        do {
            try handle.truncate(to: 0)
            try handle.write(header.encode(), at: 0)
            try handle.sync()
            try fileSystem.syncDirectory(at: directory)
        } catch {
            try? handle.close()
            throw error
        }
        return SegmentFile(id: id, path: path, header: header, handle: handle)
    }
}
