import Foundation
import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `EngineOptions.pageCompression = .none`: pages are stored as they are, and with mapped reads a page is checked
/// the first time this process reads it, then read in place (``CheckedPages``): values equal what was written
/// across roll, reopen and compaction, with and without the mapping; damage a first read meets is the usual typed
/// corruption; a store written compressed keeps reading its compressed pages through the cache. The same holds for
/// `.lz4Records` (records compressed one by one against the segment's dictionary, decoded alone in place).
@Suite("Engine: uncompressed pages read in place")
struct InPlaceReadsTests {
    static func key(_ i: Int) -> [UInt8] { Array("in-place-\(i)".utf8) }

    /// Compressible values (LZ4 would keep them compressed), 300 to 600 bytes.
    static func value(_ i: Int, generation: Int) -> [UInt8] {
        let text = "{\"id\": \(i), \"generation\": \(generation), \"title\": \"a title that repeats\"} "
        return Array(String(repeating: text, count: 300 / text.utf8.count + 1 + i % 5).utf8)
    }

    /// 1 MiB segments, a small page cache (none: the writer's fresh pages are not cached, so the first read of a
    /// page goes to the file), the given compression and mapping.
    static func options(_ compression: EngineOptions.PageCompression, mapped: Bool = true,
                        cacheBytes: Int = 256 << 10) -> EngineOptions {
        var o = EngineTest.options(sync: .none, segmentSize: 1 << 20, pageCacheBytes: cacheBytes)
        o.memoryMappedReads = mapped
        o.pageCompression = compression
        o.autoCompaction = nil
        return o
    }

