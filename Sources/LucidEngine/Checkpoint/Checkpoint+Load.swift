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
            for _ in 0..<indexCount {
                // An index entry takes at least 2 bytes: its head, and a byte of its own (entries are strictly
                // increasing) or, for an empty first entry, its term length.
                guard let indexNameLength = r.length(max: Format.maxIndexNameLength), indexNameLength >= 1,
                      let indexNameBytes = r.slice(indexNameLength),
                      let indexName = String(validating: indexNameBytes, as: UTF8.self), state.indexes[indexName] == nil,
                      let entries = r.u64(), entries <= UInt64(r.remaining / 2)
                else { return .failure(Rejection("malformed index")) }
                switch decodeIndex(&r, count: Int(entries)) {
                case .success(let tree): state.indexes[indexName] = tree
                case .failure(let rejection): return .failure(rejection)
                }
            }
            keyspaces[name] = state
        }
        guard r.isAtEnd else { return .failure(Rejection("trailing bytes")) }
        let header = CheckpointHeader(coveredSegment: coveredSegment, coveredOffset: coveredOffset,
                                      nextLSN: nextLSN, lastSequence: lastSequence, segments: segments)
        return .success(Loaded(header: header, keyspaces: keyspaces))
    }

    /// A keyspace's primary entries: each prefix-coded key, then its location.
    private static func decodePrimary(_ r: inout ByteReader, count: Int, lastSequence: UInt64,
                                      segmentIds: Set<UInt32>) -> Result<BTree<RecordLocation>, Rejection> {
        var builder = BTree<RecordLocation>.Builder()
        var keys = PrefixDecoder(maxLength: Format.maxKeyLength)
        // Consecutive entries mostly share a segment: look the id up only when it changes.
        var knownSegment: UInt64 = .max
        for _ in 0..<count {
            guard let (key, sameSegment) = keys.next(&r), !sameSegment || knownSegment != .max,
                  let segment = sameSegment ? knownSegment : r.varint(), segment <= UInt64(UInt32.max),
                  segment == knownSegment || segmentIds.contains(UInt32(segment)),
                  let pageOffset = r.varint(), pageOffset <= UInt64(UInt32.max),
                  let valueOffset = r.varint(), valueOffset <= UInt64(Format.maxRawPageLength),
                  let lengthAndFlag = r.varint(), lengthAndFlag >> 1 <= UInt64(Format.maxValueLength),
                  let sequence = r.varint(), sequence <= lastSequence
            else { return .failure(Rejection("malformed primary entry")) }
            knownSegment = segment
            let location = RecordLocation(segment: UInt32(segment), pageOffset: UInt32(pageOffset),
                                          valueOffset: UInt32(valueOffset), valueLength: UInt32(lengthAndFlag >> 1),
                                          hasTerms: lengthAndFlag & 1 == 1, sequence: sequence)
            guard builder.append(key, location) else { return .failure(Rejection("keys out of order")) }
        }
        return .success(builder.build())
    }

    /// An index's entries (term ‖ primary key): each prefix-coded entry, then its term length.
    private static func decodeIndex(_ r: inout ByteReader, count: Int) -> Result<BTree<UInt16>, Rejection> {
        var builder = BTree<UInt16>.Builder()
        var entries = PrefixDecoder(maxLength: Format.maxIndexTermLength + Format.maxKeyLength)
        var knownTermLength: Int?
        for _ in 0..<count {
            guard let (entry, sameTermLength) = entries.next(&r),
                  let termLength = sameTermLength ? knownTermLength : r.length(max: Format.maxIndexTermLength),
                  termLength <= entry.count
            else { return .failure(Rejection("malformed index entry")) }
            knownTermLength = termLength
            guard builder.append(entry, UInt16(termLength)) else {
                return .failure(Rejection("index entries out of order"))
            }
        }
        return .success(builder.build())
    }
}
