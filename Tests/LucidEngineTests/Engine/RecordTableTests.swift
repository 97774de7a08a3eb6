import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `Snapshot.recordTable` (and `scan`, built on it): records read in storage order come back in key order, exactly
/// the records a key-order walk sees, for any range, direction and limit, with or without the page cache and
/// mapped reads, across segments, overwrites, deletions and compaction; a damaged page is `corruption`.
@Suite("Engine: record tables (reads in storage order)")
struct RecordTableTests {
    /// Keys written in a shuffled order, so that storage order and key order differ.
    static func key(_ i: Int) -> [UInt8] { Array(String(format: "rt-%05d", i).utf8) }

    static func options(cacheBytes: Int, mapped: Bool) -> EngineOptions {
        var o = EngineTest.options(sync: .none, segmentSize: 1 << 20, pageCacheBytes: cacheBytes)
        o.memoryMappedReads = mapped
        o.autoCompaction = nil
        return o
    }

    /// 2,000 records of 300 to 900 incompressible bytes written in a shuffled key order (a few segments), then a
    /// quarter overwritten and a tenth deleted. Returns the live records by key.
    static func fill(_ engine: Engine, seed: UInt64) throws -> [[UInt8]: [UInt8]] {
        var rng = SplitMix64(seed: seed)
        var order = Array(0..<2_000)
        for i in order.indices.reversed() { order.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        var live: [[UInt8]: [UInt8]] = [:]
        func commit(_ range: ArraySlice<Int>, _ write: (Int, inout WriteBatch) -> Void) throws {
            for start in stride(from: range.startIndex, to: range.endIndex, by: 25) {
                var batch = WriteBatch()
                for i in range[start..<min(start + 25, range.endIndex)] { write(i, &batch) }
                try engine.commitAndWait(batch)
            }
        }
        let put = { (i: Int, batch: inout WriteBatch) in
            let value = rng.bytes(300 + Int(rng.next() % 600))
            live[key(i)] = value
            batch.put(value, forKey: key(i), in: "t")
        }
        try commit(order[...], put)
        try commit(order[..<500], put)
        try commit(order[500..<700]) { i, batch in
            live[key(i)] = nil
            batch.delete(key(i), in: "t")
        }
        return live
    }

    /// What a key-order walk sees for the same arguments.
    static func walked(_ snapshot: Snapshot, range: KeyRange, reverse: Bool, limit: Int?) throws -> [KeyValue] {
        var out: [KeyValue] = []
        try snapshot.forEach(in: "t", range: range, reverse: reverse, limit: limit) { out.append($0); return true }
        return out
    }

    static func check(_ engine: Engine, _ live: [[UInt8]: [UInt8]], _ tag: String) throws {
        let snapshot = engine.snapshot()
        let all = try snapshot.recordTable(in: "t")
        #expect(all.count == live.count, "\(tag): one row per live record")
        #expect(all.map(\.key) == live.keys.sorted { $0.lexicographicallyPrecedes($1) }, "\(tag): key order")
        #expect(all.allSatisfy { live[$0.key] == $0.value }, "\(tag): every value is the record's")
        #expect(all.indices.allSatisfy { Array(all.key(at: $0)) == all[$0].key && Array(all.value(at: $0)) == all[$0].value })
        let ranges: [KeyRange] = [.all, .from(key(300), to: key(1_700)), KeyRange(lower: .included(key(1_990)))]
        for range in ranges {
            for reverse in [false, true] {
                for limit in [nil, 0, 1, 37, 5_000] as [Int?] {
                    let expected = try walked(snapshot, range: range, reverse: reverse, limit: limit)
                    let table = try snapshot.recordTable(in: "t", range: range, reverse: reverse, limit: limit)
                    #expect(Array(table) == expected, "\(tag): \(range) reverse \(reverse) limit \(String(describing: limit))")
                    #expect(try snapshot.scan(in: "t", range: range, reverse: reverse, limit: limit) == expected)
                }
            }
        }
        #expect(try snapshot.recordTable(in: "absent").isEmpty)
    }

    @Test("storage-order reads equal the key-order walk, with and without cache and mapping, across compaction", .heavy,
          arguments: [(0, false), (0, true), (8 << 20, false), (8 << 20, true)])
    func matchesTheKeyOrderWalk(cacheBytes: Int, mapped: Bool) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let options = Self.options(cacheBytes: cacheBytes, mapped: mapped)
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            let live = try Self.fill(engine, seed: 11)
            #expect(engine.core.currentState().manifest.segments.count >= 2, "the records span segments")
            try Self.check(engine, live, "written")
            try engine.sealActiveSegment()
            _ = try engine.compactAndWait()
            try Self.check(engine, live, "compacted")
            try engine.close()
            engine = try Engine.open(at: dir, options: options)
            try Self.check(engine, live, "reopened")
        }
    }

    @Test("a flipped byte in a page the table reads is corruption naming the file and page")
    func damagedPage() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: 0, mapped: false))
            defer { try? engine.close() }
            _ = try Self.fill(engine, seed: 12)
            let state = engine.core.currentState()
            let location = try #require(state.keyspaces["t"]?.primary.value(forKey: Self.key(1_000)))
            let file = try #require(state.segments[UInt64(location.segment)])
            let handle = try PosixFileSystem().openFile(at: file.path, mode: .readWrite(create: false))
            defer { try? handle.close() }
            let payloadByte = UInt64(location.pageOffset) + UInt64(Format.pageHeaderLength) + 5
            let byte = try handle.read(at: payloadByte, count: 1)
            try handle.write([byte[0] ^ 0x10], at: payloadByte)
            do {
                _ = try engine.snapshot().recordTable(in: "t")
                Issue.record("a flipped payload byte must fail its checksum")
            } catch let error as LucidError {
                #expect(error.code == .corruption && error.file == file.path
                        && error.offset == UInt64(location.pageOffset), "\(error)")
            }
        }
    }
}
