import Foundation
import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// Compaction keeps the logical contents exactly (values, sequences' winners, deletions, indexes), across
/// reopen from a checkpoint and from a full scan, and frees the space of dead records.
@Suite("Compaction")
struct CompactionTests {
    typealias Dump = CheckpointTests.Dump

    static var options: EngineOptions {
        var options = CheckpointTests.options
        options.autoCompaction = nil
        options.logger = EngineTest.quietLogger
        return options
    }

    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    static func put(_ value: String, _ key: String) -> WriteBatch {
        var b = WriteBatch()
        b.put(bytes(value), forKey: bytes(key), in: "t")
        return b
    }

    /// The state after reopening `directory` with its checkpoint and, on a copy without it, from a full scan.
    static func reopenBothWays(_ directory: String) throws -> (checkpoint: Dump, scan: Dump) {
        let engine = try Engine.open(at: directory, options: options)
        let viaCheckpoint = try CheckpointTests.dump(engine)
        #expect(try engine.verify().ok)
        try engine.close()
        let scanned = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-scan")
        defer { try? CorruptionHelpers.removeDirectory(scanned) }
        try CorruptionHelpers.copyDirectory(from: directory, to: scanned)
        try? FileManager.default.removeItem(atPath: scanned + "/CHECKPOINT")
        let full = try Engine.open(at: scanned, options: options)
        #expect(!full.recoveryReport.checkpointUsed)
        let viaScan = try CheckpointTests.dump(full)
        #expect(try full.verify().ok)
        try full.close()
        return (viaCheckpoint, viaScan)
    }

    static func segmentIds(_ engine: Engine) -> [UInt64] { engine.core.currentState().manifest.segments.map(\.id) }
    static func sealedIds(_ engine: Engine) -> [UInt64] {
        engine.core.currentState().manifest.segments.filter(\.sealed).map(\.id)
    }

