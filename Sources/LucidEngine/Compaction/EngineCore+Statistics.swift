extension EngineCore {
    /// See ``Engine/storeStatistics()``.
    func storeStatistics() throws -> StoreStatistics {
        try checkOpen()
        let s = currentState()
        // Live records per page.
        var live: [UInt64: [UInt32: Int]] = [:]
        var keyspaces: [KeyspaceStatistics] = []
        for name in s.keyspaces.keys.sorted() {
            let keyspace = s.keyspaces[name]!
            guard !keyspace.isEmpty || keyspace.hasIndexEntries else { continue }
            keyspace.primary.forEach { key, location in
                live[UInt64(location.segment), default: [:]][location.pageOffset, default: 0] += 1
                return true
            }
            keyspaces.append(KeyspaceStatistics(
                name: name, records: keyspace.count,
                indexes: keyspace.indexes.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
                    .map { IndexStatistics(name: $0.key, entries: $0.value.count) }))
        }
        var segments: [SegmentStatistics] = []
        var rawTotal: UInt64 = 0, storedTotal: UInt64 = 0
        for entry in s.manifest.segments {
            guard let file = s.segments[entry.id] else { continue }
            let length = s.visibleLength(of: entry.id)
            var stats = SegmentStatistics(id: entry.id, fileName: Format.segmentFileName(entry.id),
                                          kind: entry.kind == .log ? .log : .compacted, sealed: entry.sealed,
                                          bytes: length, pages: 0, records: 0, liveRecords: 0, liveBytes: 0,
                                          deadBytes: 0)
            let pages = live[entry.id] ?? [:]
            var liveBytes = 0.0
            var dictionaryBytes: UInt64 = 0
            var offset = UInt64(Format.segmentHeaderLength)
            while offset + UInt64(Format.pageHeaderLength) <= length {
                let bytes = try file.handle.read(at: offset, count: Format.pageHeaderLength)
                guard bytes.count == Format.pageHeaderLength,
                      case .success(let header) = bytes.withUnsafeBytes({
                          PageHeader.decode($0, expectedSalt: file.header.pageSalt,
                                            bytesAvailable: length - offset - UInt64(Format.pageHeaderLength))
                      }) else { break }
                let pageBytes = UInt64(Format.pageHeaderLength) + UInt64(header.storedLength)
                stats.pages += 1
                stats.records += Int(header.recordCount)
                rawTotal += UInt64(header.rawLength)
                storedTotal += UInt64(header.storedLength)
                if header.type == Format.pageTypeDictionary {
                    // Live while a record compressed against it is (below).
                    dictionaryBytes += pageBytes
                } else if let p = pages[UInt32(truncatingIfNeeded: offset)] {
                    stats.liveRecords += p
                    // The share of the page's records that are live (terms and per-record overhead are not in
                    // the index, so a byte share would undercount records with index terms).
                    let share = header.recordCount == 0 ? 1 : min(1, Double(p) / Double(header.recordCount))
                    liveBytes += Double(pageBytes) * share
                }
                offset += pageBytes
            }
            if stats.liveRecords > 0 { liveBytes += Double(dictionaryBytes) }
            stats.liveBytes = min(length, UInt64(liveBytes.rounded()))
            stats.deadBytes = length - stats.liveBytes
            segments.append(stats)
        }
        var size = segments.reduce(0) { $0 + $1.bytes }
        for name in Format.manifestSlotNames + [Format.checkpointFileName] {
            let filePath = path + "/" + name
            guard fileSystem.fileExists(at: filePath), let handle = try? fileSystem.openFile(at: filePath, mode: .readOnly)
            else { continue }
            size += (try? handle.size()) ?? 0
            try? handle.close()
        }
        let liveBytes = segments.reduce(0) { $0 + $1.liveBytes }
        return StoreStatistics(formatVersion: Format.formatVersion, sizeBytes: size, liveBytes: liveBytes,
                               deadBytes: segments.reduce(0) { $0 + $1.deadBytes },
                               compressionRatio: storedTotal == 0 ? 1 : Double(rawTotal) / Double(storedTotal),
                               segments: segments, keyspaces: keyspaces)
    }
}
