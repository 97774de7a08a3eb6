import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// Compaction interrupted at every file-system operation it performs, under every crash policy of the
/// FaultFileSystem, and failed (EIO) at every operation without a crash: the reopened store always has exactly
/// the contents it had before the compaction, verifies, keeps no orphan segment and never resurrects a key.
@Suite("Crash: compaction interrupted at every step")
struct CompactionCrashTests {
    static let path = "/db"

    static func options(_ fs: FaultFileSystem) -> EngineOptions {
        var o = EngineTest.options(sync: .always, segmentSize: 1 << 20)
        o.fileSystem = fs
        o.autoCompaction = nil
        return o
    }

    /// Three sealed segments and an active one: overwrites, deletions of keys whose values live in an earlier
    /// segment (so compacting segments 2...3 must keep tombstones), index terms.
    static func makeBase() throws -> (fs: FaultFileSystem, expected: CheckpointTests.Dump) {
        let fs = FaultFileSystem()
        let engine = try Engine.open(at: path, options: options(fs))
        func commit(_ body: (inout WriteBatch) -> Void) throws {
            var batch = WriteBatch()
            body(&batch)
            _ = try engine.commitAndWait(batch)
        }
        func put(_ b: inout WriteBatch, _ i: Int, _ round: Int) {
            b.put(Array("value-\(i)-round-\(round)-".utf8) + [UInt8](repeating: UInt8(i % 251), count: i % 90),
                  forKey: Array(String(format: "key-%04d", i).utf8), in: i % 4 == 0 ? "authors" : "books",
                  indexTerms: [IndexTerm(index: "round", value: .int(Int64(round))),
                               IndexTerm(index: "mod", value: .int(Int64(i % 5)))])
        }
        for chunk in 0..<3 { try commit { b in for i in (chunk * 100)..<(chunk * 100 + 100) { put(&b, i, 1) } } }
        try engine.sealActiveSegment()
        try commit { b in for i in stride(from: 0, to: 300, by: 2) { put(&b, i, 2) } }
        try commit { b in for i in stride(from: 1, to: 300, by: 6) { b.delete(Array(String(format: "key-%04d", i).utf8), in: i % 4 == 0 ? "authors" : "books") } }
        try engine.sealActiveSegment()
        try commit { b in for i in stride(from: 0, to: 300, by: 3) { put(&b, i, 3) } }
        try commit { b in for i in stride(from: 3, to: 300, by: 9) { b.delete(Array(String(format: "key-%04d", i).utf8), in: i % 4 == 0 ? "authors" : "books") } }
        try engine.sealActiveSegment()
        try commit { b in for i in 300..<320 { put(&b, i, 4) } }
        let expected = try CheckpointTests.dump(engine)
        try engine.close()
        return (fs, expected)
    }

    /// Reopens `fs`, checks contents, verify, orphans and idempotence.
    static func checkRecovered(_ fs: FaultFileSystem, expected: CheckpointTests.Dump, context: String) -> Bool {
        do {
            for attempt in 0..<2 {
                let engine = try Engine.open(at: path, options: options(fs))
                defer { try? engine.close() }
                let dump = try CheckpointTests.dump(engine)
                guard dump.records == expected.records, dump.indexes == expected.indexes else {
                    Issue.record("\(context), open \(attempt): contents differ from before the compaction")
                    return false
                }
                let report = try engine.verify()
                guard report.ok else {
                    Issue.record("\(context), open \(attempt): verify: \(report.problems.prefix(3))")
                    return false
                }
                let listed = Set(engine.core.currentState().manifest.segments.map { Format.segmentFileName($0.id) })
                let onDisk = Set(fs.fileNames(in: path).filter { $0.hasSuffix(".seg") })
                guard listed == onDisk else {
                    Issue.record("\(context), open \(attempt): segment files \(onDisk.sorted()) but the manifest names \(listed.sorted())")
                    return false
                }
            }
            return true
        } catch {
            Issue.record("\(context): reopen failed: \(error)")
            return false
        }
    }

    /// The sealed segments to compact: all of them, or the last two (not the start of the log: tombstones).
    static func inputs(_ engine: Engine, prefix: Bool) -> [UInt64] {
        let sealed = engine.core.currentState().manifest.segments.filter(\.sealed).map(\.id)
        return prefix ? sealed : Array(sealed.suffix(2))
    }

