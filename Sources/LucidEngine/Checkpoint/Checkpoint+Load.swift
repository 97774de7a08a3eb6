/// Reads a checkpoint file back. Every count and length is bounded by the bytes present; any problem returns a
/// reason instead of a checkpoint, and the caller scans the log instead.
enum CheckpointLoader {
    struct Loaded {
        var header: CheckpointHeader
        var keyspaces: [String: KeyspaceState]
    }

    static func load(directory: String, fileSystem: any FileSystem) -> Result<Loaded, Rejection> {
        let path = directory + "/" + Format.checkpointFileName
        guard fileSystem.fileExists(at: path) else { return .failure(Rejection("no checkpoint")) }
        do {
            let handle = try fileSystem.openFile(at: path, mode: .readOnly)
            defer { try? handle.close() }
            let size = try handle.size()
            guard size >= UInt64(Format.checkpointTrailerLength + 8), size <= UInt64(Int.max / 2) else {
                return .failure(Rejection("checkpoint of \(size) bytes"))
            }
            if let mappable = handle as? MappableFileHandle {
                return try mappable.withMappedBytes(count: Int(size)) { decode($0) }
            }
            let bytes = try handle.read(at: 0, count: Int(size))
            guard bytes.count == Int(size) else { return .failure(Rejection("short read")) }
            return bytes.withUnsafeBytes { decode($0) }
        } catch {
            return .failure(Rejection("unreadable: \(error)"))
        }
    }

