import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// A snapshot's point reads through the point index (`Snapshot+PointReads.swift`): the index answers while it is
/// unchanged since the snapshot was taken, the snapshot's trees after a commit, a compaction or a reopen. Every read
/// is checked against a model of the snapshot's moment, for keys of 0 to 24 bytes (those past 16 always take the
/// tree), in batches of a few keys and of more than one hold of the lock (`Snapshot.pointReadChunk`).
@Suite("Snapshot point reads")
struct SnapshotPointReadsTests {
    static let keyspaces = ["alpha", "beta"]

    /// The differences between `snapshot`'s point reads of `keys` (each alone and all together, through every API
    /// that reads points) and `model`.
    static func differences(_ snapshot: Snapshot, _ model: EngineTest.Model, keys: [[UInt8]]) throws -> [String] {
        var diffs: [String] = []
        for keyspace in keyspaces + ["none"] {
            let expected = keys.map { model.spaces[keyspace]?[$0] }
            let values = try snapshot.values(forKeys: keys, in: keyspace)
            if values != expected { diffs.append("values(forKeys:) in \(keyspace)") }
            let handles = try snapshot.handles(forKeys: keys, in: keyspace)
            if handles.map({ $0 != nil }) != expected.map({ $0 != nil }) { diffs.append("handles(forKeys:) in \(keyspace)") }
            let found = handles.compactMap { $0 }
            if try snapshot.values(of: found) != expected.compactMap({ $0 }) { diffs.append("values(of:) in \(keyspace)") }
            for (key, value) in zip(keys, expected) {
                if try snapshot.get(key, in: keyspace) != value { diffs.append("get \(key) in \(keyspace)") }
                if snapshot.contains(key, in: keyspace) != (value != nil) { diffs.append("contains \(key) in \(keyspace)") }
                let handle = try snapshot.handle(forKey: key, in: keyspace)
                if try handle.map({ try snapshot.value(of: $0) }) != value { diffs.append("handle \(key) in \(keyspace)") }
            }
        }
        return diffs
    }

    /// Whether the point index would answer `snapshot`'s reads now.
    static func indexAnswers(_ engine: Engine, _ snapshot: Snapshot) -> Bool {
        engine.core.withPointIndex(asOf: snapshot.pointEpoch) { _ in true } ?? false
    }

    @Test("the index answers a current snapshot; an older one reads its own trees, through commits, compactions and reopens",
          arguments: [true, false])
    func snapshotsKeepTheirState(pointIndex: Bool) throws {
        try EngineTest.withTemporaryDirectory { dir in
            var rng = SplitMix64(seed: 0x5A95_0001)
            var options = PointIndexTests.options(pointIndex: pointIndex, segmentSize: 1 << 20)
            options.pageCacheBytes = 1 << 20
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            let pool = PointIndexTests.keyPool(&rng)   // 500 keys, more than one chunk of a batch read
            var model = EngineTest.Model()
            func commit(_ count: Int) throws {
                var ops: [EngineTest.Op] = []
                for _ in 0 ..< count {
                    let keyspace = rng.pick(Self.keyspaces), key = rng.pick(pool)
                    ops.append(rng.chance(0.75) ? .put(keyspace: keyspace, key: key, value: rng.bytes(rng.int(0 ... 300)))
                                                : .delete(keyspace: keyspace, key: key))
                }
                try engine.commitAndWait(EngineTest.batch(ops))
                model.apply(ops)
            }
            func check(_ snapshot: Snapshot, _ expected: EngineTest.Model, _ when: String) throws {
                let diffs = try Self.differences(snapshot, expected, keys: pool)
                #expect(diffs.isEmpty, "\(when): \(diffs.prefix(5))")
                let few = Array(pool.shuffled(using: &rng).prefix(3))
                let fewDiffs = try Self.differences(snapshot, expected, keys: few)
                #expect(fewDiffs.isEmpty, "\(when), three keys: \(fewDiffs.prefix(5))")
            }

            try commit(800)
            engine.core.points.waitUntilBuilt()
            let first = engine.snapshot(), firstModel = model
            #expect(Self.indexAnswers(engine, first) == pointIndex)
            try check(first, firstModel, "current")

            // A commit changes the index: the first snapshot reads its trees, the second the index.
            try commit(300)
            #expect(!Self.indexAnswers(engine, first))
            try check(first, firstModel, "after a commit")
            let second = engine.snapshot(), secondModel = model
            #expect(Self.indexAnswers(engine, second) == pointIndex)
            try check(second, secondModel, "current after a commit")

            // A compaction moves records in the index: both snapshots keep the locations their trees have.
            try engine.sealActiveSegment()
            let summary = try engine.compactAndWait()
            #expect(summary.recordsMoved > 0)
            #expect(!Self.indexAnswers(engine, second))
            try check(first, firstModel, "after a compaction")
            try check(second, secondModel, "after a compaction")
            let third = engine.snapshot()
            #expect(Self.indexAnswers(engine, third) == pointIndex)
            try check(third, secondModel, "current after a compaction")

            // Reopened: a snapshot taken before the index is built reads its trees, one taken after the index.
            try engine.close()
            engine = try Engine.open(at: dir, options: options)
            let early = engine.snapshot()
            try check(early, secondModel, "just after reopen")
            engine.core.points.waitUntilBuilt()
            let built = engine.snapshot()
            #expect(Self.indexAnswers(engine, built) == pointIndex)
            try check(early, secondModel, "after the build")
            try check(built, secondModel, "current after the build")
        }
    }

