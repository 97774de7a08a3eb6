import Testing
import LucidEngineTestSupport
@_spi(Fuzzing) @testable import LucidEngine

/// Checkpoint version 5 stores each tree as chunks coded on their own, listed by a directory at the end, so that
/// open decodes them on several threads. Whatever the chunking, a checkpoint loads to the trees it was written
/// from; a directory or chunk that does not add up is rejected.
@Suite("Checkpoint chunks")
struct CheckpointChunkTests {
    /// A keyspace of `count` records with keys of 1 to 40 bytes (long shared prefixes among them) and two indexes.
    static func keyspace(count: Int, seed: UInt64) -> KeyspaceState {
        var rng = SplitMix64(seed: seed)
        var state = KeyspaceState()
        var genre = BTree<UInt16>()
        var rating = BTree<UInt16>()
        while state.primary.count < count {
            let length = Int.random(in: 1...40, using: &rng)
            let key = (0..<length).map { _ in UInt8.random(in: 0...3, using: &rng) * 60 }
            if state.primary.value(forKey: key) != nil { continue }
            let location = RecordLocation(segment: UInt32.random(in: 1...3, using: &rng),
                                          pageOffset: UInt32.random(in: 0...1 << 20, using: &rng),
                                          valueOffset: UInt32.random(in: 0...4000, using: &rng),
                                          valueLength: UInt32.random(in: 0...300, using: &rng),
                                          hasTerms: true, sequence: UInt64.random(in: 1...1000, using: &rng))
            state.primary.updateValue(location, forKey: key)
            let term = Array(["scifi", "essay", "poetry", ""][Int.random(in: 0...3, using: &rng)].utf8)
            genre.updateValue(UInt16(term.count), forKey: term + key)
            let stars = [UInt8.random(in: 0...5, using: &rng)]
            rating.updateValue(1, forKey: stars + key)
        }
        state.indexes = ["genre": genre, "rating": rating]
        return state
    }

    static let header = CheckpointHeader(
        coveredSegment: 3, coveredOffset: 4096, nextLSN: 77, lastSequence: 1000,
        segments: (1...3).map { .init(id: UInt64($0), salt: UInt64($0) * 11, firstLSN: UInt64($0) * 5) })

    /// The file `CheckpointWriter` writes for `keyspaces` in chunks of `chunkEntries`.
    static func written(_ keyspaces: [String: KeyspaceState], chunkEntries: Int) throws -> [UInt8] {
        let fs = FaultFileSystem()
        try fs.createDirectory(at: "/c")
        try CheckpointWriter(directory: "/c", fileSystem: fs, chunkEntries: chunkEntries)
            .write(header: header, keyspaces: keyspaces)
        return try #require(fs.bytes(of: "/c/CHECKPOINT"))
    }

    static func entries<V>(_ tree: BTree<V>) -> [([UInt8], V)] {
        var out: [([UInt8], V)] = []
        tree.forEach(from: nil, to: nil, reverse: false) { key, value in out.append((Array(key), value)); return true }
        return out
    }

    static func decode(_ bytes: [UInt8], parallel: Bool) -> Result<CheckpointLoader.Loaded, CheckpointLoader.Rejection> {
        bytes.withUnsafeBytes { CheckpointLoader.decode($0, parallel: parallel) }
    }