    struct Rejection: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func decode(_ raw: UnsafeRawBufferPointer) -> Result<Loaded, Rejection> {
        guard raw.count >= Format.checkpointTrailerLength + 8 else { return .failure(Rejection("too short")) }
        let bodyEnd = raw.count - Format.checkpointTrailerLength
        var trailer = ByteReader(raw, offset: bodyEnd)
        guard let length = trailer.u64(), length == UInt64(bodyEnd), let stored = trailer.u32() else {
            return .failure(Rejection("trailer length does not match the file"))
        }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<(bodyEnd + 8)]))
        guard CRC32C.mask(crc) == stored else { return .failure(Rejection("checksum mismatch")) }
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: raw[0..<bodyEnd]))
        guard r.bytes(8) == Format.checkpointMagic else { return .failure(Rejection("bad magic")) }
        guard let version = r.u32() else { return .failure(Rejection("malformed header")) }
        guard version == Format.checkpointVersion else {
            return .failure(Rejection("checkpoint version \(version), not \(Format.checkpointVersion)"))
        }
        guard let coveredSegment = r.u64(), let coveredOffset = r.u64(), let nextLSN = r.u64(),
              let lastSequence = r.u64(), let segmentCount = r.u32(), Int(segmentCount) <= r.remaining / 24
        else { return .failure(Rejection("malformed header")) }
        var segments: [CheckpointHeader.SegmentIdentity] = []
        for _ in 0..<segmentCount {
            segments.append(.init(id: r.u64()!, salt: r.u64()!, firstLSN: r.u64()!))
        }
        let segmentIds = Set(segments.map { UInt32(truncatingIfNeeded: $0.id) })
        guard let keyspaceCount = r.u32(), Int(keyspaceCount) <= r.remaining else {
            return .failure(Rejection("malformed keyspace count"))
        }
        var keyspaces: [String: KeyspaceState] = [:]
        for _ in 0..<keyspaceCount {
            guard let nameLength = r.length(max: Format.maxKeyspaceNameLength), nameLength >= 1,
                  let nameBytes = r.slice(nameLength), let name = String(validating: nameBytes, as: UTF8.self),
                  keyspaces[name] == nil, let count = r.u64(), count <= UInt64(r.remaining) else {
                return .failure(Rejection("malformed keyspace"))
            }
            var state = KeyspaceState()
            switch decodePrimary(&r, count: Int(count), lastSequence: lastSequence, segmentIds: segmentIds) {
            case .success(let primary): state.primary = primary
            case .failure(let rejection): return .failure(rejection)
            }
            guard let indexCount = r.u32(), Int(indexCount) <= r.remaining else {
                return .failure(Rejection("malformed index count"))
            }
            var sections: [IndexSection] = []
            var sectionNames = Set<String>()
            for _ in 0..<indexCount {
                guard let indexNameLength = r.length(max: Format.maxIndexNameLength), indexNameLength >= 1,
                      let indexNameBytes = r.slice(indexNameLength),
                      let indexName = String(validating: indexNameBytes, as: UTF8.self),
                      sectionNames.insert(indexName).inserted,
                      let entries = r.u64(), let byteLength = r.u64(), byteLength <= UInt64(r.remaining),
                      entries <= byteLength / 3, let bytes = r.slice(Int(byteLength))
                else { return .failure(Rejection("malformed index")) }
                sections.append(IndexSection(name: indexName, count: Int(entries), bytes: bytes))
            }
            switch decodeIndexes(sections) {
            case .success(let trees): state.indexes = trees
            case .failure(let rejection): return .failure(rejection)
            }
            keyspaces[name] = state
        }
        guard r.isAtEnd else { return .failure(Rejection("trailing bytes")) }
        let header = CheckpointHeader(coveredSegment: coveredSegment, coveredOffset: coveredOffset,
                                      nextLSN: nextLSN, lastSequence: lastSequence, segments: segments)
        return .success(Loaded(header: header, keyspaces: keyspaces))
    }

    /// A keyspace's primary entries: each key as the length it shares with the previous one and the rest, then
    /// its location.
    private static func decodePrimary(_ r: inout ByteReader, count: Int, lastSequence: UInt64,
                                      segmentIds: Set<UInt32>) -> Result<BTree<RecordLocation>, Rejection> {
        var builder = BTree<RecordLocation>.Builder()
        var key: [UInt8] = []
        // Consecutive entries mostly share a segment: look the id up only when it changes.
        var knownSegment: UInt64 = .max
        for _ in 0..<count {
            guard let shared = r.length(max: key.count), let suffixLength = r.length(max: Format.maxKeyLength - shared),
                  let suffix = r.slice(suffixLength),
                  let segment = r.varint(), segment <= UInt64(UInt32.max),
                  segment == knownSegment || segmentIds.contains(UInt32(segment)),
                  let pageOffset = r.varint(), pageOffset <= UInt64(UInt32.max),
                  let valueOffset = r.varint(), valueOffset <= UInt64(Format.maxRawPageLength),
                  let lengthAndFlag = r.varint(), lengthAndFlag >> 1 <= UInt64(Format.maxValueLength),
                  let sequence = r.varint(), sequence <= lastSequence
            else { return .failure(Rejection("malformed primary entry")) }
            knownSegment = segment
            key.removeLast(key.count - shared)
            key.append(contentsOf: suffix.assumingMemoryBound(to: UInt8.self))
            let location = RecordLocation(segment: UInt32(segment), pageOffset: UInt32(pageOffset),
                                          valueOffset: UInt32(valueOffset), valueLength: UInt32(lengthAndFlag >> 1),
                                          hasTerms: lengthAndFlag & 1 == 1, sequence: sequence)
            guard builder.append(key, location) else { return .failure(Rejection("keys out of order")) }
        }
        return .success(builder.build())
    }

    /// One index of a keyspace: its name, entry count and the bytes of its entries (a view into the checkpoint).
    struct IndexSection {
        var name: String
        var count: Int
        var bytes: UnsafeRawBufferPointer
    }

    /// Every index section of a keyspace (each its own byte range, which its entries must fill exactly; an entry
    /// takes at least 3 bytes). Rejected when any section is. The sections are independent, so a loader may decode
    /// them in parallel; this one does not (measured at 1M records with two indexes on 2 cores: no gain).
    private static func decodeIndexes(_ sections: [IndexSection]) -> Result<[String: BTree<UInt16>], Rejection> {
        var trees: [String: BTree<UInt16>] = [:]
        for section in sections {
            var reader = ByteReader(section.bytes)
            switch decodeIndex(&reader, count: section.count) {
            case .success(let tree):
                guard reader.isAtEnd else { return .failure(Rejection("index section longer than its entries")) }
                trees[section.name] = tree
            case .failure(let rejection):
                return .failure(rejection)
            }
        }
        return .success(trees)
    }

    /// An index's entries: each as the length it shares with the previous entry and the rest, then its term
    /// length.
    private static func decodeIndex(_ r: inout ByteReader, count: Int) -> Result<BTree<UInt16>, Rejection> {
        var builder = BTree<UInt16>.Builder()
        // The entry being decoded, sized for the longest term and key, so that it never reallocates.
        let maxLength = Format.maxIndexTermLength + Format.maxKeyLength
        let entry = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength, alignment: 1)
        defer { entry.deallocate() }
        var length = 0
        for _ in 0..<count {
            guard let shared = r.length(max: length), let suffixLength = r.length(max: maxLength - shared),
                  let suffix = r.slice(suffixLength),
                  let termLength = r.length(max: min(shared + suffixLength, Format.maxIndexTermLength))
            else { return .failure(Rejection("malformed index entry")) }
            if suffixLength > 0 {
                UnsafeMutableRawBufferPointer(rebasing: entry[shared..<(shared + suffixLength)]).copyMemory(from: suffix)
            }
            length = shared + suffixLength
            guard builder.append(UnsafeRawBufferPointer(rebasing: entry[0..<length]), UInt16(termLength)) else {
                return .failure(Rejection("index entries out of order"))
            }
        }
        return .success(builder.build())
    }
}
