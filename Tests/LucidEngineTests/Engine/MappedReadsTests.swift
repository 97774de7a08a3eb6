import Foundation
import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `EngineOptions.memoryMappedReads`: sealed and active segments are mapped, reads through the mapping return
/// exactly what `pread` returns across roll, reopen and compaction, damage in a mapped page is the same typed
/// `corruption` (never a read past the file), and readers of the active segment see only published bytes.
@Suite("Engine: memory-mapped reads")
struct MappedReadsTests {
    static func key(_ i: Int) -> [UInt8] { Array("mapped-\(i)".utf8) }

    /// 1 MiB segments, no page cache (every get reads its page from the file), mapping on; with `.none`, checked
    /// pages are read in place (the records' random values are stored uncompressed either way).
    static func options(mapped: Bool = true, compression: EngineOptions.PageCompression = .lz4) -> EngineOptions {
        var o = EngineTest.options(sync: .none, segmentSize: 1 << 20, pageCacheBytes: 0)
        o.memoryMappedReads = mapped
        o.pageCompression = compression
        o.autoCompaction = nil
        return o
    }

    /// Writes `count` records of 900 incompressible bytes in batches of 10 (about 2.6 MiB for 3,000: two rolls).
    static func write(_ engine: Engine, count: Int, seed: UInt64) throws -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        var values: [[UInt8]] = []
        for start in stride(from: 0, to: count, by: 10) {
            var batch = WriteBatch()
            for i in start..<min(start + 10, count) {
                let value = rng.bytes(900)
                values.append(value)
                batch.put(value, forKey: key(i), in: "m")
            }
            try engine.commitAndWait(batch)
        }
        return values
    }

    static func checkAll(_ engine: Engine, _ values: [[UInt8]], _ tag: String) throws {
        for (i, value) in values.enumerated() where try engine.get(key(i), in: "m") != value {
            Issue.record("\(tag): key \(i) reads back wrong")
            return
        }
        var scanned = 0
        try engine.snapshot().forEach(in: "m") { _ in scanned += 1; return true }
        #expect(scanned == values.count, "\(tag): the scan sees every record")
    }

    /// The ids of the open segments that are (not) mapped.
    static func mapping(_ engine: Engine) -> (mapped: [UInt64], unmapped: [UInt64]) {
        let files = engine.core.currentState().segments.values.sorted { $0.id < $1.id }
        let mapped = files.filter { file in file.mapping.withCurrent { $0 != nil } }.map(\.id)
        return (mapped, files.map(\.id).filter { !mapped.contains($0) })
    }

    @Test("reads through the mapping match across roll, reopen and compaction; the option off maps nothing")
    func roundTrip() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            var values = try Self.write(engine, count: 3_000, seed: 1)
            #expect(engine.core.currentState().manifest.segments.filter(\.sealed).count >= 2, "the writes rolled")
            #expect(Self.mapping(engine).unmapped.isEmpty, "sealed and active segments are mapped")
            try Self.checkAll(engine, values, "after writing")

            // Overwrite a third (dead records for compaction), then reopen and compact.
            var rng = SplitMix64(seed: 2)
            for start in stride(from: 0, to: 1_000, by: 10) {
                var batch = WriteBatch()
                for i in start..<start + 10 {
                    values[i] = rng.bytes(700)
                    batch.put(values[i], forKey: Self.key(i), in: "m")
                }
                try engine.commitAndWait(batch)
            }
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options())
            #expect(Self.mapping(engine).unmapped.isEmpty, "reopen maps every segment")
            try Self.checkAll(engine, values, "after reopen")
            try engine.sealActiveSegment()
            let summary = try engine.compactAndWait()
            #expect(!summary.inputSegments.isEmpty, "the compaction ran")
            #expect(Self.mapping(engine).unmapped.isEmpty, "compaction outputs are mapped")
            try Self.checkAll(engine, values, "after compaction")
            let report = try engine.verify(); #expect(report.ok, "\(report)")
            try engine.close()

            engine = try Engine.open(at: dir, options: Self.options(mapped: false))
            #expect(Self.mapping(engine).mapped.isEmpty, "with the option off nothing is mapped")
            try Self.checkAll(engine, values, "pread after mapped writes")
        }
    }

    @Test("a mapped page whose header claims bytes past the end of the file is corruption, not a read past it")
    func damagedHeaderStaysInsideTheFile() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            _ = try Self.write(engine, count: 1_500, seed: 3)
            let state = engine.core.currentState()
            let sealed = try #require(state.manifest.segments.first { $0.sealed })
            let file = try #require(state.segments[sealed.id])
            #expect(file.mapping.withCurrent { $0 != nil })
            // The record whose page starts last in the sealed segment: its page ends exactly at the sealed length.
            let primary = try #require(state.keyspaces["m"]?.primary)
            var last: (index: Int, location: RecordLocation)?
            for i in 0..<1_500 {
                guard let location = primary.value(forKey: Self.key(i)), UInt64(location.segment) == sealed.id else { continue }
                if last == nil || location.pageOffset > last!.location.pageOffset { last = (i, location) }
            }
            let target = try #require(last)
            let pageOffset = UInt64(target.location.pageOffset)
            let fitting = sealed.sealedLength - pageOffset - UInt64(Format.pageHeaderLength)

            // storedLength (header bytes 16..<20) one byte longer than what the file holds after the header.
            let handle = try PosixFileSystem().openFile(at: file.path, mode: .readWrite(create: false))
            defer { try? handle.close() }
            let original = try handle.read(at: pageOffset + 16, count: 4)
            var stored = UInt32(fitting + 1)
            try handle.write(withUnsafeBytes(of: &stored) { Array($0) }, at: pageOffset + 16)
            do {
                _ = try engine.get(Self.key(target.index), in: "m")
                Issue.record("a header claiming bytes past the file must fail")
            } catch let error as LucidError {
                #expect(error.code == .corruption)
                #expect(error.file == file.path && error.offset == pageOffset, "names the file and page: \(error)")
            }

            // Header restored, one payload byte flipped: the checksum fails, as through pread. (Before any read of
            // the page succeeds: a mapped page checked once is not checked again.)
            try handle.write(original, at: pageOffset + 16)
            let payloadByte = pageOffset + UInt64(Format.pageHeaderLength) + 5
            let byte = try handle.read(at: payloadByte, count: 1)
            try handle.write([byte[0] ^ 0x10], at: payloadByte)
            do {
                _ = try engine.get(Self.key(target.index), in: "m")
                Issue.record("a flipped payload byte must fail its checksum")
            } catch let error as LucidError {
                #expect(error.code == .corruption && error.file == file.path && error.offset == pageOffset, "\(error)")
            }
            try handle.write(byte, at: payloadByte)
            #expect(try engine.get(Self.key(target.index), in: "m") != nil, "restored, the page reads again")
        }
    }

    @Test("a page that ends past the active segment's mapping is read with pread, not refused; sealed, it is mapped anew",
          arguments: [EngineOptions.PageCompression.lz4, .none])
    func pageAcrossTheMappingsEnd(compression: EngineOptions.PageCompression) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(compression: compression))
            defer { try? engine.close() }
            // One group of about 1.5 MiB: the active segment's mapping (1.25 × 1 MiB) ends inside one of its pages.
            var rng = SplitMix64(seed: 7)
            var batch = WriteBatch()
            var values: [[UInt8]] = []
            for i in 0..<1_700 {
                values.append(rng.bytes(900))
                batch.put(values[i], forKey: Self.key(i), in: "m")
            }
            try engine.commitAndWait(batch)
            let active = try #require(engine.core.currentState().segments[engine.core.currentState().activeSegment])
            let capacity = active.mapping.withCurrent { $0?.bytes.count ?? 0 }
            #expect(capacity > 0 && UInt64(capacity) < active.readableEnd.load(ordering: .relaxed),
                    "the group ends past the mapping")
            try Self.checkAll(engine, values, "one large group")
            // Sealed, the segment is longer than its mapping: a second mapping replaces it, with pages to check anew.
            try engine.sealActiveSegment()
            let sealed = try #require(engine.core.currentState().segments[active.id])
            #expect(sealed.mapping.withCurrent { $0?.bytes.count ?? 0 } > capacity, "mapped again, whole")
            try Self.checkAll(engine, values, "after the seal")
            try Self.checkAll(engine, values, "read again")
        }
    }

    @Test("readers of the mapped active segment see every acknowledged record while the writer appends and rolls",
          arguments: [EngineOptions.PageCompression.lz4, .none])
    func readersDuringWrites(compression: EngineOptions.PageCompression) async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(compression: compression))
            defer { try? engine.close() }
            let acknowledged = AcknowledgedCount()
            let total = 4_000
            let value: @Sendable (Int) -> [UInt8] = { i in (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) } }
            try await withThrowingTaskGroup(of: Int.self) { group in
                group.addTask {
                    for i in 0..<total {
                        var batch = WriteBatch()
                        batch.put(value(i), forKey: Self.key(i), in: "m")
                        try engine.commitAndWait(batch)
                        acknowledged.value.store(i + 1, ordering: .releasing)
                    }
                    return 0
                }
                for reader in 0..<2 {
                    group.addTask {
                        var rng = SplitMix64(seed: UInt64(10 + reader))
                        var wrong = 0
                        while acknowledged.value.load(ordering: .acquiring) < total {
                            let upTo = acknowledged.value.load(ordering: .acquiring)
                            guard upTo > 0 else { continue }
                            let i = Int(rng.next() % UInt64(upTo))
                            if try engine.get(Self.key(i), in: "m") != value(i) { wrong += 1 }
                        }
                        return wrong
                    }
                }
                var wrong = 0
                for try await count in group { wrong += count }
                #expect(wrong == 0, "every read of an acknowledged record returns it")
            }
            #expect(engine.core.currentState().manifest.segments.filter(\.sealed).count >= 1, "the writer rolled")
            #expect(Self.mapping(engine).unmapped.isEmpty)
        }
    }
}

/// How many records the writer has acknowledged, shared with the reader tasks.
private final class AcknowledgedCount: Sendable {
    let value = Atomic<Int>(0)
}
