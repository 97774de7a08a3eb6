import Dispatch

extension CheckpointLoader {
    /// What one task of a load produced: task 0 checks the file's CRC, task `i + 1` decodes chunk `i`.
    enum TaskOutput: @unchecked Sendable {
        // `@unchecked`: a run's leaves are fresh nodes only this output reaches until the tree is assembled.
        case pending
        case checksum(matches: Bool)
        case primary(BTree<RecordLocation>.LeafRun)
        case index(BTree<UInt16>.LeafRun)
        case failure(Rejection)

        /// The primary chunk's leaves; only called once every output is known to be a success.
        var primaryRun: BTree<RecordLocation>.LeafRun {
            guard case .primary(let run) = self else { preconditionFailure("CheckpointLoader: not a primary chunk") }
            return run
        }

        /// The index chunk's leaves; only called once every output is known to be a success.
        var indexRun: BTree<UInt16>.LeafRun {
            guard case .index(let run) = self else { preconditionFailure("CheckpointLoader: not an index chunk") }
            return run
        }
    }

    /// The tasks of one load and what they read. Every task only reads the file's bytes and these fields, and
    /// writes its own output slot.
    struct Work: @unchecked Sendable {
        // `@unchecked`: `raw` is the caller's file, valid and unchanged for the whole of `run` (see above).
        let raw: UnsafeRawBufferPointer
        /// How many bytes the CRC covers (everything before it) and the stored, masked CRC.
        let checkedLength: Int
        let storedCRC: UInt32
        let chunks: [Directory.Chunk]
        let lastSequence: UInt64
        let segmentIds: Set<UInt32>

        /// Runs every task, on `DispatchQueue.concurrentPerform`'s threads when `parallel`, and returns their
        /// outputs. Serially, the CRC is checked first and nothing is decoded when it fails.
        func run(parallel: Bool) -> [TaskOutput] {
            var outputs = [TaskOutput](repeating: .pending, count: chunks.count + 1)
            outputs.withUnsafeMutableBufferPointer { slots in
                let slots = Slots(base: slots)
                if parallel {
                    DispatchQueue.concurrentPerform(iterations: slots.base.count) { slots.base[$0] = task($0) }
                } else {
                    for i in 0..<slots.base.count {
                        slots.base[i] = task(i)
                        if i == 0, case .checksum(false) = slots.base[0] { break }
                    }
                }
            }
            return outputs
        }

        /// Whether task 0 found the stored CRC.
        func checksumMatches(_ outputs: [TaskOutput]) -> Bool {
            if case .checksum(true) = outputs[0] { return true }
            return false
        }

        private func task(_ i: Int) -> TaskOutput {
            if i == 0 {
                let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<checkedLength]))
                return .checksum(matches: CRC32C.mask(crc) == storedCRC)
            }
            let chunk = chunks[i - 1]
            let bytes = UnsafeRawBufferPointer(rebasing: raw[chunk.range])
            if chunk.isPrimary {
                switch decodePrimary(bytes, entries: chunk.entries) {
                case .success(let run): return .primary(run)
                case .failure(let rejection): return .failure(rejection)
                }
            }
            switch decodeIndex(bytes, entries: chunk.entries) {
            case .success(let run): return .index(run)
            case .failure(let rejection): return .failure(rejection)
            }
        }

        /// A primary chunk: each prefix-coded key, then its location; exactly `entries` of them fill `bytes`.
        private func decodePrimary(_ bytes: UnsafeRawBufferPointer,
                                   entries: Int) -> Result<BTree<RecordLocation>.LeafRun, Rejection> {
            var r = ByteReader(bytes)
            var builder = BTree<RecordLocation>.Builder()
            // No key of the chunk is longer than the chunk (each of its bytes was read from it).
            var keys = PrefixDecoder(maxLength: min(Format.maxKeyLength, bytes.count))
            // Consecutive entries mostly share a segment: look the id up only when it changes.
            var knownSegment: UInt64 = .max
            for _ in 0..<entries {
                guard let (key, sameSegment, ascending) = keys.next(&r), !sameSegment || knownSegment != .max,
                      let segment = sameSegment ? knownSegment : r.varint(), segment <= UInt64(UInt32.max),
                      segment == knownSegment || segmentIds.contains(UInt32(segment)),
                      let pageOffset = r.varint(), pageOffset <= UInt64(UInt32.max),
                      let valueOffset = r.varint(), valueOffset <= UInt64(Format.maxRawPageLength),
                      let lengthAndFlag = r.varint(), lengthAndFlag >> 1 <= UInt64(Format.maxValueLength),
                      let sequence = r.varint(), sequence <= lastSequence
                else { return .failure(Rejection("malformed primary entry")) }
                guard ascending else { return .failure(Rejection("keys out of order")) }
                knownSegment = segment
                let location = RecordLocation(segment: UInt32(segment), pageOffset: UInt32(pageOffset),
                                              valueOffset: UInt32(valueOffset), valueLength: UInt32(lengthAndFlag >> 1),
                                              hasTerms: lengthAndFlag & 1 == 1, sequence: sequence)
                builder.appendAscending(key, location)
            }
            guard r.isAtEnd else { return .failure(Rejection("primary chunk longer than its entries")) }
            return .success(builder.leafRun())
        }

        /// An index chunk: each prefix-coded entry (term ‖ primary key), then its term length when it changes.
        private func decodeIndex(_ bytes: UnsafeRawBufferPointer,
                                 entries: Int) -> Result<BTree<UInt16>.LeafRun, Rejection> {
            var r = ByteReader(bytes)
            var builder = BTree<UInt16>.Builder()
            var decoder = PrefixDecoder(maxLength: min(Format.maxIndexTermLength + Format.maxKeyLength, bytes.count))
            var knownTermLength: Int?
            for _ in 0..<entries {
                guard let (entry, sameTermLength, ascending) = decoder.next(&r),
                      let termLength = sameTermLength ? knownTermLength : r.length(max: Format.maxIndexTermLength),
                      termLength <= entry.count
                else { return .failure(Rejection("malformed index entry")) }
                guard ascending else { return .failure(Rejection("index entries out of order")) }
                knownTermLength = termLength
                builder.appendAscending(entry, UInt16(termLength))
            }
            guard r.isAtEnd else { return .failure(Rejection("index chunk longer than its entries")) }
            return .success(builder.leafRun())
        }
    }

    /// The output slots, shared by the tasks that each write one of them.
    private struct Slots: @unchecked Sendable {
        // `@unchecked`: task `i` writes `base[i]` only, and the buffer outlives `concurrentPerform`.
        let base: UnsafeMutableBufferPointer<TaskOutput>
    }
}
