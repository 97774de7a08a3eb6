import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// Records compressed one by one against their segment's dictionary (`EngineOptions.pageCompression =
/// .lz4Records`, format version 3): the payload codec against malformed entries, the samples dictionaries are
/// built from, stores switching between page kinds, and a damaged dictionary.
@Suite("Records compressed one by one")
struct RecordCompressionTests {
    /// Record-like bytes: a shared prefix, a number, a varying tail.
    static func record(_ i: Int, _ rng: inout SplitMix64) -> [UInt8] {
        let tail = (0..<Int(rng.next() % 120)).map { _ in UInt8(97 + rng.next() % 6) }
        return Array("{\"keyspace\":\"books\",\"id\":\(i),\"title\":\"".utf8) + tail + Array("\"}".utf8)
    }

    static func header(records: [[UInt8]], storedLength: Int) -> PageHeader {
        PageHeader(type: Format.pageTypeData, flags: Format.pageFlagRecordsCompressed, recordCount: UInt16(records.count),
                   salt: 0, rawLength: UInt32(records.reduce(0) { $0 + $1.count }), storedLength: UInt32(storedLength),
                   lsn: 1, syncedLSN: 0, baseSequence: 0, maskedCRC: 0)
    }

    static func encode(_ records: [[UInt8]], _ dictionary: LZ4.PreparedDictionary) -> [UInt8] {
        var starts: [Int] = []
        var raw: [UInt8] = []
        for r in records {
            starts.append(raw.count)
            raw += r
        }
        var payload: [UInt8] = []
        var scratch: [UInt8] = []
        raw.withUnsafeBytes {
            RecordPageCodec.encode($0, recordStarts: starts, dictionary: dictionary, appendingTo: &payload, scratch: &scratch)
        }
        return payload
    }

    @Test("a payload decodes to the records back to back; every byte range of a record decodes alone to the same bytes")
    func roundTrip() throws {
        var rng = SplitMix64(seed: 0xD1C7)
        let samples = (0..<200).map { Self.record($0, &rng) }
        let dictionary = LZ4.PreparedDictionary(Array(samples.joined().suffix(Format.maxDictionaryLength)))
        // An incompressible record, stored as it is, among compressible ones.
        let records = (0..<20).map { Self.record(1000 + $0, &rng) } + [(0..<50).map { _ in UInt8(truncatingIfNeeded: rng.next()) }]
        let payload = Self.encode(records, dictionary)
        let raw = Array(records.joined())
        #expect(payload.count < raw.count * 3 / 4, "records like the dictionary's compress: \(payload.count) of \(raw.count)")
        let header = Self.header(records: records, storedLength: payload.count)
        let decoded = try payload.withUnsafeBytes {
            try RecordPageCodec.decode($0, header: header, dictionary: dictionary, file: "t", offset: 0)
        }
        #expect(decoded == raw)
        var start = 0
        for record in records {
            for (lower, upper) in [(0, record.count), (1, record.count), (record.count / 2, record.count - 1), (3, 4)]
            where lower < upper {
                let range = (start + lower)..<(start + upper)
                let bytes = try payload.withUnsafeBytes {
                    try RecordPageCodec.bytes(range, of: $0, header: header, dictionary: dictionary, file: "t", offset: 0)
                }
                #expect(bytes == Array(raw[range]), "range \(range)")
            }
            start += record.count
        }
        // A range across two records (no location makes one) decodes the page.
        let across = try payload.withUnsafeBytes {
            try RecordPageCodec.bytes(5..<(records[0].count + 5), of: $0, header: header, dictionary: dictionary,
                                      file: "t", offset: 0)
        }
        #expect(across == Array(raw[5..<(records[0].count + 5)]))
    }