    static func write(_ engine: Engine, _ range: Range<Int>, generation: Int) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: 25) {
            var batch = WriteBatch()
            for i in start..<min(start + 25, range.upperBound) {
                batch.put(value(i, generation: generation), forKey: key(i), in: "p")
            }
            try engine.commitAndWait(batch)
        }
    }

    /// Every key reads back its expected value, through `get` and through `values(forKeys:)`.
    static func checkAll(_ engine: Engine, _ generations: [Int], _ tag: String) throws {
        for (i, generation) in generations.enumerated() where try engine.get(key(i), in: "p") != value(i, generation: generation) {
            Issue.record("\(tag): key \(i) reads back wrong")
            return
        }
        let keys = generations.indices.map(key)
        let values = try engine.snapshot().values(forKeys: keys, in: "p")
        #expect(values == generations.enumerated().map { value($0.offset, generation: $0.element) },
                "\(tag): values(forKeys:) agrees")
    }

    /// The record's segment file and page offset.
    static func page(of i: Int, _ engine: Engine) throws -> (file: SegmentFile, offset: UInt64, location: RecordLocation) {
        let state = engine.core.currentState()
        let location = try #require(state.keyspaces["p"]?.primary.value(forKey: key(i)))
        let file = try #require(state.segments[UInt64(location.segment)])
        return (file, UInt64(location.pageOffset), location)
    }

    /// Writes records `0..<count` with one engine, closes it, and opens the store again: no page is cached or
    /// checked yet.
    static func writtenAndReopened(_ dir: String, count: Int,
                                   compression: EngineOptions.PageCompression = .none) throws -> Engine {
        let writer = try Engine.open(at: dir, options: options(compression))
        try write(writer, 0..<count, generation: 0)
        try writer.close()
        return try Engine.open(at: dir, options: options(compression))
    }

    /// The two compressions whose checked pages are read in place.
    static let inPlace: [EngineOptions.PageCompression] = [.none, .lz4Records]

    /// XORs `mask` into the byte at `offset` of the file at `path` (twice restores it).
    static func flip(_ mask: UInt8, at offset: UInt64, of path: String) throws {
        let handle = try PosixFileSystem().openFile(at: path, mode: .readWrite(create: false))
        defer { try? handle.close() }
        let byte = try handle.read(at: offset, count: 1)
        try handle.write([byte[0] ^ mask], at: offset)
    }

    /// Expects `body` to throw a ``LucidError`` of code `corruption` naming `file` and `offset`; records `failure`
    /// when it returns instead. Other errors propagate.
    static func expectCorruption(file: String, offset: UInt64, _ failure: Comment,
                                 sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) throws {
        do {
            try body()
            Issue.record(failure, sourceLocation: sourceLocation)
        } catch let error as LucidError {
            #expect(error.code == .corruption && error.file == file && error.offset == offset, "\(error)",
                    sourceLocation: sourceLocation)
        }
    }

    static func isChecked(_ i: Int, _ engine: Engine) throws -> Bool {
        let (file, offset, _) = try page(of: i, engine)
        return file.mapping.withCurrent { $0?.checkedPages.contains(pageAt: offset) ?? false }
    }

    @Test("uncompressed stores read back across roll, reopen and compaction, mapped or not; checked pages skip the cache",
          .heavy,
          arguments: [true, false], inPlace)
    func roundTrip(mapped: Bool, compression: EngineOptions.PageCompression) throws {
        try EngineTest.withTemporaryDirectory { dir in
            var engine = try Engine.open(at: dir, options: Self.options(compression, mapped: mapped))
            defer { try? engine.close() }
            // Enough to fill a 1 MiB segment once compressed.
            let count = compression == .lz4Records ? 40_000 : 4_000
            var generations = [Int](repeating: 0, count: count)
            try Self.write(engine, 0..<count, generation: 0)
            #expect(engine.core.currentState().manifest.segments.filter(\.sealed).count >= 1, "the writes rolled")
            try Self.expectStoredAs(compression, engine)
            try Self.checkAll(engine, generations, "after writing")

            // A page read once is checked; reading it again touches the page cache no more (mapped only).
            #expect(try Self.isChecked(7, engine) == mapped)
            let before = (engine.core.cache.hits, engine.core.cache.misses)
            #expect(try engine.get(Self.key(7), in: "p") == Self.value(7, generation: 0))
            let after = (engine.core.cache.hits, engine.core.cache.misses)
            #expect((after == before) == mapped, "an in-place read leaves the cache alone: \(before) → \(after)")

            for i in 0..<1_500 { generations[i] = 1 }
            try Self.write(engine, 0..<1_500, generation: 1)
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(compression, mapped: mapped))
            try Self.checkAll(engine, generations, "after reopen")
            try engine.sealActiveSegment()
            let summary = try engine.compactAndWait()
            #expect(!summary.inputSegments.isEmpty, "the compaction ran")
            try Self.expectStoredAs(compression, engine)
            try Self.checkAll(engine, generations, "after compaction")
            if mapped { #expect(try Self.isChecked(count - 1, engine), "compaction outputs are read in place") }
            let report = try engine.verify()
            #expect(report.ok, "\(report)")
        }
    }

    @Test("a point read that checks a page for in-place reads does not cache it whole; an .lz4 page is cached",
          arguments: [EngineOptions.PageCompression.none, .lz4Records, .lz4])
    func firstReadsLeaveInPlacePagesUncached(compression: EngineOptions.PageCompression) throws {
        try EngineTest.withTemporaryDirectory { dir in
            // A cache with room for every page, so that it would take each page a miss reads.
            let options = Self.options(compression, cacheBytes: 8 << 20)
            let count = 2_000
            let writer = try Engine.open(at: dir, options: options)
            try Self.write(writer, 0..<count / 2, generation: 0)
            try writer.sealActiveSegment()   // half the records in a sealed segment, half in the active one
            try Self.write(writer, (count / 2)..<count, generation: 0)
            try writer.close()
            let engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            func cachedBytes() -> Int {
                engine.core.cache.shards.reduce(0) { sum, shard in sum + shard.mutex.withLock { $0.bytes } }
            }
            for i in stride(from: 0, to: count, by: 3) {
                let value = try engine.get(Self.key(i), in: "p")
                #expect(value == Self.value(i, generation: 0), "\(compression): key \(i)")
            }
            if compression == .lz4 {
                #expect(cachedBytes() > 0, "pages compressed whole are cached on a miss while the cache has room")
            } else {
                #expect(cachedBytes() == 0, "\(compression): pages checked for in-place reads stay out of the cache")
                #expect(try Self.isChecked(0, engine) && Self.isChecked(count - 2, engine), "the reads checked them")
            }
            try Self.checkAll(engine, [Int](repeating: 0, count: count), "\(compression), after the first reads")
            if compression != .lz4 { #expect(cachedBytes() == 0, "\(compression): batch reads cache none either") }
        }
    }

    @Test("records compressed one by one: a record read again is cached decoded; its segment's values go with it")
    func hotRecordsCached() throws {
        try EngineTest.withTemporaryDirectory { dir in
            // Written by one engine, read by another: nothing is checked or cached at first.
            try Self.writtenAndReopened(dir, count: 2_000, compression: .lz4Records).close()
            for cacheBytes in [0, 8 << 20] {
                let engine = try Engine.open(at: dir, options: Self.options(.lz4Records, cacheBytes: cacheBytes))
                defer { try? engine.close() }
                #expect((engine.core.cache.records != nil) == (cacheBytes > 0), "a quarter of the cache, when any")
                // The first read misses the record cache and checks the page (the usual read); the second misses
                // again, so it decodes the record in place and caches it; the last three find it cached.
                for _ in 0..<5 { #expect(try engine.get(Self.key(7), in: "p") == Self.value(7, generation: 0)) }
                #expect(try Self.isChecked(7, engine))
                let stats = engine.statistics
                if cacheBytes == 0 {
                    #expect(stats.recordCacheHits == 0 && stats.recordCacheMisses == 0)
                    continue
                }
                #expect(stats.recordCacheHits == 3 && stats.recordCacheMisses == 2, "\(stats)")
                let values = try engine.snapshot().values(forKeys: (0..<2_000).map(Self.key), in: "p")
                #expect(values == (0..<2_000).map { Self.value($0, generation: 0) })
                #expect(try engine.snapshot().values(forKeys: [Self.key(7)], in: "p") == [Self.value(7, generation: 0)])
                #expect(engine.statistics.recordCacheHits == 5, "values(forKeys:) finds it too")
                let records = try #require(engine.core.cache.records)
                // Only the record read more than once is cached (reading 2,000 records once admits none of them).
                #expect(records.bytes == Self.value(7, generation: 0).count, "\(records.bytes)")
                #expect(records.checkInvariants().isEmpty, "\(records.checkInvariants())")

                // Compaction removes the segments it read: their values leave the cache with them.
                let segment = try Self.page(of: 7, engine).file.id
                try engine.sealActiveSegment()
                let summary = try engine.compactAndWait()
                #expect(summary.inputSegments.contains(segment), "\(summary.inputSegments)")
                #expect(records.bytes == 0, "the one value cached was in a compacted segment")
                for _ in 0..<3 { #expect(try engine.get(Self.key(7), in: "p") == Self.value(7, generation: 0)) }
            }
        }
    }

    @Test("readers of hot records compressed one by one, during overwrites and compactions, read what was written")
    func hotRecordsUnderCompaction() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(.lz4Records, cacheBytes: 8 << 20))
            defer { try? engine.close() }
            try Self.write(engine, 0..<3_000, generation: 0)
            let hot = 200
            let done = Atomic<Bool>(false)
            let wrong = Atomic<Int>(0)
            let reads = Atomic<Int>(0)
            // Readers: a key of the hot set holds generation 0 or 1 (overwritten once, below), never anything else.
            // Threads of their own: the shared pools can be held by other tests for longer than the writer runs.
            let finished = DispatchSemaphore(value: 0)
            for r in 0..<3 {
                Thread {
                    defer { finished.signal() }
                    var rng = SplitMix64(seed: UInt64(r))
                    while !done.load(ordering: .acquiring) {
                        let i = Int(rng.next() % UInt64(hot))
                        let batch = (0..<4).map { _ in Int(rng.next() % UInt64(hot)) }
                        do {
                            let value = try engine.get(Self.key(i), in: "p")
                            if value != Self.value(i, generation: 0) && value != Self.value(i, generation: 1) {
                                wrong.add(1, ordering: .relaxed)
                            }
                            let values = try engine.snapshot().values(forKeys: batch.map(Self.key), in: "p")
                            for (k, value) in zip(batch, values) where value != Self.value(k, generation: 0)
                                && value != Self.value(k, generation: 1) {
                                wrong.add(1, ordering: .relaxed)
                            }
                        } catch {
                            wrong.add(1, ordering: .relaxed)
                        }
                        reads.add(5, ordering: .relaxed)
                    }
                }.start()
            }
            /// Waits until the readers have made 2,000 more reads, so that each phase overlaps their reading.
            func readersProgress() {
                let target = reads.load(ordering: .relaxed) + 2_000
                while reads.load(ordering: .relaxed) < target { Thread.sleep(forTimeInterval: 0.001) }
            }
            // The writer overwrites half the hot set, and compaction moves everything, twice.
            for round in 0..<2 {
                readersProgress()
                if round == 0 { try Self.write(engine, 0..<(hot / 2), generation: 1) }
                readersProgress()
                try engine.sealActiveSegment()
                _ = try engine.compactAndWait()
            }
            readersProgress()
            done.store(true, ordering: .releasing)
            for _ in 0..<3 { finished.wait() }
            #expect(wrong.load(ordering: .relaxed) == 0, "reads that returned another value or failed")
            #expect(reads.load(ordering: .relaxed) > 0)
            var generations = [Int](repeating: 0, count: 3_000)
            for i in 0..<(hot / 2) { generations[i] = 1 }
            try Self.checkAll(engine, generations, "after compactions")
            let records = try #require(engine.core.cache.records)
            #expect(engine.statistics.recordCacheHits > 0, "the hot set was served from the record cache")
            #expect(records.checkInvariants().isEmpty, "\(records.checkInvariants())")
        }
    }

    /// Every segment's pages are stored as `compression` says: as they are (`.none`), or with compressed records
    /// after the dictionary and its copy (`.lz4Records`, values that compress to under half).
    static func expectStoredAs(_ compression: EngineOptions.PageCompression, _ engine: Engine) throws {
        let ratio = try engine.storeStatistics().compressionRatio
        guard compression == .lz4Records else {
            #expect(ratio == 1, "no page is stored compressed")
            return
        }
        #expect(ratio > 2, "the records compress: \(ratio)")
        for file in engine.core.currentState().segments.values {
            let pages = EngineTest.pages(ofSegment: try EngineTest.readFile(file.path))
            if pages.isEmpty { continue }   // the active segment after a roll
            let recordPages = pages.dropFirst(2).allSatisfy { $0.hasCompressedRecords }
            let dictionaries = pages.prefix(2).allSatisfy { $0.type == Format.pageTypeDictionary }
            #expect(dictionaries && recordPages, "\(file.path): two dictionary pages, then pages of compressed records")
        }
    }

    @Test("readers racing on first reads of the same pages all get the right values", arguments: inPlace)
    func concurrentFirstReads(compression: EngineOptions.PageCompression) async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(compression, cacheBytes: 0))
            defer { try? engine.close() }
            try Self.write(engine, 0..<2_000, generation: 0)
            try await withThrowingTaskGroup(of: Int.self) { group in
                for reader in 0..<4 {
                    group.addTask {
                        var wrong = 0
                        var rng = SplitMix64(seed: UInt64(reader))
                        for _ in 0..<4_000 {
                            let i = Int(rng.next() % 2_000)
                            if try engine.get(Self.key(i), in: "p") != Self.value(i, generation: 0) { wrong += 1 }
                        }
                        return wrong
                    }
                }
                var wrong = 0
                for try await count in group { wrong += count }
                #expect(wrong == 0)
            }
            #expect(try (0..<2_000).allSatisfy { try Self.isChecked($0, engine) }, "every page read got checked")
        }
    }

    @Test("damage a page's first read meets is corruption naming the file and page, and leaves it unchecked",
          arguments: inPlace)
    func firstReadChecks(compression: EngineOptions.PageCompression) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Self.writtenAndReopened(dir, count: 600, compression: compression)
            defer { try? engine.close() }
            let (file, offset, _) = try Self.page(of: 100, engine)
            let target = offset + UInt64(Format.pageHeaderLength) + 9
            try Self.flip(0x01, at: target, of: file.path)
            try Self.expectCorruption(file: file.path, offset: offset, "a flipped byte must fail the page's checksum") {
                _ = try engine.get(Self.key(100), in: "p")
            }
            #expect(try !Self.isChecked(100, engine), "a page that failed its check is not read in place")
            try Self.flip(0x01, at: target, of: file.path)
            #expect(try engine.get(Self.key(100), in: "p") == Self.value(100, generation: 0), "repaired, it reads")
            #expect(try Self.isChecked(100, engine))
        }
    }

    @Test("a value range outside its checked page is corruption, not a read past it", arguments: inPlace)
    func rangeOutsideCheckedPage(compression: EngineOptions.PageCompression) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(compression, cacheBytes: 0))
            defer { try? engine.close() }
            try Self.write(engine, 0..<100, generation: 0)
            #expect(try engine.get(Self.key(5), in: "p") != nil)
            let (file, offset, location) = try Self.page(of: 5, engine)
            #expect(try Self.isChecked(5, engine))
            var outside = location
            outside.valueOffset = 1 << 20
            try Self.expectCorruption(file: file.path, offset: offset, "a range past the page must fail") {
                _ = try PageFetch.checkedValue(at: outside, in: file, records: nil)
            }
            #expect(try PageFetch.checkedValue(at: location, in: file, records: nil) == Self.value(5, generation: 0))

            // A location inside the checked page's 32-byte bit but not at its start (a damaged one) is not read in
            // place: it goes the usual way, whose header check names the damage.
            for shift in UInt32(1)...31 {
                var misplaced = location
                misplaced.pageOffset += shift
                #expect(try PageFetch.checkedValue(at: misplaced, in: file, records: nil) == nil, "shift \(shift)")
                try Self.expectCorruption(file: file.path, offset: offset + UInt64(shift),
                                          "a location \(shift) bytes into a page must fail") {
                    _ = try PageFetch.value(at: misplaced, file: file, cache: engine.core.cache, storePath: dir)
                }
            }
        }
    }

    @Test("damage after a page's first check is returned by in-place reads (the documented trade) and found by verify")
    func damageAfterCheck() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Self.writtenAndReopened(dir, count: 300)
            defer { try? engine.close() }
            let original = Self.value(42, generation: 0)
            #expect(try engine.get(Self.key(42), in: "p") == original)
            let (file, offset, location) = try Self.page(of: 42, engine)
            #expect(try Self.isChecked(42, engine))
            let target = offset + UInt64(Format.pageHeaderLength) + UInt64(location.valueOffset) + 3
            try Self.flip(0x20, at: target, of: file.path)
            var damaged = original
            damaged[3] ^= 0x20
            #expect(try engine.get(Self.key(42), in: "p") == damaged, "a checked page is not checked again")
            let report = try engine.verify()
            #expect(!report.ok, "verify checks every page: \(report)")
        }
    }

    @Test(".lz4 pages are checked once per mapping: damage before the first read is corruption, after it is not seen; verify and a reopen see it")
    func compressedPagesCheckedOnce() throws {
        try EngineTest.withTemporaryDirectory { dir in
            // No page cache: every get reads its page from the mapping and decodes it up to the value.
            var engine = try Engine.open(at: dir, options: Self.options(.lz4, cacheBytes: 0))
            try Self.write(engine, 0..<300, generation: 0)
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(.lz4, cacheBytes: 0))
            defer { try? engine.close() }
            let (file, offset, location) = try Self.page(of: 42, engine)
            let payload = try file.handle.read(at: offset, count: Format.pageHeaderLength)
            #expect(payload[Format.pageHeaderFlagsOffset] & Format.pageFlagCompressed != 0, "the page is compressed")
            let storedLength = payload.withUnsafeBytes {
                Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: Format.pageHeaderStoredLengthOffset,
                                                          as: UInt32.self)))
            }
            // The last stored byte, a literal that decodes to the page's last raw byte (past any value: a record ends
            // with its index terms' count). A partial decode up to the value never uses it; the checksum reads it.
            let last = offset + UInt64(Format.pageHeaderLength + storedLength - 1)
            try Self.flip(0x01, at: last, of: file.path)
            try Self.expectCorruption(file: file.path, offset: offset, "the first read of a damaged page must fail its checksum") {
                _ = try engine.get(Self.key(42), in: "p")
            }
            #expect(try !Self.isChecked(42, engine), "a page that failed its check stays unchecked")
            try Self.flip(0x01, at: last, of: file.path)
            #expect(try engine.get(Self.key(42), in: "p") == Self.value(42, generation: 0))
            #expect(try Self.isChecked(42, engine), "the read checked it")
            #expect(try PageFetch.checkedValue(at: location, in: file, records: nil) == nil, "not read in place")

            // Damaged after its check: reads of this mapping do not check it again (the documented trade).
            try Self.flip(0x01, at: last, of: file.path)
            #expect(try engine.get(Self.key(42), in: "p") == Self.value(42, generation: 0),
                    "a checked page's checksum is not computed again")
            #expect(try !engine.verify().ok, "verify checks every page")
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(.lz4, cacheBytes: 0))
            #expect(throws: LucidError.self, "a new mapping checks the page again") {
                _ = try engine.get(Self.key(42), in: "p")
            }
        }
    }

    @Test("a store written compressed, opened with .none, reads old pages through the cache and writes new ones raw")
    func compressedThenRaw() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var engine = try Engine.open(at: dir, options: Self.options(.lz4))
            try Self.write(engine, 0..<1_000, generation: 0)
            #expect(try engine.storeStatistics().compressionRatio > 1.5, "the values compress")
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(.none))
            defer { try? engine.close() }
            var generations = [Int](repeating: 0, count: 1_000)
            try Self.checkAll(engine, generations, "compressed pages")
            /// The value of record `i` read in place from its checked page, or nil when its page is not read so.
            func inPlace(_ i: Int) throws -> [UInt8]? {
                let (file, _, location) = try Self.page(of: i, engine)
                return try PageFetch.checkedValue(at: location, in: file, records: nil)
            }
            #expect(try Self.isChecked(10, engine), "a compressed page read is checked once")
            #expect(try inPlace(10) == nil, "a compressed page is never read in place")
            try Self.write(engine, 0..<200, generation: 1)
            for i in 0..<200 { generations[i] = 1 }
            try Self.checkAll(engine, generations, "mixed pages")
            #expect(try inPlace(10) == Self.value(10, generation: 1), "a page written raw is read in place")
            #expect(try Self.isChecked(500, engine) && inPlace(500) == nil, "a page still compressed is not")
        }
    }
}

