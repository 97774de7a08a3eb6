extension Engine {
    /// Checks the whole store: every segment, page and checksum in the visible log, LSN continuity, sealed
    /// lengths, that the in-memory index equals the one the log implies (every key, every location), and that the
    /// point index (``EngineOptions/pointIndex``) holds what the published trees do.
    /// Runs on a snapshot, so writers go on meanwhile, but for the point index's check, which holds the state's
    /// read lock: commits wait for it (about 0.1 µs per key). - Complexity: reads the whole store once.
    /// - Throws: closed. Problems (including unreadable files) are reported, not thrown.
    public func verify() throws -> VerifyReport { try core.verify() }
}

extension EngineCore {
    private static let maxReportedMismatches = 100

    func verify() throws -> VerifyReport {
        try checkOpen()
        let snapshot = currentState()
        var report = VerifyReport()
        let cache = self.cache, storePath = path, files = snapshot.segments
        var replayer = Replayer { location in
            try PageFetch.terms(at: location, file: files[UInt64(location.segment)], cache: cache, storePath: storePath)
        }
        var expectedLSN: UInt64?
        for (position, entry) in snapshot.manifest.segments.enumerated() {
            guard let file = snapshot.segments[entry.id] else {
                report.problems.append(VerifyProblem(kind: .missingOrWrongLength, file: path + "/"
                                                     + Format.segmentFileName(entry.id), offset: nil,
                                                     detail: "segment named by the manifest is not open"))
                continue
            }
            let length = snapshot.visibleLength(of: file.id)
            report.segments += 1
            report.bytes += length
            let continuesCompaction = position > 0 && snapshot.manifest.segments[position - 1].continuedBy(entry)
            if let expected = expectedLSN, expected != file.header.firstLSN, !continuesCompaction {
                report.problems.append(VerifyProblem(kind: .corruption, file: file.path, offset: 32,
                                                     detail: "segment starts at LSN \(file.header.firstLSN), expected \(expected)"))
            }
            let compacted = entry.kind == .compacted
            if compacted != (file.header.kind == Format.segmentKindCompacted) {
                report.problems.append(VerifyProblem(kind: .corruption, file: file.path, offset: 48,
                                                     detail: "segment kind differs from the manifest's"))
            }
            do {
                if file.id != snapshot.activeSegment {
                    let size = try file.handle.size()
                    if size != length {
                        report.problems.append(VerifyProblem(kind: .missingOrWrongLength, file: file.path, offset: nil,
                                                             detail: "sealed segment is \(size) bytes; the manifest says \(length)"))
                    }
                }
                let next = try verifySegment(file, length: length, firstLSN: compacted ? 1 : file.header.firstLSN,
                                             into: &replayer, report: &report)
                if entry.sealed && entry.endLSN != 0 && !compacted && next != entry.endLSN {
                    report.problems.append(VerifyProblem(kind: .corruption, file: file.path, offset: length,
                                                         detail: "segment ends before LSN \(next); the manifest says \(entry.endLSN)"))
                }
                expectedLSN = compacted ? (entry.endLSN == 0 ? nil : entry.endLSN) : next
            } catch let error as LucidError {
                report.problems.append(VerifyProblem(kind: .io, file: file.path, offset: error.offset, detail: "\(error)"))
            }
        }
        report.records = replayer.records
        report.liveKeys = replayer.keyspaces.values.reduce(0) { $0 + $1.count }
        compareIndexes(live: snapshot.keyspaces, fromLog: replayer.keyspaces, report: &report)
        points.waitUntilBuilt()
        let pointProblems = state.read { published in points.checkInvariants(against: published) }
        for problem in pointProblems.prefix(Self.maxReportedMismatches) {
            report.problems.append(VerifyProblem(kind: .indexMismatch, file: path, offset: nil,
                                                 detail: "point index: \(problem)"))
        }
        return report
    }

    /// Verifies one segment up to `length`; applies complete groups to `replayer`. Returns the next LSN.
    private func verifySegment(_ file: SegmentFile, length: UInt64, firstLSN: UInt64, into replayer: inout Replayer,
                               report: inout VerifyReport) throws -> UInt64 {
        var scanner = SegmentScanner(file: file, limit: length)
        var lsn = firstLSN
        var pending: [(UInt64, PageHeader, PageBuffer)] = []
        while true {
            switch try scanner.next() {
            case .end:
                if !pending.isEmpty {
                    report.problems.append(VerifyProblem(kind: .corruption, file: file.path, offset: pending[0].0,
                                                         detail: "log ends inside a commit group"))
                }
                return lsn
            case .page(let offset, let header, let raw):
                report.pages += 1
                if header.lsn != lsn {
                    report.problems.append(VerifyProblem(kind: .corruption, file: file.path, offset: offset,
                                                         detail: "page has LSN \(header.lsn), expected \(lsn)"))
                    pending.removeAll()
                }
                if header.isGroupStart != pending.isEmpty {
                    report.problems.append(VerifyProblem(kind: .corruption, file: file.path, offset: offset,
                                                         detail: "page breaks commit-group framing"))
                    pending.removeAll()
                }
                lsn = header.lsn + 1
                pending.append((offset, header, raw))
                if header.isCommit {
                    for (o, h, r) in pending { try replayer.apply(page: r, header: h, segment: file.id, pageOffset: o) }
                    pending.removeAll(keepingCapacity: true)
                }
            case .invalid(let offset, let reason):
                report.problems.append(VerifyProblem(kind: .corruption, file: file.path, offset: offset, detail: reason))
                pending.removeAll()
                guard let next = try scanner.findValidPage(after: offset) else { return lsn }
                scanner.seek(to: next.offset)
            }
        }
    }

    private func compareIndexes(live: [String: KeyspaceState], fromLog: [String: KeyspaceState],
                                report: inout VerifyReport) {
        var mismatches = 0
        func compare<V: Equatable & Sendable>(_ index: BTree<V>, _ log: BTree<V>, what: String) {
            index.checkInvariants()
            if index.count != log.count {
                report.problems.append(VerifyProblem(kind: .indexMismatch, file: path, offset: nil,
                                                     detail: "\(what): the index has \(index.count) entries, the log \(log.count)"))
            }
            log.forEach(from: nil, to: nil, reverse: false) { key, value in
                if index.value(forKey: key) != value {
                    mismatches += 1
                    report.problems.append(VerifyProblem(kind: .indexMismatch, file: path, offset: nil,
                                                         detail: "\(what): entry \(Array(key).hexPreview) differs from the log"))
                }
                return mismatches < Self.maxReportedMismatches
            }
        }
        for name in Set(live.keys).union(fromLog.keys).sorted() {
            let index = live[name] ?? KeyspaceState()
            let log = fromLog[name] ?? KeyspaceState()
            compare(index.primary, log.primary, what: "keyspace \(name)")
            for indexName in Set(index.indexes.keys).union(log.indexes.keys).sorted() {
                compare(index.indexes[indexName] ?? BTree(), log.indexes[indexName] ?? BTree(),
                        what: "keyspace \(name) index \(indexName)")
            }
        }
    }
}

extension Array where Element == UInt8 {
    /// Up to 32 bytes as hex, for messages.
    var hexPreview: String {
        let hex = prefix(32).map { byte in
            let s = String(byte, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined()
        return count > 32 ? hex + "…" : hex
    }
}