    @Test("malformed entries and blocks that do not decode are corruption, never a read past the payload")
    func malformed() throws {
        var rng = SplitMix64(seed: 0xBAD)
        let dictionary = LZ4.PreparedDictionary(Array((0..<100).map { Self.record($0, &rng) }.joined().prefix(8192)))
        let records = (0..<6).map { Self.record(500 + $0, &rng) }
        let payload = Self.encode(records, dictionary)
        let good = Self.header(records: records, storedLength: payload.count)

        func fails(_ bytes: [UInt8], _ header: PageHeader, _ what: String) {
            #expect(throws: LucidError.self, "\(what)") {
                _ = try bytes.withUnsafeBytes {
                    try RecordPageCodec.decode($0, header: header, dictionary: dictionary, file: "t", offset: 0)
                }
            }
        }
        var fewer = good
        fewer.recordCount -= 1
        fails(payload, fewer, "fewer entries than the payload holds")
        var more = good
        more.recordCount += 1
        fails(payload, more, "more entries than the payload holds")
        var longer = good
        longer.rawLength += 1
        fails(payload, longer, "a raw length the entries do not add up to")
        fails(payload + [0], good, "a byte after the last entry")
        fails(Array(payload.dropLast()), good, "a truncated last entry")
        // Hand-made tables of one entry of 5 raw bytes.
        let one = Self.header(records: [[1, 2, 3, 4, 5]], storedLength: 0)
        fails([5, 6] + [UInt8](repeating: 1, count: 6), one, "a stored length over the raw length")
        fails([5, 5, 1, 2, 3, 4], one, "stored bytes past the payload")
        fails([5, 0], one, "a stored length of 0")
        fails([0x85], one, "a table cut inside a varint")
        var zero = one
        zero.rawLength = 0
        fails([0, 0], zero, "a raw length of 0")
        #expect(try ([5, 5, 1, 2, 3, 4, 5] as [UInt8]).withUnsafeBytes {
            try RecordPageCodec.decode($0, header: one, dictionary: dictionary, file: "t", offset: 0)
        } == [1, 2, 3, 4, 5], "the hand-made table is read as documented (control)")
        // Every single-byte change of a compressed block either fails or decodes to the right length (LZ4 checks
        // no content: the page checksum does), and never reads outside the buffers.
        for i in 2..<min(payload.count, 60) {
            var damaged = payload
            damaged[i] ^= 0x5A
            _ = try? damaged.withUnsafeBytes {
                try RecordPageCodec.decode($0, header: good, dictionary: dictionary, file: "t", offset: 0)
            }
        }
    }

    @Test("samples keep the newest records, at most the dictionary's length, oldest first")
    func samples() {
        var samples = RecordSamples()
        #expect(samples.dictionary.isEmpty)
        samples.add([[1, 2, 3], [4, 5]])
        #expect(samples.dictionary == [1, 2, 3, 4, 5])
        let big = [UInt8](repeating: 7, count: 1000)
        for i in 0..<200 { samples.add([big + [UInt8(i)]]) }
        let dictionary = samples.dictionary
        #expect(dictionary.count == Format.maxDictionaryLength)
        #expect(dictionary.last == 199, "the newest record is last")
        #expect(!dictionary.contains(1) || dictionary.firstIndex(of: 1)! > 0, "the oldest records are gone")
        #expect(samples.byteCount < Format.maxDictionaryLength + 1001)
    }

    static func options(_ compression: EngineOptions.PageCompression) -> EngineOptions {
        var o = EngineTest.options(sync: .none, segmentSize: 1 << 20, compression: compression)
        o.autoCompaction = nil
        return o
    }

    static func value(_ i: Int, _ generation: Int) -> [UInt8] {
        Array("{\"id\":\(i),\"generation\":\(generation),\"title\":\"The \(i % 97) Bridge of \(i % 13)\",\"genre\":\"g\(i % 7)\"}".utf8)
    }

    static func write(_ engine: Engine, _ range: Range<Int>, _ generation: Int) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: 200) {
            var batch = WriteBatch()
            for i in start..<min(start + 200, range.upperBound) {
                batch.put(value(i, generation), forKey: Array("k\(i)".utf8), in: "r",
                          indexTerms: [IndexTerm(index: "genre", value: .string("g\(i % 7)"))])
            }
            try engine.commitAndWait(batch)
        }
    }

    static func check(_ engine: Engine, _ generations: [Int], _ tag: String) throws {
        let scanned = try engine.snapshot().scan(in: "r")
        #expect(scanned.count == generations.count, "\(tag): scan count")
        for record in scanned {
            let i = Int(String(decoding: record.key.dropFirst(), as: UTF8.self))!
            if record.value != value(i, generations[i]) {
                Issue.record("\(tag): record \(i) reads back wrong")
                return
            }
        }
        #expect(try engine.get(Array("k7".utf8), in: "r") == value(7, generations[7]), "\(tag): get")
        #expect(try engine.snapshot().indexTerms(forKey: Array("k8".utf8), in: "r")
                == [IndexTerm(index: "genre", value: .string("g1"))], "\(tag): terms")
    }

    @Test("a store moves between page kinds: each page reads as it was written, a segment keeps its kind until it rolls",
          .heavy)
    func switchingModes() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var generations = [Int](repeating: 0, count: 30_000)
            var engine = try Engine.open(at: dir, options: Self.options(.lz4))
            try Self.write(engine, 0..<10_000, 0)
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(.lz4Records))
            try Self.write(engine, 10_000..<30_000, 0)
            // Until the segment .lz4 started rolls (its pages stay whole-page LZ4), then one more.
            var rolled = 30_000
            while engine.core.currentState().manifest.segments.count < 3 {
                try Self.write(engine, rolled..<(rolled + 10_000), 0)
                generations += [Int](repeating: 0, count: 10_000)
                rolled += 10_000
            }
            try Self.check(engine, generations, "lz4 then lz4Records")
            // The first segment was written whole-page; later ones start with their dictionaries.
            let files = engine.core.currentState().manifest.segments.compactMap { engine.core.currentState().segments[$0.id] }
            let kinds = try files.map { EngineTest.pages(ofSegment: try EngineTest.readFile($0.path)) }
                .filter { !$0.isEmpty }
                .map { $0.first!.type == Format.pageTypeDictionary }
            #expect(kinds.first == false && kinds.last == true, "segments with dictionaries: \(kinds)")
            for i in 0..<5_000 { generations[i] = 1 }
            try Self.write(engine, 0..<5_000, 1)
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(.lz4))
            defer { try? engine.close() }
            try Self.check(engine, generations, "reopened with .lz4")
            try engine.sealActiveSegment()
            _ = try engine.compactAndWait()
            try Self.check(engine, generations, "compacted with .lz4")
            #expect(try engine.verify().ok)
        }
    }

    /// Flips a bit of the payload of the page at `page` (0: the dictionary, 1: its copy) of the segment at `path`.
    static func damageDictionary(_ path: String, page: Int) throws {
        let bytes = try EngineTest.readFile(path)
        let dictionaryPage = EngineTest.pages(ofSegment: bytes)[page]
        #expect(dictionaryPage.type == Format.pageTypeDictionary)
        let at = UInt64(dictionaryPage.offset + Format.pageHeaderLength + 100)
        let handle = try PosixFileSystem().openFile(at: path, mode: .readWrite(create: false))
        defer { try? handle.close() }
        let byte = try handle.read(at: at, count: 1)
        try handle.write([byte[0] ^ 0x10], at: at)
    }

    @Test("a damaged dictionary is read from its copy; with both damaged, reads of its records are corruption naming the file")
    func damagedDictionary() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var engine = try Engine.open(at: dir, options: Self.options(.lz4Records))
            try Self.write(engine, 0..<2_000, 0)
            let location = try #require(engine.core.currentState().keyspaces["r"]?.primary.value(forKey: Array("k5".utf8)))
            let path = try #require(engine.core.currentState().segments[UInt64(location.segment)]).path
            try engine.close()
            // The checkpoint spares open the scan of the log; the reads meet the damage.
            var options = Self.options(.lz4Records)
            options.pageCacheBytes = 0
            try Self.damageDictionary(path, page: 0)
            engine = try Engine.open(at: dir, options: options)
            #expect(try engine.get(Array("k5".utf8), in: "r") == Self.value(5, 0), "read against the copy")
            #expect(try !engine.verify().ok, "verify reports the damaged first page")
            try engine.close()

            try Self.damageDictionary(path, page: 1)
            engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            do {
                _ = try engine.get(Array("k5".utf8), in: "r")
                Issue.record("a record compressed against a damaged dictionary must not read")
            } catch let error as LucidError {
                #expect(error.code == .corruption && error.file == path, "\(error)")
            }
            #expect(try !engine.verify().ok, "verify finds the damage")
        }
    }
    /// The dictionary pages' payload of the segment file at `path` (nil without them).
    static func dictionary(ofSegment path: String) throws -> [UInt8]? {
        let bytes = try EngineTest.readFile(path)
        guard let first = EngineTest.pages(ofSegment: bytes).first, first.type == Format.pageTypeDictionary else { return nil }
        return Array(bytes[(first.offset + Format.pageHeaderLength)..<first.end])
    }

    @Test("a segment started just after open, with few records written since, takes the previous segment's dictionary")
    func dictionaryAfterReopen() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var engine = try Engine.open(at: dir, options: Self.options(.lz4Records))
            try Self.write(engine, 0..<20_000, 0)
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(.lz4Records))
            defer { try? engine.close() }
            let before = engine.core.currentState().manifest.segments.map(\.id)
            try engine.sealActiveSegment()
            var batch = WriteBatch()
            batch.put(Self.value(1, 1), forKey: Array("k1".utf8), in: "r")
            try engine.commitAndWait(batch)
            let state = engine.core.currentState()
            let newestId = try #require(state.manifest.segments.last).id
            let previousId = try #require(before.last)
            let newest = try #require(state.segments[newestId])
            let previous = try #require(state.segments[previousId])
            let dictionary = try Self.dictionary(ofSegment: newest.path)
            let previousDictionary = try Self.dictionary(ofSegment: previous.path)
            #expect(dictionary != nil && dictionary == previousDictionary,
                    "one record since open is not a dictionary: the previous segment's is taken")
            #expect(try engine.get(Array("k1".utf8), in: "r") == Self.value(1, 1))
        }
    }
}
