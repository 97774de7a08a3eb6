extension CheckpointLoader {
    /// A checkpoint's directory (docs/FORMAT.md, "Checkpoint"): every keyspace and index by name, each tree as a
    /// list of chunks. Chunks lie back to back in the order the directory lists them, from the end of the header
    /// to the start of the directory, so every byte between is one chunk's.
    struct Directory {
        /// One run of a tree's entries, coded on its own.
        struct Chunk: Sendable {
            /// The chunk's bytes in the file.
            var range: Range<Int>
            /// How many entries it holds (at least 1, at most its byte length).
            var entries: Int
            /// Whether it holds primary entries (else index entries).
            var isPrimary: Bool
        }

        struct Keyspace {
            var name: String
            /// Positions of the primary tree's chunks in ``Directory/chunks``.
            var primaryChunks: Range<Int>
            var indexes: [(name: String, chunks: Range<Int>)]
        }

        var keyspaces: [Keyspace] = []
        var chunks: [Chunk] = []

        /// Reads the directory in `bytes` (it must end exactly there), whose chunks must fill
        /// `chunksStart ..< chunksEnd` of the file. Allocates by the directory's length, never by a count in it.
        static func decode(_ bytes: UnsafeRawBufferPointer, chunksFrom chunksStart: Int,
                           to chunksEnd: Int) -> Result<Directory, Rejection> {
            var d = ByteReader(bytes)
            var directory = Directory()
            var position = chunksStart
            /// A tree's chunk count, then each chunk's byte length and entry count.
            func readChunks(primary: Bool) -> Range<Int>? {
                // A listed chunk takes at least 2 bytes (two varints).
                guard let count = d.u32(), Int(count) <= d.remaining / 2 else { return nil }
                let first = directory.chunks.count
                for _ in 0..<count {
                    guard let length = d.length(max: chunksEnd - position), let entries = d.varint(),
                          entries >= 1, entries <= UInt64(length) else { return nil }
                    directory.chunks.append(Chunk(range: position..<(position + length), entries: Int(entries),
                                                  isPrimary: primary))
                    position += length
                }
                return first..<directory.chunks.count
            }
            guard let keyspaceCount = d.u32(), Int(keyspaceCount) <= d.remaining else {
                return .failure(Rejection("malformed keyspace count"))
            }
            var names = Set<String>()
            for _ in 0..<keyspaceCount {
                guard let nameLength = d.length(max: Format.maxKeyspaceNameLength), nameLength >= 1,
                      let nameBytes = d.slice(nameLength), let name = String(validating: nameBytes, as: UTF8.self),
                      names.insert(name).inserted, let primaryChunks = readChunks(primary: true)
                else { return .failure(Rejection("malformed keyspace")) }
                guard let indexCount = d.u32(), Int(indexCount) <= d.remaining else {
                    return .failure(Rejection("malformed index count"))
                }
                var keyspace = Keyspace(name: name, primaryChunks: primaryChunks, indexes: [])
                var indexNames = Set<String>()
                for _ in 0..<indexCount {
                    guard let indexNameLength = d.length(max: Format.maxIndexNameLength), indexNameLength >= 1,
                          let indexNameBytes = d.slice(indexNameLength),
                          let indexName = String(validating: indexNameBytes, as: UTF8.self),
                          indexNames.insert(indexName).inserted, let chunks = readChunks(primary: false)
                    else { return .failure(Rejection("malformed index")) }
                    keyspace.indexes.append((indexName, chunks))
                }
                directory.keyspaces.append(keyspace)
            }
            guard d.isAtEnd else { return .failure(Rejection("trailing bytes in the directory")) }
            guard position == chunksEnd else {
                return .failure(Rejection("chunks do not fill the space before the directory"))
            }
            return .success(directory)
        }
    }
}
