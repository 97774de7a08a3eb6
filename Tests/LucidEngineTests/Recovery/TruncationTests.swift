import Foundation
import Testing
@testable import LucidEngine

/// FORMAT.md "Recovery" 4–6: a torn tail of the active segment is cut back to the end of the last complete commit
/// group, the cut is reported exactly, and recovery is idempotent. The length of the active segment at each
/// acknowledged commit (sync mode always) is a commit boundary; truncating the file at any byte must recover
/// exactly the state of the last batch whose end is at or before the cut.
@Suite("Recovery: truncation at every byte")
struct TruncationTests {
    static let keyspaces = ["t1", "t2"]

    /// Writes the workload, returning the model after each batch and the active segment's length after each
    /// commit (index 0: the empty store).
    static func writeWorkload(dir: String, seed: UInt64,
                              compression: EngineOptions.PageCompression) throws -> (models: [EngineTest.Model], boundaries: [Int]) {
        var rng = EngineTest.SplitMix64(seed: seed)
        let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .always, compression: compression))
        defer { try? engine.close() }
        let segment = try EngineTest.activeSegmentPath(dir)
        var models = [EngineTest.Model()]
        // Commit boundaries are where the log ends (the file may go on with filler while the engine is open).
        var boundaries = [EngineTest.logLengths(engine, dir: dir)[segment]!]
        func key(_ i: Int) -> [UInt8] { Array("key-\(i)".utf8) }

        var batches: [[EngineTest.Op]] = []
        // Small batches first: puts, overwrites, deletes (also of missing keys).
        for _ in 0..<8 {
            var ops: [EngineTest.Op] = []
            for _ in 0..<rng.int(1...4) {
                let ks = keyspaces[rng.int(0..<2)]
                if rng.chance(0.25) {
                    ops.append(.delete(keyspace: ks, key: key(rng.int(0..<12))))
                } else {
                    ops.append(.put(keyspace: ks, key: key(rng.int(0..<12)), value: rng.bytes(rng.int(0...200))))
                }
            }
            batches.append(ops)
        }
        // A group of two pages of incompressible values.
        batches.append([.put(keyspace: "t1", key: key(3), value: rng.bytes(1_500)),
                        .put(keyspace: "t1", key: key(4), value: rng.bytes(1_500)),
                        .put(keyspace: "t2", key: key(5), value: rng.bytes(1_500))])
        // Then a small record followed by one larger than a page (two pages, the second of its own)...
        batches.append([.put(keyspace: "t1", key: key(1), value: rng.bytes(20)),
                        .put(keyspace: "t2", key: key(2), value: rng.bytes(4_120))])
        // ...a delete and an overwrite in one small page...
        batches.append([.delete(keyspace: "t1", key: key(3)), .put(keyspace: "t2", key: key(2), value: [7, 7])])
        // ...a compressed page plus a delete of a missing key...
        batches.append([.put(keyspace: "t1", key: key(6), value: rng.compressibleBytes(3_000)),
                        .delete(keyspace: "t2", key: Array("never-written".utf8))])
        // ...and a few small records, one of them with an empty key and an empty value.
        batches.append([.put(keyspace: "t2", key: [], value: []), .put(keyspace: "t1", key: key(7), value: rng.bytes(90)),
                        .put(keyspace: "t1", key: key(8), value: rng.bytes(60)), .delete(keyspace: "t1", key: key(1))])

        for ops in batches {
            try engine.commitAndWait(EngineTest.batch(ops))
            models.append(models.last!.applying(ops))
            boundaries.append(EngineTest.logLengths(engine, dir: dir)[segment]!)
        }
        return (models, boundaries)
    }

    /// Every byte of the log is cut, from its first group on (with records compressed one by one, `.lz4Records`, it
    /// starts with the segment's dictionary page).
    @Test("truncating the active segment at every byte recovers the last complete group",
          .heavy,
          arguments: [EngineOptions.PageCompression.lz4, .lz4Records])
    func truncationAtEveryByte(compression: EngineOptions.PageCompression) throws {
        let seed: UInt64 = 0x7A11_0C0D
        try EngineTest.withTemporaryDirectory { root in
            let source = root + "/source"
            let (models, boundaries) = try Self.writeWorkload(dir: source, seed: seed, compression: compression)
            try EngineTest.removeCheckpoints(source)
            #expect(boundaries == boundaries.sorted(), "boundaries grow")
            let segmentName = URL(fileURLWithPath: try EngineTest.activeSegmentPath(source)).lastPathComponent
            let original = try EngineTest.readFile(source + "/" + segmentName)
            #expect(original.count == boundaries.last!, "the closed store ends at the last commit boundary")
            let pages = EngineTest.pages(ofSegment: original)
            #expect(pages.last?.end == original.count, "the segment parses into whole pages")
            #expect(pages.contains { !$0.isCommit }, "the workload has multi-page groups")
            if compression == .lz4Records {
                #expect(pages.prefix(2).map(\.type) == [Format.pageTypeDictionary, Format.pageTypeDictionary]
                        && pages.first?.isGroupStart == true && pages[1].isGroupStart == false,
                        "the first group starts with the dictionary and its copy")
                let allRecordPages = pages.dropFirst(2).allSatisfy { $0.hasCompressedRecords }
                #expect(allRecordPages, "every data page has compressed records")
            } else {
                #expect(pages.contains { $0.isCompressed }, "the workload has compressed pages")
            }

            let options = EngineTest.options(sync: .always, compression: compression)
            let start = boundaries[0]
            let failures = EngineTest.FailureLog()

            // Four workers, each with its own copy of the store, share the cut points (opens mostly wait on the
            // fdatasync of the cut, so they overlap well even on two cores).
            let workers = 4
            try (0..<workers).forEach { w in try EngineTest.copyDirectory(source, to: root + "/work\(w)") }
            DispatchQueue.concurrentPerform(iterations: workers) { w in
                let work = root + "/work\(w)"
                let segment = work + "/" + segmentName
                var k = start + w
                while k <= original.count, failures.count <= 10 {
                    do {
                        try Self.checkCut(at: k, workers: workers, original: original, segment: segment, work: work, options: options,
                                          models: models, boundaries: boundaries, pages: pages, seed: seed,
                                          failures: failures)
                    } catch {
                        failures.add("[seed \(seed) cut at \(k)] \(error)")
                    }
                    k += workers
                }
            }
            let failed = failures.all
            #expect(failed.isEmpty, "\(failed.prefix(10).joined(separator: "\n"))")
        }
    }

    /// Cuts the active segment of `work` at `k`, opens twice and checks everything against the model.
    static func checkCut(at k: Int, workers: Int, original: [UInt8], segment: String, work: String, options: EngineOptions,
                         models: [EngineTest.Model], boundaries: [Int], pages: [EngineTest.DiskPage], seed: UInt64,
                         failures: EngineTest.FailureLog) throws {
        func fail(_ message: String) { failures.add(message) }
        // Restore the cut file to `k` bytes: after the previous open it holds a prefix of `original`, so only the
        // missing bytes are written (and anything longer is cut).
        let current = try EngineTest.fileSize(segment)
        if current > k { try EngineTest.truncateFile(segment, to: k) }
        if current < k { try EngineTest.overwrite(segment, at: current, with: Array(original[current..<k])) }
        guard try EngineTest.readFile(segment) == Array(original[0..<k]) else {
            return fail("[seed \(seed) cut at \(k)] the segment no longer holds a prefix of the original")
        }
        let j = boundaries.lastIndex { $0 <= k }!
        let boundary = boundaries[j]
        let tag = "[seed \(seed) cut at \(k), boundary \(boundary)]"
        // Every other cut, the first open replays the whole log as FORMAT.md describes (no checkpoint, as after a
        // crash before any); otherwise it may start from the checkpoint the previous close wrote (which covers an
        // earlier boundary) and replay only the log after it. Both must cut the same tail. The second open may
        // start from the checkpoint written by the first close: again the same state, nothing dropped.
        if (k / workers) % 2 == 0 { try EngineTest.removeCheckpoints(work) }
        let engine: Engine
        do { engine = try Engine.open(at: work, options: options) } catch {
            return fail("\(tag) open failed: \(error)")
        }
        let report = engine.recoveryReport
        let expectedPages = pages.filter { $0.offset >= boundary && $0.offset < k }.count
        if report.droppedBytes != UInt64(k - boundary) {
            fail("\(tag) droppedBytes \(report.droppedBytes), expected \(k - boundary)")
        }
        if report.droppedPages != expectedPages {
            fail("\(tag) droppedPages \(report.droppedPages), expected \(expectedPages)")
        }
        if k > boundary && (report.truncatedAtOffset != UInt64(boundary) || report.truncatedFile != segment) {
            fail("\(tag) truncated \(String(describing: report.truncatedFile)) at \(String(describing: report.truncatedAtOffset))")
        }
        var diffs = try EngineTest.differences(engine, models[j], keyspaces: keyspaces)
        try engine.close()
        let length = try EngineTest.fileSize(segment)
        if length != boundary { fail("\(tag) file is \(length) bytes after open, expected \(boundary)") }

        let again = try Engine.open(at: work, options: options)
        if again.recoveryReport.droppedBytes != 0 || again.recoveryReport.droppedPages != 0 {
            fail("\(tag) second open dropped \(again.recoveryReport.droppedBytes) bytes")
        }
        diffs += try EngineTest.differences(again, models[j], keyspaces: keyspaces)
        let verify = try again.verify()
        if !verify.ok { fail("\(tag) verify: \(verify.problems)") }
        if verify.liveKeys != models[j].liveKeys { fail("\(tag) verify liveKeys \(verify.liveKeys)") }
        try again.close()
        if !diffs.isEmpty { fail("\(tag) state: \(diffs.prefix(4))") }
    }
}
