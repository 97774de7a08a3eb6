import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// Uncached point reads (`Engine.get`, index queries): a page missed for the first time is decoded only as far
/// as the wanted value ends and not cached; missed again, it is read whole and cached. Either way the value is
/// exactly the one written, and the whole stored page must still pass its checksum. A key-order walk
/// (`forEach`) holds a page across the records next to each other on it, and reads scattered records as point
/// reads do.
@Suite("Engine: uncached point reads")
struct PointReadTests {
    static func key(_ i: Int) -> [UInt8] { Array("point-\(i)".utf8) }

    /// 4 KiB pages compressed whole (`.lz4`: what this suite is about; `.lz4Records` decodes one record by design,
    /// `RecordCompressionTests`), no sync, no background compaction, and a cache of `cacheBytes`: by default 64 KiB, a
    /// page per shard, so that nearly every first miss finds the cache full and reads the value only.
    static func options(cacheBytes: Int = 64 << 10) -> EngineOptions {
        var o = EngineTest.options(sync: .none, pageCacheBytes: cacheBytes, compression: .lz4)
        o.autoCompaction = nil
        return o
    }

    /// 600 records of 1 to 3,000 bytes, alternately incompressible and repetitive (so pages are stored both
    /// compressed and raw), in batches of 20.
    static func write(_ engine: Engine) throws -> [[UInt8]] {
        var rng = SplitMix64(seed: 31)
        var values: [[UInt8]] = []
        for start in stride(from: 0, to: 600, by: 20) {
            var batch = WriteBatch()
            for i in start..<(start + 20) {
                let length = 1 + Int(rng.next() % 3_000)
                let value = (i / 40) % 2 == 0 ? rng.bytes(length) : [UInt8](repeating: UInt8(i & 0xFF), count: length)
                values.append(value)
                batch.put(value, forKey: key(i), in: "p")
            }
            try engine.commitAndWait(batch)
        }
        return values
    }

    /// Writes the records to a new store at `dir` and closes it, so that the next open starts with an empty cache.
    static func writeStore(_ dir: String) throws -> [[UInt8]] {
        let engine = try Engine.open(at: dir, options: options())
        defer { try? engine.close() }
        return try write(engine)
    }

    @Test("every value reads back exactly, first, second and third time, from compressed and raw pages alike",
          arguments: [0, 64 << 10])
    func valuesMatch(cacheBytes: Int) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let values = try Self.writeStore(dir)
            // No cache: every read decodes only its value. 64 KiB: reads take every path.
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: cacheBytes))
            defer { try? engine.close() }
            // Pages of both kinds exist, so both partial paths (decode a prefix, copy a range) run.
            let state = engine.core.currentState()
            let primary = try #require(state.keyspaces["p"]?.primary)
            var compressed = 0, raw = 0
            var pages = Set<UInt32>()
            for i in 0..<values.count {
                let location = try #require(primary.value(forKey: Self.key(i)))
                guard pages.insert(location.pageOffset).inserted else { continue }
                let file = try #require(state.segments[UInt64(location.segment)])
                let (header, _) = try file.readPage(at: UInt64(location.pageOffset), fileEnd: UInt64.max / 2)
                if header.isCompressed { compressed += 1 } else { raw += 1 }
            }
            #expect(compressed > 0 && raw > 0, "\(compressed) compressed and \(raw) raw pages")
            for round in 1...3 {
                for i in (0..<values.count).reversed() where try engine.get(Self.key(i), in: "p") != values[i] {
                    Issue.record("round \(round): key \(i) reads back wrong")
                    return
                }
            }
            let stats = engine.statistics
            #expect(cacheBytes == 0 ? stats.cacheHits == 0 : stats.cacheHits > 0 && stats.cacheMisses > 0)
        }
    }

    @Test("a byte flipped after the value, in a part of the page a partial read does not decode, fails the checksum")
    func checksumCoversTheWholePage() throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.writeStore(dir)
            // The first record of a compressed page holding several: its value ends well before the page does.
            var target: (index: Int, location: RecordLocation, path: String, storedLength: UInt32)?
            do {
                let engine = try Engine.open(at: dir, options: Self.options())
                defer { try? engine.close() }
                let state = engine.core.currentState()
                let primary = try #require(state.keyspaces["p"]?.primary)
                for i in 0..<600 {
                    let location = try #require(primary.value(forKey: Self.key(i)))
                    let file = try #require(state.segments[UInt64(location.segment)])
                    let (header, page) = try file.readPage(at: UInt64(location.pageOffset), fileEnd: UInt64.max / 2)
                    let valueEnd = Int(location.valueOffset) + Int(location.valueLength)
                    if header.isCompressed && header.recordCount > 1 && valueEnd < page.bytes.count / 2 {
                        target = (i, location, file.path, header.storedLength)
                        break
                    }
                }
            }
            let found = try #require(target, "a compressed page whose first value ends in its first half")
            let pageOffset = UInt64(found.location.pageOffset)
            let last = pageOffset + UInt64(Format.pageHeaderLength) + UInt64(found.storedLength) - 1
            let handle = try PosixFileSystem().openFile(at: found.path, mode: .readWrite(create: false))
            let byte = try handle.read(at: last, count: 1)
            try handle.write([byte[0] ^ 0x01], at: last)
            try handle.close()

            // No cache: the read decodes the page only as far as the value ends.
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: 0))
            defer { try? engine.close() }
            do {
                _ = try engine.get(Self.key(found.index), in: "p")
                Issue.record("a flipped byte after the value must fail the page's checksum")
            } catch let error as LucidError {
                #expect(error.code == .corruption && error.file == found.path && error.offset == pageOffset, "\(error)")
                #expect(error.message.contains("checksum"), "\(error)")
            }
        }
    }
    @Test("a key-order walk holds each page across a run of records on it, and reads scattered records one by one",
          arguments: [false, true])
    func keyOrderWalk(shuffled: Bool) throws {
        try EngineTest.withTemporaryDirectory { dir in
            var rng = SplitMix64(seed: 37)
            var order = Array(0..<2_000)
            if shuffled { order.shuffle(using: &rng) }
            let key = { (i: Int) in Array("walk-\(String(1_000_000 + i))".utf8) }
            var values = [[UInt8]](repeating: [], count: order.count)
            do {
                let engine = try Engine.open(at: dir, options: Self.options())
                defer { try? engine.close() }
                for start in stride(from: 0, to: order.count, by: 50) {
                    var batch = WriteBatch()
                    for i in order[start..<(start + 50)] {
                        values[i] = rng.bytes(100 + Int(rng.next() % 200))
                        batch.put(values[i], forKey: key(i), in: "w")
                    }
                    try engine.commitAndWait(batch)
                }
            }
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            let primary = try #require(engine.core.currentState().keyspaces["w"]?.primary)
            let pages = Set((0..<order.count).map { primary.value(forKey: key($0))!.pageOffset }).count
            let before = engine.statistics
            var seen = 0
            try engine.snapshot().forEach(in: "w") { record in
                #expect(record.key == key(seen) && record.value == values[seen], "record \(seen)")
                seen += 1
                return true
            }
            #expect(seen == order.count)
            let after = engine.statistics
            let lookups = (after.cacheHits + after.cacheMisses) - (before.cacheHits + before.cacheMisses)
            if shuffled {
                #expect(lookups >= UInt64(order.count) * 9 / 10, "scattered: about one lookup per record (\(lookups))")
            } else {
                #expect(lookups <= UInt64(pages + 1), "in runs: one lookup per page, \(lookups) for \(pages) pages")
            }
        }
    }
}