    @Test("a full compaction keeps every record and index entry, removes its inputs and shrinks the store")
    func fullCompaction() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        try CheckpointTests.populate(engine, rounds: 40, seed: 3)
        try engine.sealActiveSegment()
        let before = try CheckpointTests.dump(engine)
        let inputs = Self.sealedIds(engine)
        #expect(inputs.count > 2)
        let progress = ProgressLog()
        let summary = try engine.compactAndWait(CompactionOptions(progress: { progress.add($0) }))
        #expect(summary.inputSegments == inputs)
        #expect(!summary.outputSegments.isEmpty)
        #expect(summary.recordsMoved == before.records.values.reduce(0) { $0 + $1.count })
        #expect(summary.tombstonesKept == 0, "a compaction from the start of the log drops every deletion")
        #expect(summary.bytesAfter < summary.bytesBefore)
        #expect(progress.last?.bytesDone == progress.last?.bytesTotal)
        #expect(try CheckpointTests.dump(engine) == before)
        #expect(try engine.verify().ok)
        for id in inputs {
            #expect(!FileManager.default.fileExists(atPath: directory + "/" + Format.segmentFileName(id)))
        }
        let stats = try engine.storeStatistics()
        #expect(stats.segments.filter { $0.kind == .compacted }.map(\.id) == summary.outputSegments)
        #expect(stats.keyspaces.map(\.name) == ["authors", "books"])
        try engine.close()
        let (checkpoint, scan) = try Self.reopenBothWays(directory)
        #expect(checkpoint == before)
        #expect(scan == before)
    }

    @Test("a compaction into several output segments verifies, and reopens with and without its checkpoint")
    func severalOutputs() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-outputs")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        var rng = SplitMix64(seed: 41)
        // About 2.6 MiB of live data: three 1 MiB outputs.
        try Self.putIncompressible(engine, 0..<3_000, &rng)
        try engine.sealActiveSegment()
        let before = try CheckpointTests.dump(engine)
        let summary = try engine.compactAndWait()
        #expect(summary.outputSegments.count >= 2, "the live data needs several output segments")
        try Self.verifyCloseAndReopenBothWays(engine, directory, expecting: before)
    }

    /// Puts keys `k<i>` for `range` with incompressible 900-byte values, in batches of 10.
    static func putIncompressible(_ engine: Engine, _ range: Range<Int>, _ rng: inout SplitMix64) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: 10) {
            var batch = WriteBatch()
            for i in start..<min(start + 10, range.upperBound) { batch.put(rng.bytes(900), forKey: bytes("k\(i)"), in: "t") }
            try engine.commitAndWait(batch)
        }
    }

    /// `verify()` is clean, then after closing, both ways of reopening (`reopenBothWays`) show `before`.
    static func verifyCloseAndReopenBothWays(_ engine: Engine, _ directory: String, expecting before: Dump) throws {
        let report = try engine.verify()
        #expect(report.ok, "\(report.problems)")
        try engine.close()
        let (checkpoint, scan) = try reopenBothWays(directory)
        #expect(checkpoint == before)
        #expect(scan == before)
    }

    @Test("compacting the last output of a compaction with the log after it verifies and reopens without checkpoint")
    func recompactionOfTheLastOutput() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-again")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        var rng = SplitMix64(seed: 43)
        try Self.putIncompressible(engine, 0..<3_000, &rng)
        try engine.sealActiveSegment()
        let first = try engine.compactAndWait()
        #expect(first.outputSegments.count >= 2)
        try Self.putIncompressible(engine, 3_000..<3_200, &rng)
        try engine.sealActiveSegment()
        // The last output and the log segment after it: the new output replaces the log from inside the stretch
        // the first compaction's outputs replaced, to past its end.
        let manifest = engine.core.currentState().manifest
        let lastOutput = try #require(first.outputSegments.last)
        let position = try #require(manifest.position(of: lastOutput))
        _ = try engine.compactAndWait(CompactionOptions(segments: [lastOutput, manifest.segments[position + 1].id]))
        try Self.verifyCloseAndReopenBothWays(engine, directory, expecting: try CheckpointTests.dump(engine))
    }

    @Test("a deletion survives the compaction of its segment alone while an older segment holds the value")
    func tombstoneResurrection() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-tomb")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        _ = try engine.commitAndWait({ var b = WriteBatch(); b.put(Self.bytes("v1"), forKey: Self.bytes("k"), in: "t"); b.put(Self.bytes("x"), forKey: Self.bytes("other"), in: "t"); return b }())
        try engine.sealActiveSegment()
        let first = Self.sealedIds(engine)
        _ = try engine.commitAndWait({ var b = WriteBatch(); b.delete(Self.bytes("k"), in: "t"); return b }())
        try engine.sealActiveSegment()
        let second = Self.sealedIds(engine).filter { !first.contains($0) }
        #expect(second.count == 1)
        let summary = try engine.compactAndWait(CompactionOptions(segments: second))
        #expect(summary.tombstonesKept == 1)
        #expect(try engine.get(Self.bytes("k"), in: "t") == nil)
        try engine.close()
        let (checkpoint, scan) = try Self.reopenBothWays(directory)
        #expect(checkpoint.records["t"]?.map(\.key) == [Self.bytes("other")])
        #expect(scan.records["t"]?.map(\.key) == [Self.bytes("other")], "k came back from the older segment")

        // Compacting from the start of the log may drop the deletion: nothing older is left.
        let again = try Engine.open(at: directory, options: Self.options)
        let all = try again.compactAndWait()
        #expect(all.tombstonesKept == 0)
        #expect(try again.get(Self.bytes("k"), in: "t") == nil)
        try again.close()
        let (c2, s2) = try Self.reopenBothWays(directory)
        #expect(c2.records["t"]?.map(\.key) == [Self.bytes("other")])
        #expect(s2.records["t"]?.map(\.key) == [Self.bytes("other")])
    }

    @Test("keys resolve by sequence, not by file: an older value copied into a newer file never wins")
    func sequenceOverFileOrder() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-seq")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        // The issue's case: put k=v1, roll, put k=v2, roll, compact the older segment.
        _ = try engine.commitAndWait(Self.put("v1", "k"))
        try engine.sealActiveSegment()
        let older = Self.sealedIds(engine)
        _ = try engine.commitAndWait(Self.put("v2", "k"))
        try engine.sealActiveSegment()
        let summary = try engine.compactAndWait(CompactionOptions(segments: older))
        #expect(summary.recordsMoved == 0, "k=v1 is dead: nothing of the older segment is copied")
        #expect(try engine.get(Self.bytes("k"), in: "t") == Self.bytes("v2"))

        // The harder case: the compaction copies k=v1 (live when it started) into a file with a higher id than
        // the active segment, and k=v2 is committed to the active segment before the swap.
        _ = try engine.commitAndWait(Self.put("w1", "j"))
        try engine.sealActiveSegment()
        let committer = engine
        var hooked = CompactionOptions()
        hooked.beforeSwap = {
            _ = try? committer.commitAndWait({ var b = WriteBatch(); b.put(Self.bytes("w2"), forKey: Self.bytes("j"), in: "t"); return b }())
        }
        let swapped = try engine.compactAndWait(hooked)
        let active = engine.core.currentState().activeSegment
        #expect(swapped.outputSegments.allSatisfy { $0 > active }, "outputs must have newer ids than the active segment")
        #expect(try engine.get(Self.bytes("j"), in: "t") == Self.bytes("w2"))
        #expect(try engine.verify().ok)
        try engine.close()
        let (checkpoint, scan) = try Self.reopenBothWays(directory)
        for dump in [checkpoint, scan] {
            #expect(dump.records["t"] == [KeyValue(key: Self.bytes("j"), value: Self.bytes("w2")),
                                          KeyValue(key: Self.bytes("k"), value: Self.bytes("v2"))])
        }
    }

    @Test("a snapshot taken before a compaction reads its old values after the inputs are removed")
    func snapshotSurvivesCompaction() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-snap")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        try CheckpointTests.populate(engine, rounds: 20, seed: 5)
        try engine.sealActiveSegment()
        let snapshot = engine.snapshot()
        let old = try snapshot.scan(in: "books")
        // Overwrite and delete some keys, then compact everything sealed.
        var batch = WriteBatch()
        for kv in old.prefix(50) { batch.put(Self.bytes("new"), forKey: kv.key, in: "books") }
        for kv in old.dropFirst(50).prefix(50) { batch.delete(kv.key, in: "books") }
        _ = try engine.commitAndWait(batch)
        let inputs = Self.sealedIds(engine)
        _ = try engine.compactAndWait()
        for id in inputs {
            #expect(!FileManager.default.fileExists(atPath: directory + "/" + Format.segmentFileName(id)))
        }
        // Evict what the cache holds so the reads really go to the (unlinked) input files.
        for id in inputs { engine.core.cache.removeAll(segment: id) }
        #expect(try snapshot.scan(in: "books") == old)
        for kv in old.prefix(120) { #expect(try snapshot.get(kv.key, in: "books") == kv.value) }
        #expect(try engine.get(old[0].key, in: "books") == Self.bytes("new"))
        #expect(try engine.get(old[60].key, in: "books") == nil)
        try engine.close()
    }

    @Test("after a full compaction the segments take at most 1.1 times the compressed size of the live data")
    func spaceBound() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-space")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        var options = Self.options
        options.pageSize = 16 << 10
        // Whole LZ4HC pages, as the ideal below is packed (records compressed one by one are larger for records as
        // short and repetitive as these: docs/FORMAT.md, "Records compressed one by one").
        options.pageCompression = .lz4
        let engine = try Engine.open(at: directory, options: options)
        // Every key written 4 times, a quarter deleted at the end: ~80% of the log is dead.
        var random = EngineTest.SplitMix64(seed: 42)
        for round in 0..<4 {
            var batch = WriteBatch()
            for i in 0..<4000 {
                let words = (0..<(8 + i % 24)).map { _ in ["alpha", "beta", "gamma", "delta", "omega"][Int(random.next() % 5)] }
                batch.put(Self.bytes("{\"round\":\(round),\"text\":\"\(words.joined(separator: " "))\"}"),
                          forKey: Self.bytes(String(format: "key-%06d", i)), in: "docs",
                          indexTerms: [IndexTerm(index: "len", value: .int(Int64(i % 24)))])
                if batch.count == 500 { _ = try engine.commitAndWait(batch); batch = WriteBatch() }
            }
            if batch.count > 0 { _ = try engine.commitAndWait(batch) }
        }
        var deletes = WriteBatch()
        for i in stride(from: 0, to: 4000, by: 4) { deletes.delete(Self.bytes(String(format: "key-%06d", i)), in: "docs") }
        _ = try engine.commitAndWait(deletes)
        try engine.sealActiveSegment()
        _ = try engine.compactAndWait()

        // The ideal: the live records alone, packed into full compressed pages.
        var ideal = PageBuilder(pageSize: options.pageSize, salt: 1, firstLSN: 1, syncedLSN: 0, mode: .compacted,
                                compressionLevel: options.compactionCompressionLevel)
        let snapshot = engine.snapshot()
        let state = engine.core.currentState()
        for kv in try snapshot.scan(in: "docs") {
            let location = state.keyspaces["docs"]!.primary.value(forKey: kv.key)!
            let terms = try PageFetch.terms(at: location, file: state.segments[UInt64(location.segment)],
                                            cache: engine.core.cache, storePath: directory)
            ideal.append(WriteBatch.Operation(kind: .put, keyspace: "docs", key: kv.key, value: kv.value,
                                              terms: terms), sequence: location.sequence)
        }
        ideal.finish()
        let idealBytes = Double(ideal.drainedBytes + ideal.output.count)
        let stats = try engine.storeStatistics()
        let segmentBytes = Double(stats.segments.reduce(0) { $0 + $1.bytes })
        #expect(segmentBytes <= 1.1 * idealBytes, "segments \(segmentBytes) B, live data compressed \(idealBytes) B")
        try engine.close()
    }

    @Test("compaction's LZ4HC pages are smaller than the fast compressor's and read back under any level")
    func compressionLevels() throws {
        var sizes: [Int: UInt64] = [:]
        var dumps: [Int: [KeyValue]] = [:]
        for level in [0, 9] {
            let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-level")
            defer { try? CorruptionHelpers.removeDirectory(directory) }
            var options = Self.options
            options.pageCompression = .lz4   // the level applies to whole pages
            options.compactionCompressionLevel = level
            let engine = try Engine.open(at: directory, options: options)
            var random = EngineTest.SplitMix64(seed: 7)
            var batch = WriteBatch()
            for i in 0..<3000 {
                let words = (0..<(6 + i % 20)).map { _ in ["title", "genre", "rating", "scifi", "essay"][Int(random.next() % 5)] }
                batch.put(Self.bytes("{\"id\":\(i),\"text\":\"\(words.joined(separator: " "))\"}"),
                          forKey: Self.bytes(String(format: "k%08x", random.next() & 0xFFFF_FFFF)), in: "docs")
            }
            _ = try engine.commitAndWait(batch)
            try engine.sealActiveSegment()
            let summary = try engine.compactAndWait()
            sizes[level] = summary.outputBytes
            try engine.close()
            // The level is not recorded: a store compacted at one level opens and verifies under another.
            options.compactionCompressionLevel = 9 - level
            let reopened = try Engine.open(at: directory, options: options)
            #expect(try reopened.verify().ok)
            dumps[level] = try reopened.snapshot().scan(in: "docs")
            try reopened.close()
        }
        #expect(dumps[0]!.count == 3000 && dumps[0] == dumps[9])
        #expect(sizes[9]! < sizes[0]! * 95 / 100, "LZ4HC \(sizes[9]!) B, fast LZ4 \(sizes[0]!) B")
        var bad = Self.options
        bad.compactionCompressionLevel = 13
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-level-bad")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        _ = EngineTest.expectLucidError(.invalidArgument) { _ = try Engine.open(at: directory, options: bad) }
    }

    @Test("writers and readers go on during a compaction; the result matches a model")
    func onlineCompaction() async throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-online")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        try CheckpointTests.populate(engine, rounds: 30, seed: 9)
        try engine.sealActiveSegment()
        var model: [[UInt8]: [UInt8]] = [:]
        for kv in try engine.scan(in: "books") { model[kv.key] = kv.value }
        let compaction = Task { try await engine.compact() }
        var random = EngineTest.SplitMix64(seed: 7)
        for step in 0..<300 {
            let key = Self.bytes("k\(random.next() % 3000)")
            if random.next() % 4 == 0 {
                _ = try await engine.delete(key, in: "books")
                model[key] = nil
            } else {
                let value = Self.bytes("step-\(step)")
                _ = try await engine.put(value, forKey: key, in: "books")
                model[key] = value
            }
            if step % 50 == 0 { try engine.sealActiveSegment() }
            let probe = Self.bytes("k\(random.next() % 3000)")
            #expect(try engine.get(probe, in: "books") == model[probe])
        }
        let summary = try await compaction.value
        #expect(summary.recordsMoved > 0)
        let actual = Dictionary(uniqueKeysWithValues: try engine.scan(in: "books").map { ($0.key, $0.value) })
        #expect(actual == model)
        #expect(try engine.verify().ok)
        // A second compaction over everything sealed so far (outputs of the first included).
        try engine.sealActiveSegment()
        _ = try await engine.compact()
        let after = Dictionary(uniqueKeysWithValues: try engine.scan(in: "books").map { ($0.key, $0.value) })
        #expect(after == model)
        try engine.close()
        let (checkpoint, scan) = try Self.reopenBothWays(directory)
        #expect(checkpoint == scan)
        #expect(Dictionary(uniqueKeysWithValues: (checkpoint.records["books"] ?? []).map { ($0.key, $0.value) }) == model)
    }

    @Test("invalid compaction requests are refused with invalidArgument")
    func invalidRequests() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-bad")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        for i in 0..<3 {
            _ = try engine.commitAndWait(Self.put("v\(i)", "k\(i)"))
            try engine.sealActiveSegment()
        }
        let sealed = Self.sealedIds(engine)
        let active = engine.core.currentState().activeSegment
        _ = EngineTest.expectLucidError(.invalidArgument) { _ = try engine.compactAndWait(CompactionOptions(segments: [active])) }
        _ = EngineTest.expectLucidError(.invalidArgument) { _ = try engine.compactAndWait(CompactionOptions(segments: [sealed[0], sealed[2]])) }
        _ = EngineTest.expectLucidError(.invalidArgument) { _ = try engine.compactAndWait(CompactionOptions(segments: [999])) }
        #expect(try engine.compactAndWait(CompactionOptions(segments: [])).inputSegments.isEmpty)
        try engine.close()
        _ = EngineTest.expectLucidError(.closed) { _ = try engine.compactAndWait() }
    }

    @Test("automatic compaction starts once the dead share passes the ratio, and can be turned off", .heavy)
    func automaticCompaction() throws {
        for enabled in [true, false] {
            let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "compact-auto")
            defer { try? CorruptionHelpers.removeDirectory(directory) }
            var options = Self.options
            options.autoCompaction = enabled ? AutoCompactionPolicy(deadRatio: 0.5, minimumSealedBytes: 2 << 20) : nil
            let engine = try Engine.open(at: directory, options: options)
            // The same 200 keys rewritten over and over: almost everything sealed is dead.
            var random = EngineTest.SplitMix64(seed: 11)
            for round in 0..<60 {
                var batch = WriteBatch()
                for i in 0..<200 {
                    let value = (0..<400).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                    batch.put(value, forKey: Self.bytes("k\(i)"), in: "t")
                }
                _ = try engine.commitAndWait(batch)
                _ = round
            }
            // Let a background compaction finish (it holds the compaction lock while it runs).
            engine.core.compactionLock.withLock { _ in }
            var waited = 0
            while engine.core.autoCompaction.running.load(ordering: .acquiring) && waited < 200 {
                Thread.sleep(forTimeInterval: 0.05)
                waited += 1
            }
            let kinds = engine.core.currentState().manifest.segments.map(\.kind)
            #expect(kinds.contains(.compacted) == enabled)
            #expect(engine.count(in: "t") == 200)
            #expect(try engine.verify().ok)
            try engine.close()
        }
    }
}

/// Collects progress reports from the compaction thread.
final class ProgressLog: Sendable {
    private let reports = Mutex<[CompactionProgress]>([])
    func add(_ p: CompactionProgress) { reports.withLock { $0.append(p) } }
    var last: CompactionProgress? { reports.withLock { $0.last } }
}