    @Test("a crash at every operation of a compaction, under every crash policy, keeps the contents",
          .heavy, arguments: [true, false])
    func crashAtEveryOperation(prefix: Bool) throws {
        let (base, expected) = try Self.makeBase()
        // Reference run: how many file-system operations the compaction takes.
        let reference = base.copy()
        let engine = try Engine.open(at: Self.path, options: Self.options(reference))
        let segments = Self.inputs(engine, prefix: prefix)
        reference.resetOperationCounts()
        let summary = try engine.compactAndWait(CompactionOptions(segments: segments))
        let operations = reference.totalOperationCount
        #expect(summary.tombstonesKept > 0 || prefix, "the non-prefix run must keep tombstones")
        try engine.close()
        #expect(Self.checkRecovered(reference, expected: expected, context: "uninterrupted"))
        #expect(operations > 10)

        var failures = 0
        for n in 1...(operations + 1) {
            for policy in FaultFileSystem.CrashPolicy.allCases {
                let fs = base.copy()
                let engine = try Engine.open(at: Self.path, options: Self.options(fs))
                fs.failOperation(Set(FaultFileSystem.Operation.allCases), nth: n, persistent: true)
                let outcome = Result { try engine.compactAndWait(CompactionOptions(segments: segments)) }
                if case .failure(let error) = outcome, (error as? LucidError) == nil {
                    Issue.record("crash at op \(n): untyped error \(error)")
                }
                try? engine.close()
                let crashed = fs.crash(policy: policy, seed: UInt64(n))
                if !Self.checkRecovered(crashed, expected: expected, context: "prefix \(prefix), crash at op \(n)/\(operations), \(policy)") {
                    failures += 1
                }
                if failures >= 3 { return }
            }
        }
    }

    /// Once (the next operation succeeds), or persistent until the test clears it: a disk that keeps failing
    /// fails the compaction, and whatever else ran meanwhile, without losing anything once it heals.
    @Test("an I/O error at any operation of a compaction fails it with a typed error and changes nothing", .heavy,
          arguments: [false, true])
    func errorAtEveryOperation(persistent: Bool) throws {
        let (base, expected) = try Self.makeBase()
        let reference = base.copy()
        let engine = try Engine.open(at: Self.path, options: Self.options(reference))
        let segments = Self.inputs(engine, prefix: false)
        reference.resetOperationCounts()
        _ = try engine.compactAndWait(CompactionOptions(segments: segments))
        let operations = reference.totalOperationCount
        try engine.close()

        var refusedAfterManifestFailure = 0
        for n in 1...operations {
            let fs = base.copy()
            let engine = try Engine.open(at: Self.path, options: Self.options(fs))
            fs.failOperation(Set(FaultFileSystem.Operation.allCases), nth: n, persistent: persistent)
            let outcome = Result { try engine.compactAndWait(CompactionOptions(segments: segments)) }
            if persistent {
                #expect(fs.injectedFaultCount >= 1, "op \(n): the fault never fired")
                fs.clearFaults()
            }
            // Whatever happened, the live engine still reads the same contents.
            let live = try CheckpointTests.dump(engine)
            #expect(live.records == expected.records && live.indexes == expected.indexes, "op \(n): live contents changed")
            if case .failure(let error) = outcome {
                #expect((error as? LucidError).map { [.io, .failedState].contains($0.code) } == true, "op \(n): \(error)")
                // Writes go on, unless the failure hit the manifest write (the commit point), which leaves the
                // engine refusing writes until reopened.
                do {
                    _ = try engine.commitAndWait({ var b = WriteBatch(); b.put([1], forKey: [1], in: "probe"); return b }())
                    var b = WriteBatch(); b.delete([1], in: "probe")
                    _ = try engine.commitAndWait(b)
                } catch let error as LucidError where error.code == .failedState {
                    refusedAfterManifestFailure += 1
                }
            }
            try? engine.close()
            #expect(Self.checkRecovered(fs, expected: expected,
                                        context: "\(persistent ? "persistent error" : "error") at op \(n)"))
        }
        #expect(refusedAfterManifestFailure >= 1, "a failed manifest write must stop writes")
    }
}