@Suite("CheckedPages")
struct CheckedPagesTests {
    @Test("pages a header apart have their own bits; offsets past the mapping are ignored")
    func bits() {
        let pages = CheckedPages(mappingLength: 4096)
        let offsets: [UInt64] = [64, 112, 160, 4000]
        // (`#expect` cannot take a noncopyable value apart, so each answer is read first.)
        let before = offsets.map { pages.contains(pageAt: $0) }
        #expect(before == [false, false, false, false])
        pages.insert(pageAt: 112)
        let after112 = offsets.map { pages.contains(pageAt: $0) }
        #expect(after112 == [false, true, false, false], "neighbours 48 bytes away stay clear")
        pages.insert(pageAt: 4000)
        let after4000 = pages.contains(pageAt: 4000)
        #expect(after4000)
        pages.insert(pageAt: 1 << 40)
        let farAway = pages.contains(pageAt: 1 << 40) || pages.contains(pageAt: UInt64.max)
        #expect(!farAway, "past the mapping: never checked")
    }

    @Test("threads setting bits of the same words lose none")
    func concurrentSets() {
        let pages = CheckedPages(mappingLength: 64 << 10)
        let bits = (64 << 10) / 32
        for _ in 0..<4 {
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for bit in stride(from: thread, to: bits, by: 8) { pages.insert(pageAt: UInt64(bit * 32)) }
            }
        }
        let all = (0..<bits).allSatisfy { pages.contains(pageAt: UInt64($0 * 32)) }
        #expect(all)
    }
}
