import Dispatch
import Foundation

/// Reads a checkpoint file back. Every count and length is bounded by the bytes present; any problem returns a
/// reason instead of a checkpoint, and the caller scans the log instead.
///
/// The header and the directory are read first; then the CRC of the whole file and every chunk (a run of one
/// tree's entries, coded on its own) are worked on as separate tasks, on every processor for a large file; then
/// each tree is assembled from its chunks' leaves (`BTree.assemble`). Nothing decoded is used unless the CRC and
/// every check pass.
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

    /// Decodes a whole checkpoint file. Requires at least `checkpointTrailerLength + 8` bytes (`load` checks).
    /// `parallel` (tests) forces the tasks onto several threads or onto the caller's alone.
    /// - Complexity: O(file size), spread over the processors when the file is 1 MiB or more.
    static func decode(_ raw: UnsafeRawBufferPointer, parallel: Bool? = nil) -> Result<Loaded, Rejection> {
        guard raw.count >= Format.checkpointTrailerLength + 8 else { return .failure(Rejection("too short")) }
        let bodyEnd = raw.count - Format.checkpointTrailerLength
        var trailer = ByteReader(raw, offset: bodyEnd)
        guard let length = trailer.u64(), length == UInt64(bodyEnd), let stored = trailer.u32() else {
            return .failure(Rejection("trailer length does not match the file"))
        }
        // The directory's position is the last field before the trailer.
        let footer = bodyEnd - 8
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: raw[0..<footer]))
        let header: CheckpointHeader
        switch decodeHeader(&r) {
        case .success(let decoded): header = decoded
        case .failure(let rejection): return .failure(rejection)
        }
        var footerReader = ByteReader(raw, offset: footer)
        guard let directoryOffset = footerReader.u64(), directoryOffset >= UInt64(r.offset),
              directoryOffset <= UInt64(footer) else { return .failure(Rejection("malformed directory position")) }
        let directory: Directory
        switch Directory.decode(UnsafeRawBufferPointer(rebasing: raw[Int(directoryOffset)..<footer]),
                                chunksFrom: r.offset, to: Int(directoryOffset)) {
        case .success(let decoded): directory = decoded
        case .failure(let rejection): return .failure(rejection)
        }

        let work = Work(raw: raw, checkedLength: bodyEnd + 8, storedCRC: stored, chunks: directory.chunks,
                        lastSequence: header.lastSequence,
                        segmentIds: Set(header.segments.map { UInt32(truncatingIfNeeded: $0.id) }))
        let worthThreads = processors > 1 && directory.chunks.count > 1 && raw.count >= 1 << 20
        let outputs = work.run(parallel: parallel ?? worthThreads)
        guard work.checksumMatches(outputs) else { return .failure(Rejection("checksum mismatch")) }
        for output in outputs.dropFirst() {
            if case .failure(let rejection) = output { return .failure(rejection) }
        }

        var keyspaces: [String: KeyspaceState] = [:]
        for keyspace in directory.keyspaces {
            var state = KeyspaceState()
            let primaryRuns = keyspace.primaryChunks.map { outputs[$0 + 1].primaryRun }
            guard let primary = BTree<RecordLocation>.assemble(primaryRuns) else {
                return .failure(Rejection("keys out of order between chunks"))
            }
            state.primary = primary
            for index in keyspace.indexes {
                guard let tree = BTree<UInt16>.assemble(index.chunks.map { outputs[$0 + 1].indexRun }) else {
                    return .failure(Rejection("index entries out of order between chunks"))
                }
                state.indexes[index.name] = tree
            }
            keyspaces[keyspace.name] = state
        }
        return .success(Loaded(header: header, keyspaces: keyspaces))
    }

    private static let processors = ProcessInfo.processInfo.activeProcessorCount

    /// Magic, version, covered position and the segment list, leaving `r` just past them.
    private static func decodeHeader(_ r: inout ByteReader) -> Result<CheckpointHeader, Rejection> {
        guard r.bytes(8) == Format.checkpointMagic else { return .failure(Rejection("bad magic")) }
        guard let version = r.u32() else { return .failure(Rejection("malformed header")) }
        guard version == Format.checkpointVersion else {
            return .failure(Rejection("checkpoint version \(version), not \(Format.checkpointVersion)"))
        }
        guard let coveredSegment = r.u64(), let coveredOffset = r.u64(), let nextLSN = r.u64(),
              let lastSequence = r.u64(), let segmentCount = r.u32(), Int(segmentCount) <= r.remaining / 24
        else { return .failure(Rejection("malformed header")) }
        var segments: [CheckpointHeader.SegmentIdentity] = []
        segments.reserveCapacity(Int(segmentCount))
        for _ in 0..<segmentCount {
            segments.append(.init(id: r.u64()!, salt: r.u64()!, firstLSN: r.u64()!))
        }
        return .success(CheckpointHeader(coveredSegment: coveredSegment, coveredOffset: coveredOffset,
                                         nextLSN: nextLSN, lastSequence: lastSequence, segments: segments))
    }
}
