import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// The engine's point index (`EngineOptions.pointIndex`) against its primary trees and a model: after commits of
/// every shape, compactions that move many or few records (and a write during one), reopens from a checkpoint and
/// from the log, and with the index turned off. Debug builds also compare every get's answer with the tree's
/// (`EngineCore.location(forKey:in:of:)`), so the rest of the suite checks the index too.
@Suite("Point index")
struct PointIndexTests {
    static let keyspaces = ["alpha", "beta", "γ"]

    /// The ways the index disagrees with the published trees, read under the state's lock once the build after
    /// open is done.
    static func problems(_ engine: Engine) -> [String] {
        engine.core.points.waitUntilBuilt()
        return engine.core.state.read { s in engine.core.points.checkInvariants(against: s) }
    }

    /// Keys of 0 to 24 bytes: a third longer than the index takes.
    static func keyPool(_ rng: inout SplitMix64) -> [[UInt8]] {
        var pool: Set<[UInt8]> = [[], [0], [0, 0], [UInt8](repeating: 0xAB, count: 16), [UInt8](repeating: 0xAB, count: 17)]
        while pool.count < 500 { pool.insert(rng.bytes(rng.chance(0.3) ? rng.int(17 ... 24) : rng.int(0 ... 16))) }
        return pool.sorted { $0.lexicographicallyPrecedes($1) }
    }

    static func options(pointIndex: Bool = true, segmentSize: UInt64? = nil) -> EngineOptions {
        var options = EngineTest.options(sync: .none, segmentSize: segmentSize)
        options.autoCompaction = nil
        options.pointIndex = pointIndex
        return options
    }

    static func shortKeys(_ model: EngineTest.Model) -> Int {
        model.spaces.values.reduce(0) { $0 + $1.keys.filter { PointTable.holds(keyLength: $0.count) }.count }
    }

    @Test("gets and lookUps follow puts, deletes, repeated keys, growths and reopens", arguments: [true, false])
    func followsCommits(pointIndex: Bool) throws {
        try EngineTest.withTemporaryDirectory { dir in
            var rng = SplitMix64(seed: 0x9017_1001)
            let pool = Self.keyPool(&rng)
            let options = Self.options(pointIndex: pointIndex)
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            var model = EngineTest.Model()
            for step in 0 ..< 120 {
                // Batches of 1 to 400 operations: large ones grow the tables, some repeat a key (published one by one).
                var ops: [EngineTest.Op] = []
                for _ in 0 ..< (rng.chance(0.2) ? rng.int(100 ... 400) : rng.int(1 ... 12)) {
                    let keyspace = rng.pick(Self.keyspaces), key = rng.pick(pool)
                    ops.append(rng.chance(0.7) ? .put(keyspace: keyspace, key: key, value: rng.bytes(rng.int(0 ... 40)))
                                               : .delete(keyspace: keyspace, key: key))
                }
                try engine.commitAndWait(EngineTest.batch(ops))
                model.apply(ops)
                if step % 10 == 9 {
                    let problems = Self.problems(engine)
                    #expect(problems.isEmpty, "step \(step): \(problems.prefix(5))")
                    let diffs = try EngineTest.differences(engine, model, absentKeys: pool, keyspaces: Self.keyspaces)
                    #expect(diffs.isEmpty, "step \(step): \(diffs.prefix(5))")
                    for keyspace in Self.keyspaces {
                        for key in pool.prefix(60) {
                            let lookup = try engine.lookUp(key, in: keyspace)
                            #expect(try engine.value(of: lookup) == model.spaces[keyspace]?[key], "step \(step): lookUp")
                        }
                    }
                    let statistics = engine.statistics
                    #expect(statistics.pointIndexKeys == (pointIndex ? Self.shortKeys(model) : 0), "step \(step)")
                    #expect((statistics.pointIndexBytes > 0) == pointIndex, "step \(step)")
                }
                if step % 40 == 39 {
                    // Reopen from the checkpoint close writes, or (every other time) by replaying the log.
                    try engine.close()
                    if step % 80 == 79 { try EngineTest.removeCheckpoints(dir) }
                    engine = try Engine.open(at: dir, options: options)
                    let problems = Self.problems(engine)
                    #expect(problems.isEmpty, "after reopen at step \(step): \(problems.prefix(5))")
                }
            }
            #expect(try EngineTest.differences(engine, model, absentKeys: pool, keyspaces: Self.keyspaces).isEmpty)
        }
    }

