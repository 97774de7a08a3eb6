import Logging

extension Recovery {
    /// Replays a sealed segment. Every page must verify and the last one must be a COMMIT page ending exactly at
    /// the sealed length: anything else is durable data gone bad. Returns the next expected LSN.
    func replaySealed(_ file: SegmentFile, entry: Manifest.Segment, from start: UInt64, firstLSN: UInt64,
                      into replayer: inout Replayer) throws -> UInt64 {
        var scanner = SegmentScanner(file: file, limit: entry.sealedLength, from: start)
        var expected = firstLSN
        var pending: [(UInt64, PageHeader, PageBuffer)] = []
        while true {
            switch try scanner.next() {
            case .end:
                guard pending.isEmpty else {
                    throw LucidError.corruption("sealed segment ends inside a commit group", file: file.path,
                                                offset: pending[0].0)
                }
                return expected
            case .invalid(let offset, let reason):
                throw LucidError.corruption("sealed segment: \(reason)", file: file.path, offset: offset)
            case .page(let offset, let header, let raw):
                guard header.lsn == expected else {
                    throw LucidError.corruption("page has LSN \(header.lsn), expected \(expected)",
                                                file: file.path, offset: offset)
                }
                guard header.isGroupStart == pending.isEmpty else {
                    throw LucidError.corruption("page breaks commit-group framing", file: file.path, offset: offset)
                }
                expected += 1
                pending.append((offset, header, raw))
                if header.isCommit {
                    for (o, h, r) in pending { try replayer.apply(page: r, header: h, segment: file.id, pageOffset: o) }
                    pending.removeAll(keepingCapacity: true)
                }
            }
        }
    }

    /// Replays the active segment, applying each commit group whose COMMIT page verifies. At the first failure
    /// it decides between a torn, never-acknowledged tail (cut it) and damaged durable data (refuse).
    /// Returns the end of the last applied group and the next LSN.
    ///
    /// With `repair` false (a replay that started from a checkpoint) anything but a clean end throws
    /// ``Recovery/RestartWithoutCheckpoint`` instead of cutting.
    mutating func replayActive(_ file: SegmentFile, from start: UInt64, firstLSN: UInt64, repair: Bool,
                               into replayer: inout Replayer) throws -> (UInt64, UInt64) {
        let fileLength = try file.handle.size()
        var scanner = SegmentScanner(file: file, limit: fileLength, from: start)
        var expected = firstLSN
        var committedEnd = start
        var committedNextLSN = firstLSN
        var pending: [(UInt64, PageHeader, PageBuffer)] = []
        var failedAt: UInt64? = nil
        var failureReason = ""
        scan: while true {
            switch try scanner.next() {
            case .end:
                break scan
            case .invalid(let offset, let reason):
                failedAt = offset
                failureReason = reason
                break scan
            case .page(let offset, let header, let raw):
                guard header.lsn == expected else {
                    failedAt = offset
                    failureReason = "page has LSN \(header.lsn), expected \(expected)"
                    break scan
                }
                guard header.isGroupStart == pending.isEmpty else {
                    failedAt = offset
                    failureReason = "page breaks commit-group framing"
                    break scan
                }
                expected += 1
                pending.append((offset, header, raw))
                if header.isCommit {
                    for (o, h, r) in pending { try replayer.apply(page: r, header: h, segment: file.id, pageOffset: o) }
                    report.groupsReplayed += 1
                    committedEnd = offset + UInt64(header.totalLength)
                    committedNextLSN = expected
                    pending.removeAll(keepingCapacity: true)
                }
            }
        }
        guard committedEnd < fileLength else { return (committedEnd, committedNextLSN) }
        // Filler the writer laid down ahead of its last group (FORMAT.md, "Filler") is the clean end of the log:
        // nothing is dropped, and the file is left as it is (the writer overwrites it, close cuts it).
        if pending.isEmpty, failedAt == committedEnd, try file.isFiller(from: committedEnd, to: fileLength) {
            return (committedEnd, committedNextLSN)
        }
        if !repair { throw Recovery.RestartWithoutCheckpoint() }

        // Something follows the last complete group. Was any of it acknowledged as durable? A later valid page
        // of this segment whose syncedLSN reaches the first dropped LSN proves the dropped bytes had been synced.
        let firstDropped = committedNextLSN
        var droppedPages = pending.count
        if let failedAt {
            var position = failedAt
            droppedPages += 1
            while let found = try scanner.findValidPage(after: position) {
                // A valid page with an older LSN is a copy of a page already replayed (stale bytes in space the
                // log had not reached, say): its syncedLSN is below its own LSN, so it proves nothing about the
                // failed bytes, and it is dropped with the rest of the tail.
                if found.header.syncedLSN >= firstDropped && found.header.lsn >= firstDropped {
                    throw LucidError.corruption(
                        "damaged data that was acknowledged durable (\(failureReason)); a later page at offset "
                        + "\(found.offset) was written after it was synced", file: file.path, offset: failedAt)
                }
                droppedPages += 1
                position = found.offset
            }
        }
        let dropped = fileLength - committedEnd
        if strict {
            throw LucidError.corruption("strict recovery: \(dropped) bytes after the last complete commit group"
                                        + (failedAt != nil ? " (\(failureReason))" : ""),
                                        file: file.path, offset: committedEnd)
        }
        try file.handle.truncate(to: committedEnd)
        try file.handle.sync()
        report.droppedBytes = dropped
        report.droppedPages = droppedPages
        report.truncatedFile = file.path
        report.truncatedAtOffset = committedEnd
        options.logger.warning("recovery cut a torn or unsynced tail", metadata: [
            "file": "\(file.path)", "offset": "\(committedEnd)", "bytes": "\(dropped)", "pages": "\(droppedPages)",
            "reason": "\(failedAt != nil ? failureReason : "incomplete commit group")",
        ])
        return (committedEnd, committedNextLSN)
    }
}
