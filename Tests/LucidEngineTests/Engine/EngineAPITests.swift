#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import LucidEngine

/// The public API's documented behaviour: limits, ranges, snapshots, lifecycle, locking, sync modes, statistics
/// and concurrent committers.
@Suite("Engine API")
struct EngineAPITests {
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    // MARK: Limits

    @Test("limits are invalidArgument and the failing batch writes nothing")
    func limits() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? engine.close() }
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "ks", key: Self.bytes("before"), value: [1])]))
            let segment = try EngineTest.activeSegmentPath(dir)
            let sizeBefore = try EngineTest.fileSize(segment)
            let sequenceBefore = engine.statistics.lastSequence

            let bad: [(String, EngineTest.Op)] = [
                ("key of 1025 bytes", .put(keyspace: "ks", key: [UInt8](repeating: 7, count: 1025), value: [1])),
                ("delete of a key of 1025 bytes", .delete(keyspace: "ks", key: [UInt8](repeating: 7, count: 1025))),
                ("value of 4 MiB + 1", .put(keyspace: "ks", key: [1], value: [UInt8](repeating: 1, count: (4 << 20) + 1))),
                ("empty keyspace name", .put(keyspace: "", key: [1], value: [1])),
                ("empty keyspace name (delete)", .delete(keyspace: "", key: [1])),
                ("keyspace name of 256 bytes", .put(keyspace: String(repeating: "k", count: 256), key: [1], value: [1])),
                ("keyspace name of 256 UTF-8 bytes in 128 characters", .put(keyspace: String(repeating: "é", count: 128), key: [1], value: [1])),
            ]
            for (name, op) in bad {
                // A valid put first, the bad operation second: nothing of the batch may be written.
                let ops: [EngineTest.Op] = [.put(keyspace: "ks", key: Self.bytes("victim"), value: [9]), op]
                EngineTest.expectLucidError(.invalidArgument, name) { try engine.commitAndWait(EngineTest.batch(ops)) }
                #expect(try engine.get(Self.bytes("victim"), in: "ks") == nil, "\(name): the batch must write nothing")
                #expect(engine.statistics.lastSequence == sequenceBefore, "\(name)")
                #expect(try EngineTest.fileSize(segment) == sizeBefore, "\(name): nothing reaches the log")
            }
            // The limits themselves are allowed.
            let edge: [EngineTest.Op] = [
                .put(keyspace: "ks", key: [UInt8](repeating: 0xFF, count: 1024), value: [2]),
                .put(keyspace: String(repeating: "k", count: 255), key: [3], value: [3]),
                .put(keyspace: String(repeating: "é", count: 127) + "a", key: [4], value: [4]),
            ]
            try engine.commitAndWait(EngineTest.batch(edge))
            var model = EngineTest.Model()
            model.apply([.put(keyspace: "ks", key: Self.bytes("before"), value: [1])] + edge)
            #expect(try EngineTest.differences(engine, model).isEmpty)
            try engine.close()
            let again = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? again.close() }
            #expect(try EngineTest.differences(again, model).isEmpty, "after reopen")
            #expect(try again.get(Self.bytes("victim"), in: "ks") == nil)
        }
    }

    @Test("the async put and delete check limits too")
    func asyncLimits() async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? engine.close() }
            await EngineTest.expectLucidError(.invalidArgument, "put") {
                try await engine.put([1], forKey: [UInt8](repeating: 0, count: 1025), in: "ks")
            }
            await EngineTest.expectLucidError(.invalidArgument, "delete") { try await engine.delete([1], in: "") }
            let sequence = try await engine.put([1], forKey: [1], in: "ks")
            #expect(sequence == 1, "the refused commits took no sequence number")
            #expect(try await engine.delete([1], in: "ks") == 2)
            #expect(try engine.get([1], in: "ks") == nil)
        }
    }

    @Test("a value of exactly 4 MiB round-trips and survives reopen")
    func maximumValue() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var rng = EngineTest.SplitMix64(seed: 0x4D1B)
            let value = rng.bytes(4 << 20)
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "big", key: [1], value: value),
                                                       .put(keyspace: "big", key: [2], value: [2])]))
            #expect(try engine.get([1], in: "big") == value)
            #expect(try engine.get([2], in: "big") == [2])
            try engine.close()
            let again = try Engine.open(at: dir, options: EngineTest.options(pageCacheBytes: 0))
            defer { try? again.close() }
            #expect(try again.get([1], in: "big") == value, "after reopen, read from disk")
            #expect(try again.scan(in: "big").map(\.value) == [value, [2]])
            #expect(try again.verify().ok)
        }
    }

    @Test("the empty key and empty values are ordinary keys and values")
    func emptyKeyAndValue() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "e", key: [], value: []),
                                                       .put(keyspace: "e", key: [0], value: []),
                                                       .put(keyspace: "e", key: [1], value: [1])]))
            #expect(try engine.get([], in: "e") == [], "an empty value is not nil")
            #expect(try engine.get([0], in: "e") == [])
            #expect(engine.count(in: "e") == 3)
            #expect(try engine.scan(in: "e").map(\.key) == [[], [0], [1]], "the empty key sorts first")
            #expect(try engine.scan(in: "e", range: .prefix([])).count == 3)
            try engine.close()
            let again = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? again.close() }
            #expect(try again.get([], in: "e") == [])
            try again.commitAndWait(EngineTest.batch([.delete(keyspace: "e", key: [])]))
            #expect(try again.get([], in: "e") == nil)
            #expect(try again.scan(in: "e").map(\.key) == [[0], [1]])
        }
    }

    // MARK: Ranges

    @Test("KeyRange: prefix, from/to, included and excluded bounds, reverse, limits")
    func keyRanges() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let keys: [[UInt8]] = [[], [0x00], [0x01], [0x61], [0x61, 0x00], [0x61, 0x62], [0x61, 0xFF],
                                   [0x61, 0xFF, 0xFF], [0x62], [0xFF], [0xFF, 0xFF]]
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? engine.close() }
            var ops: [EngineTest.Op] = []
            for (i, k) in keys.enumerated() { ops.append(.put(keyspace: "r", key: k, value: [UInt8(i)])) }
            try engine.commitAndWait(EngineTest.batch(ops.reversed()))
            var model = EngineTest.Model()
            model.apply(ops)
            let sorted = model.sorted("r")
            #expect(sorted.map(\.key) == keys, "the fixture is in unsigned byte order")

            func scanKeys(_ range: KeyRange, reverse: Bool = false, limit: Int? = nil) throws -> [[UInt8]] {
                try engine.scan(in: "r", range: range, reverse: reverse, limit: limit).map(\.key)
            }
            // Hand-written expectations (independent of the test's own filter).
            #expect(try scanKeys(.prefix([0x61])) == [[0x61], [0x61, 0x00], [0x61, 0x62], [0x61, 0xFF], [0x61, 0xFF, 0xFF]])
            #expect(try scanKeys(.prefix([0x61, 0xFF])) == [[0x61, 0xFF], [0x61, 0xFF, 0xFF]])
            #expect(try scanKeys(.prefix([0xFF])) == [[0xFF], [0xFF, 0xFF]], "a 0xFF prefix has no upper bound")
            #expect(try scanKeys(.prefix([0xFF, 0xFF])) == [[0xFF, 0xFF]])
            #expect(try scanKeys(.prefix([])) == keys)
            #expect(try scanKeys(.prefix([0x63])) == [])
            #expect(try scanKeys(.from([0x61], to: [0x62])) == [[0x61], [0x61, 0x00], [0x61, 0x62], [0x61, 0xFF], [0x61, 0xFF, 0xFF]])
            #expect(try scanKeys(.from([0x01], to: [0x61, 0x00])) == [[0x01], [0x61]])
            #expect(try scanKeys(.from([0x62], to: [0x61])) == [], "an inverted range is empty")
            #expect(try scanKeys(.from([0x61], to: [0x61])) == [], "an empty half-open range")
            #expect(try scanKeys(KeyRange(lower: .excluded([0x61]), upper: .included([0x62]))) ==
                    [[0x61, 0x00], [0x61, 0x62], [0x61, 0xFF], [0x61, 0xFF, 0xFF], [0x62]])
            #expect(try scanKeys(KeyRange(lower: .excluded([]), upper: .excluded([0x61]))) == [[0x00], [0x01]])
            #expect(try scanKeys(KeyRange(lower: .included([0x61]), upper: .included([0x61]))) == [[0x61]])
            #expect(try scanKeys(KeyRange(lower: .excluded([0x61]), upper: .excluded([0x61]))) == [])
            #expect(try scanKeys(KeyRange(upper: .excluded([0x00]))) == [[]])
            #expect(try scanKeys(KeyRange(lower: .excluded([0xFF]))) == [[0xFF, 0xFF]])
            #expect(try scanKeys(.prefix([0x61]), reverse: true) == [[0x61, 0xFF, 0xFF], [0x61, 0xFF], [0x61, 0x62], [0x61, 0x00], [0x61]])
            #expect(try scanKeys(.all, reverse: true, limit: 2) == [[0xFF, 0xFF], [0xFF]])
            #expect(try scanKeys(.all, limit: 0) == [], "limit 0 returns nothing")
            #expect(try scanKeys(.all, reverse: true, limit: 0) == [])
            #expect(try scanKeys(.prefix([0x61]), limit: 2) == [[0x61], [0x61, 0x00]])
            #expect(try scanKeys(.all, limit: 100) == keys)
            #expect(try engine.scan(in: "no-such-keyspace").isEmpty)
            #expect(try engine.scan(in: "r", range: .prefix([0x61, 0x62])).map(\.value) == [[5]], "values come with keys")

            // Every combination of bounds drawn from the keys (and neighbours), both directions, with limits,
            // against the model; also Snapshot.keys and forEach with an early stop.
            let probes: [[UInt8]] = keys + [[0x60], [0x61, 0x01], [0xFF, 0xFF, 0xFF]]
            var bounds: [KeyBound?] = [nil]
            for p in probes { bounds += [.included(p), .excluded(p)] }
            let snapshot = engine.snapshot()
            var mismatches: [String] = []
            for lower in bounds {
                for upper in bounds {
                    let range = KeyRange(lower: lower, upper: upper)
                    for reverse in [false, true] {
                        for limit in [nil, 0, 1, 3] as [Int?] {
                            var expected = EngineTest.filter(sorted, range)
                            if reverse { expected.reverse() }
                            if let limit { expected = Array(expected.prefix(limit)) }
                            let got = try engine.scan(in: "r", range: range, reverse: reverse, limit: limit)
                            if got != expected { mismatches.append("scan \(range) reverse \(reverse) limit \(String(describing: limit))") }
                            if snapshot.keys(in: "r", range: range, reverse: reverse, limit: limit) != expected.map(\.key) {
                                mismatches.append("keys \(range) reverse \(reverse) limit \(String(describing: limit))")
                            }
                        }
                    }
                }
            }
            #expect(mismatches.isEmpty, "\(mismatches.count) mismatches, e.g. \(mismatches.prefix(5))")
            var visited = 0
            try snapshot.forEach(in: "r") { _ in visited += 1; return visited < 3 }
            #expect(visited == 3, "forEach stops when the body returns false")
        }
    }

    // MARK: Snapshots

    @Test("a snapshot keeps reading the state it was taken at")
    func snapshotIsolation() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(pageCacheBytes: 0))
            defer { try? engine.close() }
            var model = EngineTest.Model()
            var ops: [EngineTest.Op] = []
            for i in 0..<10 { ops.append(.put(keyspace: "s", key: [UInt8(i)], value: Self.bytes("old-\(i)"))) }
            ops.append(.put(keyspace: "gone", key: [1], value: [1]))
            try engine.commitAndWait(EngineTest.batch(ops))
            model.apply(ops)
            let snapshot = engine.snapshot()
            let sequence = snapshot.sequence
            #expect(sequence == engine.statistics.lastSequence)

            var changes: [EngineTest.Op] = []
            for i in 0..<5 { changes.append(.put(keyspace: "s", key: [UInt8(i)], value: Self.bytes("new-\(i)"))) }
            for i in 5..<10 { changes.append(.delete(keyspace: "s", key: [UInt8(i)])) }
            changes += [.put(keyspace: "s", key: [100], value: [100]), .delete(keyspace: "gone", key: [1]),
                        .put(keyspace: "fresh", key: [1], value: [1])]
            try engine.commitAndWait(EngineTest.batch(changes))
            // More commits, enough to fill new pages.
            for i in 0..<20 { try engine.commitAndWait(EngineTest.batch([.put(keyspace: "s", key: [UInt8(200 + i)], value: [UInt8](repeating: 1, count: 500))])) }

            for i in 0..<10 { #expect(try snapshot.get([UInt8(i)], in: "s") == Self.bytes("old-\(i)"), "key \(i)") }
            #expect(try snapshot.get([100], in: "s") == nil)
            #expect(snapshot.count(in: "s") == 10)
            #expect(snapshot.count(in: "gone") == 1)
            #expect(snapshot.keyspaces() == ["gone", "s"])
            #expect(try snapshot.scan(in: "s") == model.sorted("s"))
            #expect(snapshot.sequence == sequence)

            #expect(try engine.get([0], in: "s") == Self.bytes("new-0"))
            #expect(try engine.get([7], in: "s") == nil)
            #expect(engine.count(in: "s") == 5 + 1 + 20)
            #expect(engine.keyspaces() == ["fresh", "s"], "a keyspace whose last key is deleted is not listed")
            #expect(engine.snapshot().sequence == sequence + 21)
        }
    }

    // MARK: Lifecycle

    @Test("operations after close() throw closed; close is idempotent")
    func closedEngine() async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            try await engine.put([1], forKey: [1], in: "c")
            let snapshot = engine.snapshot()
            try engine.close()
            try engine.close()   // idempotent: no throw
            EngineTest.expectLucidError(.closed, "get") { try engine.get([1], in: "c") }
            EngineTest.expectLucidError(.closed, "scan") { try engine.scan(in: "c") }
            EngineTest.expectLucidError(.closed, "snapshot get") { try snapshot.get([1], in: "c") }
            EngineTest.expectLucidError(.closed, "snapshot scan") { try snapshot.scan(in: "c") }
            EngineTest.expectLucidError(.closed, "new snapshot get") { try engine.snapshot().get([1], in: "c") }
            EngineTest.expectLucidError(.closed, "sync") { try engine.sync() }
            EngineTest.expectLucidError(.closed, "verify") { try engine.verify() }
            EngineTest.expectLucidError(.closed, "commitAndWait") { try engine.commitAndWait(EngineTest.batch([.put(keyspace: "c", key: [2], value: [2])])) }
            await EngineTest.expectLucidError(.closed, "commit") { try await engine.commit(EngineTest.batch([.put(keyspace: "c", key: [2], value: [2])])) }
            await EngineTest.expectLucidError(.closed, "put") { try await engine.put([2], forKey: [2], in: "c") }
            await EngineTest.expectLucidError(.closed, "delete") { try await engine.delete([1], in: "c") }
            // Nothing was written after close.
            let again = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? again.close() }
            #expect(try again.get([1], in: "c") == [1])
            #expect(try again.get([2], in: "c") == nil)
        }
    }

    @Test("a second open of an open store is locked (with the holder's pid); after close it opens")
    func secondOpenIsLocked() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let first = try Engine.open(at: dir, options: EngineTest.options())
            try first.commitAndWait(EngineTest.batch([.put(keyspace: "l", key: [1], value: [1])]))
            let error = EngineTest.expectLucidError(.locked) { try Engine.open(at: dir, options: EngineTest.options()) }
            #expect(error?.pid == getpid(), "\(String(describing: error))")
            EngineTest.expectLucidError(.locked, "salvage of an open store") {
                try Engine.salvage(from: dir, to: dir + "-salvage", options: EngineTest.options())
            }
            #expect(!EngineTest.fileExists(dir + "-salvage/MANIFEST-1") && !EngineTest.fileExists(dir + "-salvage/MANIFEST-0"))
            try? FileManager.default.removeItem(atPath: dir + "-salvage")
            // The refused open did not disturb the first engine.
            try first.commitAndWait(EngineTest.batch([.put(keyspace: "l", key: [2], value: [2])]))
            #expect(try first.get([1], in: "l") == [1])
            try first.close()
            let second = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? second.close() }
            #expect(try second.get([2], in: "l") == [2])
        }
    }

    // MARK: Sync modes and statistics

    @Test("sync() with the none and grouped modes; syncs are counted", arguments: [
        EngineOptions.SyncMode.none, .grouped(milliseconds: 600_000), .grouped(milliseconds: 0), .always,
    ])
    func syncModes(mode: EngineOptions.SyncMode) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: mode))
            for i in 0..<5 { try engine.commitAndWait(EngineTest.batch([.put(keyspace: "y", key: [UInt8(i)], value: [UInt8(i)])])) }
            let syncsPerCommit: UInt64 = switch mode {
            case .always, .grouped(milliseconds: 0): 5
            default: 0
            }
            #expect(engine.statistics.syncs == syncsPerCommit, "\(mode): \(engine.statistics)")
            try engine.sync()
            if syncsPerCommit == 0 {
                #expect(engine.statistics.syncs == 1, "\(mode): sync() makes the commits durable")
            } else {
                #expect(engine.statistics.syncs >= syncsPerCommit, "\(mode)")
            }
            #expect(engine.statistics.batchesCommitted == 5, "sync() is not a batch")
            #expect(engine.statistics.lastSequence == 5)
            try engine.close()
            let again = try Engine.open(at: dir, options: EngineTest.options(sync: mode))
            defer { try? again.close() }
            #expect(again.recoveryReport.droppedBytes == 0)
            for i in 0..<5 { #expect(try again.get([UInt8(i)], in: "y") == [UInt8(i)]) }
        }
    }

    @Test("statistics counters move")
    func statistics() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            var stats = engine.statistics
            #expect(stats.lastSequence == 0 && stats.liveKeys == 0 && stats.segments == 1)
            #expect(stats.batchesCommitted == 0 && stats.groupsWritten == 0)
            #expect(stats.totalBytes == UInt64(Format.segmentHeaderLength))
            for i in 0..<6 {
                try engine.commitAndWait(EngineTest.batch([.put(keyspace: "st", key: [UInt8(i)], value: [UInt8](repeating: 1, count: 100)),
                                                           .put(keyspace: "st2", key: [UInt8(i)], value: [])]))
            }
            try engine.commitAndWait(EngineTest.batch([.delete(keyspace: "st", key: [0])]))
            stats = engine.statistics
            #expect(stats.lastSequence == 7)
            #expect(stats.liveKeys == 11)
            #expect(stats.batchesCommitted == 7)
            #expect(stats.groupsWritten == 7, "one committer at a time: one group per batch")
            #expect(stats.syncs == 7)
            // While open, the active segment may go on with filler (FORMAT.md "Filler"), which is not log; close
            // cuts it.
            let active = try EngineTest.activeSegmentPath(dir)
            #expect(stats.totalBytes <= UInt64(try EngineTest.fileSize(active)))
            try engine.close()
            #expect(stats.totalBytes == UInt64(try EngineTest.fileSize(active)))

            let again = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? again.close() }
            let before = again.statistics
            #expect(before.lastSequence == 7 && before.liveKeys == 11 && before.batchesCommitted == 0)
            _ = try again.get([3], in: "st")
            let afterMiss = again.statistics
            #expect(afterMiss.cacheMisses > before.cacheMisses, "a first read misses the cache")
            _ = try again.get([3], in: "st")
            let afterHit = again.statistics
            #expect(afterHit.cacheHits == afterMiss.cacheHits + 1, "a second read of the page hits")
            #expect(afterHit.cacheMisses == afterMiss.cacheMisses)
        }
    }

    /// Batches queued while the writer is busy share one commit group; each must still get its own sequence
    /// number, in queue order ("returns its sequence number").
    @Test("batches merged into one commit group each get their own sequence number")
    func groupedBatchesGetTheirOwnSequence() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? engine.close() }
            var rng = EngineTest.SplitMix64(seed: 0x5E9)
            let results = EngineTest.FailureLog()
            let done = DispatchGroup()
            // A large first batch keeps the writer busy while the small ones queue up behind it.
            var batches = [EngineTest.batch([.put(keyspace: "q", key: [0], value: rng.bytes(2 << 20))])]
            for i in 1...30 { batches.append(EngineTest.batch([.put(keyspace: "q", key: [UInt8(i)], value: [UInt8(i)])])) }
            for (i, batch) in batches.enumerated() {
                done.enter()
                engine.core.submit(batch) { result in
                    switch result {
                    case .success(let sequence): results.add("\(i):\(sequence)")
                    case .failure(let error): results.add("\(i):\(error)")
                    }
                    done.leave()
                }
            }
            done.wait()
            var sequenceOf: [Int: String] = [:]
            for entry in results.all {
                let parts = entry.split(separator: ":", maxSplits: 1)
                sequenceOf[Int(parts[0])!] = String(parts[1])
            }
            let expected = Dictionary(uniqueKeysWithValues: (0..<batches.count).map { ($0, "\($0 + 1)") })
            let stats = engine.statistics
            #expect(sequenceOf == expected,
                    "batch i must get sequence i+1 (\(stats.groupsWritten) groups for \(stats.batchesCommitted) batches): \(sequenceOf.sorted { $0.key < $1.key }.map { "\($0.key)→\($0.value)" })")
            #expect(stats.lastSequence == UInt64(batches.count))
        }
    }

    @Test("8 concurrent tasks committing 50 batches each: every value present, unique sequences")
    func concurrentCommitters() async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            let tasks = 8, perTask = 50
            let sequences = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for t in 0..<tasks {
                    group.addTask {
                        var mine: [UInt64] = []
                        for i in 0..<perTask {
                            var batch = WriteBatch()
                            batch.put(Array("value-\(t)-\(i)".utf8), forKey: Array("t\(t)-\(i)".utf8), in: "cc")
                            batch.put([UInt8(t)], forKey: Array("last-\(t)".utf8), in: "cc")
                            mine.append(try await engine.commit(batch))
                        }
                        return mine
                    }
                }
                var all: [[UInt64]] = []
                for try await s in group { all.append(s) }
                return all
            }
            for s in sequences { #expect(s == s.sorted() && Set(s).count == s.count, "one task's commits are ordered") }
            let flat = sequences.flatMap { $0 }
            #expect(Set(flat) == Set(1...UInt64(tasks * perTask)), "every batch gets its own sequence")
            let stats = engine.statistics
            #expect(stats.batchesCommitted == UInt64(tasks * perTask))
            #expect(stats.lastSequence == UInt64(tasks * perTask))
            #expect(stats.groupsWritten >= 1 && stats.groupsWritten <= stats.batchesCommitted)
            #expect(stats.syncs <= stats.groupsWritten, "at most one sync per group")
            #expect(engine.count(in: "cc") == tasks * perTask + tasks)
            for t in 0..<tasks {
                for i in 0..<perTask {
                    #expect(try engine.get(Array("t\(t)-\(i)".utf8), in: "cc") == Array("value-\(t)-\(i)".utf8))
                }
            }
            try engine.close()
            let again = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? again.close() }
            #expect(again.count(in: "cc") == tasks * perTask + tasks)
            #expect(try again.verify().ok)
        }
    }
}