    @Test("compaction moves the index's records with the trees, whether it moves many or few")
    func compaction() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var rng = SplitMix64(seed: 0x9017_1002)
            let engine = try Engine.open(at: dir, options: Self.options(segmentSize: 1 << 20))
            defer { try? engine.close() }
            var model = EngineTest.Model()
            func commit(_ ops: [EngineTest.Op]) throws {
                try engine.commitAndWait(EngineTest.batch(ops))
                model.apply(ops)
            }
            func check(_ when: String) throws {
                let problems = Self.problems(engine)
                #expect(problems.isEmpty, "\(when): \(problems.prefix(5))")
                let diffs = try EngineTest.differences(engine, model, keyspaces: Self.keyspaces)
                #expect(diffs.isEmpty, "\(when): \(diffs.prefix(5))")
            }
            // "alpha": 6,000 keys in one sealed segment, all of them live when it is compacted (the relocated table
            // is built aside and installed).
            for start in stride(from: 0, to: 6_000, by: 500) {
                try commit((start ..< start + 500).map { .put(keyspace: "alpha", key: Array("a\($0)".utf8), value: rng.bytes(60)) })
            }
            try engine.sealActiveSegment()
            let many = try engine.compactAndWait()
            #expect(many.recordsMoved >= 6_000)
            try check("after compacting many")

            // "beta": 6,000 keys, then all but 100 written again in a later segment: compacting the first segment
            // moves 100 records (moved in place, in the exclusive section).
            let sealedBefore = Set(engine.core.currentState().manifest.segments.filter(\.sealed).map(\.id))
            for start in stride(from: 0, to: 6_000, by: 500) {
                try commit((start ..< start + 500).map { .put(keyspace: "beta", key: Array("b\($0)".utf8), value: rng.bytes(60)) })
            }
            try engine.sealActiveSegment()
            let first = engine.core.currentState().manifest.segments.filter { $0.sealed && !sealedBefore.contains($0.id) }
                .map(\.id)
            for start in stride(from: 100, to: 6_000, by: 500) {
                try commit((start ..< min(start + 500, 6_000)).map { .put(keyspace: "beta", key: Array("b\($0)".utf8), value: [1]) })
            }
            try engine.sealActiveSegment()
            let few = try engine.compactAndWait(CompactionOptions(segments: first))
            #expect(few.recordsMoved == 100)
            try check("after compacting few")