    @Test("any chunking loads the trees it was written from, on one thread or several",
          arguments: [1, 2, 7, 56, 57, 64, 500, 65_536])
    func anyChunking(chunkEntries: Int) throws {
        let keyspaces = ["books": Self.keyspace(count: 3_000, seed: 1), "tiny": Self.keyspace(count: 3, seed: 2),
                         "empty": KeyspaceState()]
        let bytes = try Self.written(keyspaces, chunkEntries: chunkEntries)
        for parallel in [false, true] {
            let loaded = try Self.decode(bytes, parallel: parallel).get()
            #expect(loaded.header == Self.header)
            #expect(Set(loaded.keyspaces.keys) == Set(keyspaces.keys))
            for (name, expected) in keyspaces {
                let state = try #require(loaded.keyspaces[name])
                state.primary.checkInvariants()
                #expect(state.primary.count == expected.primary.count)
                #expect(Self.entries(state.primary).elementsEqual(Self.entries(expected.primary)) { $0 == $1 },
                        "\(name), chunks of \(chunkEntries), parallel \(parallel)")
                // Empty indexes are not written.
                #expect(Set(state.indexes.keys) == Set(expected.indexes.filter { !$0.value.isEmpty }.keys))
                for (indexName, tree) in state.indexes {
                    tree.checkInvariants()
                    #expect(Self.entries(tree).elementsEqual(Self.entries(expected.indexes[indexName]!)) { $0 == $1 },
                            "\(name)/\(indexName), chunks of \(chunkEntries), parallel \(parallel)")
                }
            }
        }
    }

    @Test("chunks are listed by the directory: a checkpoint of 3,000 records in chunks of 500 has 6 per tree")
    func directoryListsChunks() throws {
        let bytes = try Self.written(["books": Self.keyspace(count: 3_000, seed: 3)], chunkEntries: 500)
        let footer = bytes.count - Format.checkpointTrailerLength - 8
        let directoryOffset = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: footer, as: UInt64.self)) }
        let headerEnd = 8 + 4 + 32 + 4 + 3 * 24
        let directory = try bytes.withUnsafeBytes {
            try CheckpointLoader.Directory.decode(UnsafeRawBufferPointer(rebasing: $0[directoryOffset..<footer]),
                                                  chunksFrom: headerEnd, to: directoryOffset).get()
        }
        #expect(directory.keyspaces.map(\.name) == ["books"])
        #expect(directory.keyspaces[0].primaryChunks.count == 6)
        #expect(directory.keyspaces[0].indexes.map(\.name) == ["genre", "rating"])
        #expect(directory.keyspaces[0].indexes.map(\.chunks.count) == [6, 6])
        #expect(directory.chunks.map(\.entries) == Array(repeating: 500, count: 18))
        #expect(directory.chunks.first?.range.lowerBound == headerEnd)
        #expect(directory.chunks.last?.range.upperBound == directoryOffset)
    }

    // MARK: - Files built by hand

    /// A primary entry as the writer codes it, sharing `shared` bytes with `previous` (the writer shares all it
    /// can; a smaller value makes a file the writer never writes), in segment 1.
    static func entry(_ key: [UInt8], after previous: [UInt8]?, shared: Int? = nil, to w: inout ByteWriter) {
        let common = zip(previous ?? [], key).prefix { $0 == $1 }.count
        let shared = shared ?? common
        let sameLength = previous != nil && previous!.count == key.count
        let sameSegment = previous != nil
        w.varint(UInt64(shared) << 2 | (sameLength ? 2 : 0) | (sameSegment ? 1 : 0))
        if !sameLength { w.varint(key.count - shared) }
        w.raw(Array(key[shared...]))
        if !sameSegment { w.varint(UInt64(1)) }
        w.varint(UInt64(0))       // page offset
        w.varint(UInt64(16))      // value offset
        w.varint(UInt64(5) << 1)  // value length, no terms
        w.varint(UInt64(1))       // sequence
    }

    /// A checkpoint of one keyspace "k", no index, whose primary tree is stored as `chunks` (each a list of keys
    /// coded on its own), with a valid CRC. `listed` may change the (byte length, entry count) the directory
    /// gives each chunk; `shared` forces the shared length of the second key of every chunk.
    static func crafted(_ chunks: [[[UInt8]]], shared: Int? = nil,
                        listed: ([(length: Int, entries: Int)]) -> [(length: Int, entries: Int)] = { $0 }) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Format.checkpointMagic)
        w.u32(Format.checkpointVersion)
        for field in [UInt64(1), 4096, 7, 10] { w.u64(field) }   // covered segment and offset, next LSN, last sequence
        w.u32(1)
        for field in [UInt64(1), 99, 1] { w.u64(field) }         // segment 1: id, salt, first LSN
        var sizes: [(length: Int, entries: Int)] = []
        for keys in chunks {
            let start = w.count
            var previous: [UInt8]?
            for (i, key) in keys.enumerated() {
                entry(key, after: previous, shared: i == 1 ? shared : nil, to: &w)
                previous = key
            }
            sizes.append((w.count - start, keys.count))
        }
        let directoryOffset = w.count
        w.u32(1)
        w.lengthPrefixed(Array("k".utf8))
        let listedSizes = listed(sizes)
        w.u32(UInt32(listedSizes.count))
        for size in listedSizes { w.varint(size.length); w.varint(size.entries) }
        w.u32(0)   // no index
        w.u64(UInt64(directoryOffset))
        w.raw([UInt8](repeating: 0, count: Format.checkpointTrailerLength))
        return FuzzingSupport.withValidCheckpointChecksum(w.bytes)
    }

    static func keys(_ file: [UInt8]) -> [[UInt8]]? {
        guard case .success(let loaded) = decode(file, parallel: true), let k = loaded.keyspaces["k"] else { return nil }
        return entries(k.primary).map(\.0)
    }

    static func rejection(_ file: [UInt8]) -> String? {
        if case .failure(let rejection) = decode(file, parallel: true) { return rejection.description }
        return nil
    }

    @Test("hand-built files: chunks in order load; out of order, overlapping or miscounted ones are rejected")
    func craftedFiles() {
        let a: [UInt8] = [1, 1], b: [UInt8] = [1, 2], c: [UInt8] = [2], d: [UInt8] = [2, 0, 0]
        #expect(Self.keys(Self.crafted([[a, b], [c, d]])) == [a, b, c, d])
        #expect(Self.keys(Self.crafted([[a], [b], [c], [d]])) == [a, b, c, d])
        #expect(Self.keys(Self.crafted([])) == [])
        // A first chunk of one short key before a chunk of many (found in review: its leaf stayed underfull).
        let many = (0..<100).map { [UInt8(3), UInt8($0)] }
        #expect(Self.keys(Self.crafted([[a], many])) == [a] + many)
        #expect(Self.keys(Self.crafted([[a], [b], many, [[4]]])) == [a, b] + many + [[4]])
        // Every reader check, one at a time.
        #expect(Self.rejection(Self.crafted([[c, d], [a, b]])) == "keys out of order between chunks")
        #expect(Self.rejection(Self.crafted([[a, b], [b, c]])) == "keys out of order between chunks")
        #expect(Self.rejection(Self.crafted([[b, a]])) == "keys out of order")
        #expect(Self.rejection(Self.crafted([[a, a]])) == "keys out of order")
        #expect(Self.rejection(Self.crafted([[a, b], [c]]) { [$0[0]] }) == "chunks do not fill the space before the directory")
        #expect(Self.rejection(Self.crafted([[a, b]]) { [($0[0].length, 1)] }) == "primary chunk longer than its entries")
        #expect(Self.rejection(Self.crafted([[a, b], [c]]) { [($0[0].length, 1), ($0[1].length, 2)] }) == "primary chunk longer than its entries")
        #expect(Self.rejection(Self.crafted([[a, b], [c]]) { [($0[0].length, 3), ($0[1].length, 1)] }) == "malformed primary entry")
        #expect(Self.rejection(Self.crafted([[a, b], [c]]) { [($0[0].length - 1, 2), ($0[1].length + 1, 1)] }) == "malformed primary entry")
        #expect(Self.rejection(Self.crafted([[a, b], [c]]) { [($0[0].length, 2), ($0[1].length, 1), (0, 0)] }) == "malformed keyspace")
        #expect(Self.rejection(Self.crafted([[a, b], [c]]) { $0 + [(1, 1)] }) == "malformed keyspace")
        // The shared length: a smaller one than the keys have in common is only accepted when the first byte after
        // it already orders the keys.
        #expect(Self.keys(Self.crafted([[a, c]], shared: 0)) == [a, c])
        #expect(Self.rejection(Self.crafted([[a, b]], shared: 0)) == "keys out of order")
        #expect(Self.rejection(Self.crafted([[a, b]], shared: 1)) == nil)
    }
}