    @Test("a keyspace of long keys only has no table: a snapshot's short keys there are absent, its long keys found")
    func keyspaceWithoutTable() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: PointIndexTests.options())
            defer { try? engine.close() }
            let long = (0 ..< 40).map { [UInt8](repeating: UInt8($0), count: 20) }
            var batch = WriteBatch()
            for key in long { batch.put(key, forKey: key, in: "long") }
            batch.put([1], forKey: [1], in: "short")
            try engine.commitAndWait(batch)
            engine.core.points.waitUntilBuilt()
            #expect(engine.core.state.read { _ in engine.core.points.tables["long"] == nil })
            let snapshot = engine.snapshot()
            #expect(Self.indexAnswers(engine, snapshot))
            let keys = long + [[1], [2], Array(long[0].prefix(16))]
            var model = EngineTest.Model()
            model.apply(long.map { .put(keyspace: "long", key: $0, value: $0) } + [.put(keyspace: "short", key: [1], value: [1])])
            for keyspace in ["long", "short"] {
                let values = try snapshot.values(forKeys: keys, in: keyspace)
                #expect(values == keys.map { model.spaces[keyspace]?[$0] }, "\(keyspace)")
                #expect(try snapshot.get([1], in: keyspace) == model.spaces[keyspace]?[[1]], "\(keyspace)")
            }
        }
    }

    @Test("a batch read across a commit takes the index's answers only for the keys it met before the commit")
    func chunksAcrossACommit() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: PointIndexTests.options())
            defer { try? engine.close() }
            let keys = (0 ..< 2_000).map { i in withUnsafeBytes(of: UInt32(i).bigEndian, Array.init) }
            var batch = WriteBatch()
            for key in keys { batch.put(key + [1], forKey: key, in: "alpha") }
            try engine.commitAndWait(batch)
            engine.core.points.waitUntilBuilt()
            let snapshot = engine.snapshot()
            // A writer overwrites every key while the snapshot reads them all, many times: whichever chunk a commit
            // lands before, each value read is the snapshot's.
            let finished = DispatchSemaphore(value: 0)
            let writer = Thread {
                defer { finished.signal() }
                for round in 0 ..< 20 {
                    var batch = WriteBatch()
                    for key in keys { batch.put(key + [UInt8(round + 2)], forKey: key, in: "alpha") }
                    _ = try? engine.commitAndWait(batch)
                }
            }
            writer.start()
            for _ in 0 ..< 40 {
                let values = try snapshot.values(forKeys: keys, in: "alpha")
                #expect(values == keys.map { $0 + [1] })
            }
            finished.wait()   // the writer's commits are done before the engine closes
        }
    }

    @Test("a batch read that a commit interrupts takes the index's answers before it, the snapshot's trees' after")
    func commitBetweenChunks() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: PointIndexTests.options())
            defer { try? engine.close() }
            // 300 keys of 4 bytes and, every tenth, one of 20 (the tree's in every chunk).
            let keys = (0 ..< 300).map { i in
                withUnsafeBytes(of: UInt32(i).bigEndian, Array.init) + (i % 10 == 9 ? [UInt8](repeating: 7, count: 16) : [])
            }
            var batch = WriteBatch()
            for key in keys.dropLast(50) { batch.put(key + [1], forKey: key, in: "alpha") }   // the last 50: absent
            try engine.commitAndWait(batch)
            engine.core.points.waitUntilBuilt()
            let snapshot = engine.snapshot()
            let expected = keys.map { snapshot.state.location(forKey: $0, in: "alpha") }
            var seen: [(before: Bool, after: Bool)] = []
            let locations = snapshot.locations(forKeys: keys, in: "alpha", chunk: 100, betweenChunks: {
                let before = Self.indexAnswers(engine, snapshot)
                // Every key written again or deleted, the absent ones put: each chunk's answers change.
                var change = WriteBatch()
                for (i, key) in keys.enumerated() {
                    if i % 3 == 0 { change.delete(key, in: "alpha") } else { change.put(key + [2], forKey: key, in: "alpha") }
                }
                _ = try? engine.commitAndWait(change)
                seen.append((before, Self.indexAnswers(engine, snapshot)))
            }) { $0 }
            // Once the index has changed the rest go to the tree: no second chunk is asked of it.
            #expect(seen.count == 1)
            #expect(seen.first.map { $0.before && !$0.after } == true, "the index answered the first chunk, not the second")
            #expect(locations == expected)
            #expect(try snapshot.values(forKeys: keys, in: "alpha") == keys.enumerated().map { $0 < 250 ? $1 + [1] : nil })
            #expect(try engine.get(keys[1], in: "alpha") == keys[1] + [2])
        }
    }
}