            // A key written again while a compaction runs keeps the writer's location, in the index as in the tree.
            try commit([.put(keyspace: "γ", key: [7], value: [1]), .put(keyspace: "γ", key: Array(repeating: 7, count: 20), value: [1])])
            try engine.sealActiveSegment()
            let committer = engine
            var hooked = CompactionOptions()
            hooked.beforeSwap = {
                var batch = WriteBatch()
                batch.put([2], forKey: [7], in: "γ")
                batch.put([2], forKey: Array(repeating: 7, count: 20), in: "γ")
                _ = try? committer.commitAndWait(batch)
            }
            _ = try engine.compactAndWait(hooked)
            model.apply([.put(keyspace: "γ", key: [7], value: [2]), .put(keyspace: "γ", key: Array(repeating: 7, count: 20), value: [2])])
            try check("after a write during a compaction")
            #expect(try engine.get([7], in: "γ") == [2])
        }
    }

    @Test("statistics count the keys of at most 16 bytes, and a closed engine's index is dropped")
    func statistics() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            var batch = WriteBatch()
            for i in 0 ..< 1_000 { batch.put([1], forKey: Array("key-\(i)".utf8), in: "ks") }
            for i in 0 ..< 10 { batch.put([1], forKey: Array("a key longer than sixteen bytes \(i)".utf8), in: "ks") }
            try engine.commitAndWait(batch)
            let statistics = engine.statistics
            #expect(statistics.pointIndexKeys == 1_000)
            #expect(statistics.pointIndexBytes >= 1_000 * MemoryLayout<PointTable.Slot>.stride)
            #expect(MemoryLayout<PointTable.Slot>.stride == 40)
            try engine.close()
            #expect(engine.core.points.statistics.keys == 0)
        }
    }

    @Test("keys longer than 16 bytes take no room in the index: at open, in commits, in compactions")
    func longKeysTakeNoRoom() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var engine = try Engine.open(at: dir, options: Self.options(segmentSize: 1 << 20))
            defer { try? engine.close() }
            for start in stride(from: 0, to: 20_000, by: 1_000) {
                var batch = WriteBatch()
                for i in start ..< start + 1_000 { batch.put([1], forKey: Array("a key of more than sixteen bytes \(i)".utf8), in: "long") }
                try engine.commitAndWait(batch)
            }
            #expect(engine.statistics.pointIndexBytes == 0, "after commits")
            try engine.sealActiveSegment()
            _ = try engine.compactAndWait()
            #expect(engine.statistics.pointIndexBytes == 0, "after a compaction")
            try engine.close()
            engine = try Engine.open(at: dir, options: Self.options(segmentSize: 1 << 20))
            #expect(Self.problems(engine).isEmpty)
            #expect(engine.statistics.pointIndexBytes == 0, "after the build at open")
            #expect(try engine.get(Array("a key of more than sixteen bytes 7".utf8), in: "long") == [1])
            // A first short key gets the keyspace a table of its own size.
            try engine.commitAndWait({ var b = WriteBatch(); b.put([2], forKey: [7], in: "long"); return b }())
            #expect(engine.statistics.pointIndexKeys == 1)
            #expect(engine.statistics.pointIndexBytes == PointTable.capacity(toHold: 1) * MemoryLayout<PointTable.Slot>.stride)
            #expect(Self.problems(engine).isEmpty)
            #expect(try engine.get([7], in: "long") == [2])
        }
    }

    @Test("an engine closed while its index is built, or at once, reopens whole")
    func closeDuringBuild() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var engine = try Engine.open(at: dir, options: Self.options())
            for start in stride(from: 0, to: 100_000, by: 10_000) {
                var batch = WriteBatch()
                for i in start ..< start + 10_000 { batch.put([UInt8(i & 0xFF)], forKey: Array("k\(i)".utf8), in: "ks") }
                try engine.commitAndWait(batch)
            }
            try engine.close()
            for _ in 0 ..< 3 {
                engine = try Engine.open(at: dir, options: Self.options())
                try engine.close()   // likely while the build runs: it stops, and close drops what it had
                #expect(engine.core.points.statistics.keys == 0)
            }
            engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            #expect(Self.problems(engine).isEmpty)
            #expect(engine.statistics.pointIndexKeys == 100_000)
            #expect(try engine.get(Array("k777".utf8), in: "ks") == [UInt8(777 & 0xFF)])
        }
    }

    @Test("verify reports a point index that disagrees with the trees")
    func verifyChecksTheIndex() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            var batch = WriteBatch()
            for i in 0 ..< 100 { batch.put([UInt8(i)], forKey: [UInt8(i)], in: "ks") }
            try engine.commitAndWait(batch)
            #expect(try engine.verify().ok)
            // One key moved to another record's location, behind the engine's back (no get may read it now: debug
            // builds would stop at the disagreement).
            engine.core.state.write { s in
                let wrong = s.keyspace("ks")!.primary.value(forKey: [8])!
                engine.core.points.tables["ks"]!.update(wrong, forKey: PointTableTests.key([7]))
            }
            let report = try engine.verify()
            #expect(report.problems.contains { $0.kind == .indexMismatch && $0.detail.contains("point index") },
                    "\(report.problems)")
        }
    }
}
