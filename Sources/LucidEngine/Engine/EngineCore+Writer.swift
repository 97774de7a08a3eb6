import Foundation
import Logging

extension EngineCore {
    /// The writer thread: takes every waiting batch, writes them as one commit group, syncs once, publishes,
    /// acknowledges. After any write or sync error the engine is failed: nothing more is written or acknowledged.
    func runWriter() {
        while let group = queue.takeGroup(extraBytes: Format.groupCommitExtraBytes) {
            if let failed = failure.withLock({ $0 }) {
                let error = Self.failedStateError(failed)
                for pending in group { pending.completion(.failure(error)) }
                continue
            }
            do {
                let sequence = try writeGroup(group)
                for pending in group { pending.completion(.success(sequence)) }
            } catch {
                let lucidError = error as? LucidError ?? LucidError(code: .io, message: "\(error)")
                failure.withLock { $0 = lucidError }
                options.logger.error("write failed; the engine refuses writes until reopened",
                                     metadata: ["error": "\(lucidError)"])
                for pending in group { pending.completion(.failure(lucidError)) }
            }
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

    /// Writes one commit group; returns the sequence of its last batch.
    private func writeGroup(_ group: [PendingCommit]) throws -> UInt64 {
        let batches = group.filter { !$0.batch.isEmpty }
        if batches.isEmpty {
            // Only sync requests (or empty batches): make everything written so far durable.
            if group.contains(where: \.forceSync) && writer.hasUnsyncedData { try syncActive() }
            return writer.lastSequence
        }
        let segment = writer.active
        var builder = PageBuilder(pageSize: options.pageSize, salt: segment.header.pageSalt,
                                  firstLSN: writer.nextLSN, syncedLSN: writer.syncedLSN)
        var sequence = writer.lastSequence
        for pending in batches {
            sequence += 1
            for op in pending.batch.operations { builder.append(op, sequence: sequence) }
        }
        builder.finish()

        let writeOffset = writer.activeEnd
        try builder.output.withUnsafeBytes { try segment.handle.write($0, at: writeOffset) }
        writer.nextLSN = builder.nextLSN
        writer.activeEnd += UInt64(builder.output.count)
        if needsSync(group) { try syncActive() }
        writer.lastSequence = sequence
        groupsWritten.add(1, ordering: .relaxed)
        batchesCommitted.add(UInt64(batches.count), ordering: .relaxed)

        // Warm the cache with the pages just written, then publish the whole group at once.
        for (start, raw) in builder.rawPages {
            cache.insert(PageBuffer(raw), for: PageCache.Key(segment: segment.id, offset: writeOffset + UInt64(start)))
        }
        let segmentId = UInt32(truncatingIfNeeded: segment.id)
        let placements = builder.placements
        let newEnd = writer.activeEnd
        state.write { s in
            var index = 0
            var seq = s.lastSequence
            for pending in batches {
                seq += 1
                for op in pending.batch.operations {
                    let placement = placements[index]
                    index += 1
                    switch op.kind {
                    case .put:
                        let location = RecordLocation(
                            segment: segmentId,
                            pageOffset: UInt32(writeOffset + UInt64(placement.pageStart)),
                            valueOffset: UInt32(placement.valueOffset), valueLength: UInt32(op.value.count),
                            sequence: seq)
                        s.keyspaces[op.keyspace, default: BTree()].updateValue(location, forKey: op.key)
                    case .delete:
                        s.keyspaces[op.keyspace]?.removeValue(forKey: op.key)
                    }
                }
            }
            s.lastSequence = sequence
            s.activeEnd = newEnd
        }
        if writer.activeEnd >= options.segmentSize { try roll() }
        return sequence
    }

    func syncActive() throws {
        try writer.active.handle.sync()
        writer.syncedLSN = writer.nextLSN - 1
        writer.lastSync = .now
        syncCount.add(1, ordering: .relaxed)
    }

    /// Seals the active segment and starts the next one. The manifest write is the commit point: until it is
    /// durable, recovery still treats the old segment as active and removes the new (empty) file.
    func roll() throws {
        if writer.hasUnsyncedData { try syncActive() }
        let old = writer.active
        let sealedLength = writer.activeEnd
        let newId = writer.manifest.nextSegmentId
        let file = try Self.createSegment(directory: path, id: newId, firstLSN: writer.nextLSN, fileSystem: fileSystem)
        var manifest = writer.manifest
        manifest.version += 1
        manifest.nextSegmentId = newId + 1
        for i in manifest.segments.indices where manifest.segments[i].id == old.id {
            manifest.segments[i].sealed = true
            manifest.segments[i].sealedLength = sealedLength
        }
        manifest.segments.append(.init(id: newId, sealed: false, sealedLength: 0, firstLSN: writer.nextLSN))
        try manifestStore.write(manifest)
        writer.manifest = manifest
        writer.active = file
        writer.activeEnd = UInt64(Format.segmentHeaderLength)
        state.write { s in
            s.sealedLengths[old.id] = sealedLength
            s.segments[newId] = file
            s.activeSegment = newId
            s.activeEnd = UInt64(Format.segmentHeaderLength)
        }
        options.logger.debug("rolled segment", metadata: ["sealed": "\(old.id)", "active": "\(newId)"])
    }

    /// Creates a segment file with its header, durable with its directory entry before anything names it.
    static func createSegment(directory: String, id: UInt64, firstLSN: UInt64, fileSystem: any FileSystem) throws -> SegmentFile {
        let path = directory + "/" + Format.segmentFileName(id)
        let header = SegmentHeader(segmentId: id, salt: UInt64.random(in: 1...UInt64.max), firstLSN: firstLSN,
                                   createdAtMillis: UInt64(Date().timeIntervalSince1970 * 1000),
                                   kind: Format.segmentKindLog)
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
