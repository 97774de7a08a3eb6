#if canImport(Glibc)
import Glibc
#endif
import Logging

extension Engine {
    /// Copies every verifiable commit group of the store at `source` into a new store at `destination`, in log
    /// order, and reports what was left behind. The source is only read (its lock is held meanwhile, so it must
    /// not be open elsewhere) and never modified. Pages are found again after damage by searching for the next
    /// valid page; a group counts only when all its pages verify with consecutive LSNs and its COMMIT page is
    /// present. - Complexity: reads the source once, writes the salvaged data once.
    /// - Throws: ``LucidError/Code/invalidArgument`` when `destination` already holds a store; locked; notFound;
    ///   io.
    public static func salvage(from source: String, to destination: String,
                               options: EngineOptions = EngineOptions()) throws -> SalvageReport {
        let fileSystem = options.fileSystem
        guard fileSystem.directoryExists(at: source) else {
            throw LucidError(code: .notFound, message: "no such store directory", file: source)
        }
        if fileSystem.directoryExists(at: destination) {
            let names = try fileSystem.contentsOfDirectory(at: destination)
            if names.contains(where: { Format.manifestSlotNames.contains($0) || Format.segmentId(fromFileName: $0) != nil }) {
                throw LucidError.invalidArgument("salvage destination \(destination) already holds a store")
            }
        }
        let lock = try fileSystem.lockFile(at: source + "/" + Format.lockFileName, pid: getpid())
        defer { lock.unlock() }

        var targetOptions = options
        targetOptions.recoveryMode = .pointInTime
        targetOptions.syncMode = .none
        targetOptions.createIfMissing = true
        let target = try Engine.open(at: destination, options: targetOptions)
        var report = SalvageReport()
        // Segments may repeat records (a compaction's outputs next to inputs it had not removed yet) and come in
        // any order: each key keeps the operation with the highest sequence, whatever file it came from.
        var newest = NewestSequences()
        do {
            let sources = try salvageSources(source, fileSystem: fileSystem, report: &report)
            // Only the active segment, the last log segment, can end with filler (a roll cuts it before sealing);
            // 0xFF bytes anywhere else are damage.
            let active = sources.last { $0.header.kind == Format.segmentKindLog }?.id
            for file in sources {
                try salvageSegment(file, fillerAllowed: file.id == active, into: target, newest: &newest,
                                   report: &report)
            }
            try target.sync()
            try target.close()
        } catch {
            try? target.close()
            throw error
        }
        options.logger.notice("salvage finished", metadata: [
            "groups": "\(report.groupsCopied)", "records": "\(report.recordsCopied)",
            "lost_groups": "\(report.groupsLost)", "damaged_ranges": "\(report.damagedRanges.count)"])
        return report
    }

    /// Every segment file with a readable header, in log order. Unreadable ones are reported as damaged.
    private static func salvageSources(_ source: String, fileSystem: any FileSystem,
                                       report: inout SalvageReport) throws -> [SegmentFile] {
        var files: [SegmentFile] = []
        for name in try fileSystem.contentsOfDirectory(at: source) {
            guard let id = Format.segmentId(fromFileName: name) else { continue }
            let path = source + "/" + name
            let handle = try fileSystem.openFile(at: path, mode: .readOnly)
            do {
                let header = try SegmentHeader.decode(try handle.read(at: 0, count: Format.segmentHeaderLength), file: path)
                files.append(SegmentFile(id: id, path: path, header: header, handle: handle))
            } catch let error as LucidError where error.code == .corruption {
                report.damagedRanges.append(.init(file: path, offset: 0, length: (try? handle.size()) ?? 0))
                try? handle.close()
            }
        }
        return files.sorted { ($0.header.firstLSN, $0.id) < ($1.header.firstLSN, $1.id) }
    }

    /// The highest sequence copied so far for each key.
    struct NewestSequences {
        struct Key: Hashable {
            var keyspace: String
            var key: [UInt8]
        }
        var sequences: [Key: UInt64] = [:]

        /// True when an operation with `sequence` on `key` is not older than what was copied; records it.
        mutating func admit(_ key: Key, sequence: UInt64) -> Bool {
            if let seen = sequences[key], seen > sequence { return false }
            sequences[key] = sequence
            return true
        }
    }

    private static func salvageSegment(_ file: SegmentFile, fillerAllowed: Bool, into target: Engine,
                                       newest: inout NewestSequences, report: inout SalvageReport) throws {
        var scanner = SegmentScanner(file: file, limit: try file.handle.size())
        var pending: [(PageHeader, PageBuffer)] = []
        /// True while skipping the rest of a group whose beginning was lost.
        var skippingGroup = false
        func dropPending() {
            if !pending.isEmpty { report.groupsLost += 1 }
            pending.removeAll()
        }
        while true {
            switch try scanner.next() {
            case .end:
                dropPending()
                return
            case .invalid(let offset, _):
                // Filler after the active segment's last group is the end of the log, not damage.
                if fillerAllowed, pending.isEmpty, try file.isFiller(from: offset, to: scanner.limit) { return }
                // The damaged bytes belonged to some group: that group is lost (with any pages read of it).
                if pending.isEmpty && !skippingGroup { report.groupsLost += 1 }
                pending.removeAll()
                skippingGroup = true
                let next = try scanner.findValidPage(after: offset)
                let end = next?.offset ?? scanner.limit
                report.damagedRanges.append(.init(file: file.path, offset: offset, length: end - offset))
                guard let next else { return }
                scanner.seek(to: next.offset)
            case .page(_, let header, let raw):
                if let last = pending.last, last.0.lsn + 1 != header.lsn || header.isGroupStart { dropPending() }
                if pending.isEmpty {
                    // Only a page that starts a group can start one: never copy part of a group.
                    guard header.isGroupStart else {
                        if !skippingGroup { report.groupsLost += 1 }
                        skippingGroup = true
                        continue
                    }
                    skippingGroup = false
                }
                pending.append((header, raw))
                if header.isCommit {
                    let batch = batchFromPages(pending, newest: &newest)
                    pending.removeAll()
                    if !batch.isEmpty { try target.commitAndWait(batch) }
                    report.groupsCopied += 1
                    report.recordsCopied += batch.count
                }
            }
        }
    }

    /// Rebuilds the operations of a verified commit group, leaving out those older than what `newest` has seen.
    static func batchFromPages(_ pages: [(PageHeader, PageBuffer)], newest: inout NewestSequences) -> WriteBatch {
        var batch = WriteBatch()
        for (header, raw) in pages where header.type == Format.pageTypeData {
            raw.bytes.withUnsafeBytes { payload in
                _ = RecordCodec.decodeAll(payload, expectedCount: Int(header.recordCount),
                                          baseSequence: header.baseSequence) { record in
                    let keyspace = String(decoding: record.keyspace, as: UTF8.self)
                    guard newest.admit(.init(keyspace: keyspace, key: Array(record.key)), sequence: record.sequence)
                    else { return }
                    switch record.kind {
                    case .put:
                        let value = Array(payload[record.valueOffset..<(record.valueOffset + record.valueLength)])
                        batch.put(value, forKey: Array(record.key), in: keyspace,
                                  indexTerms: RecordCodec.terms(of: record, in: payload))
                    case .delete:
                        batch.delete(Array(record.key), in: keyspace)
                    }
                }
            }
        }
        return batch
    }
}
