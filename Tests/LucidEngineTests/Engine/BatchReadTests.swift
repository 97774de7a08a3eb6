import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `values(forKeys:in:)` (the reads of index queries' records): for any keys, in any order, with repeats and absent
/// keys, the result is what `get` reads for each key in the same snapshot, whether the pages are cached, evicted
/// between the batch's passes, or too large to copy under the cache's lock; errors are `get`'s.
@Suite("Engine: batched reads")
struct BatchReadTests {
    static func key(_ i: Int) -> [UInt8] { Array("batch-\(i)".utf8) }

    static func options(cacheBytes: Int) -> EngineOptions {
        var o = EngineTest.options(sync: .none, pageCacheBytes: cacheBytes)
        o.autoCompaction = nil
        return o
    }

    /// 2,000 records of 1 to 400 bytes, and every 97th of 20 to 40 KiB (copied outside the cache's lock).
    static func write(_ engine: Engine, round: Int, rng: inout SplitMix64) throws -> [[UInt8]] {
        var values: [[UInt8]] = []
        for start in stride(from: 0, to: 2_000, by: 100) {
            var batch = WriteBatch()
            for i in start ..< (start + 100) {
                let length = i % 97 == 0 ? (20 << 10) + Int(rng.next() % (20 << 10)) : 1 + Int(rng.next() % 400)
                var value = rng.bytes(length)
                value[0] = UInt8(truncatingIfNeeded: round)
                values.append(value)
                batch.put(value, forKey: key(i), in: "b")
            }
            try engine.commitAndWait(batch)
        }
        return values
    }

    @Test("random key lists read what get reads, through no cache, a small one and a large one",
          arguments: [0, 64 << 10, 64 << 20])
    func matchesGet(cacheBytes: Int) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: cacheBytes))
            defer { try? engine.close() }
            var rng = SplitMix64(seed: 41)
            let first = try Self.write(engine, round: 1, rng: &rng)
            let old = engine.snapshot()
            let second = try Self.write(engine, round: 2, rng: &rng)
            for size in [0, 1, 2, 20, 500] {
                let keys = (0 ..< size).map { _ in Self.key(Int(rng.next() % 2_200)) }   // 200 of 2,200 absent
                for _ in 0 ..< 3 {   // later rounds find more pages cached
                    let now = engine.snapshot()
                    let expected = keys.map { k in Int(String(decoding: k.dropFirst(6), as: UTF8.self)).flatMap {
                        $0 < 2_000 ? second[$0] : nil } }
                    #expect(try now.values(forKeys: keys, in: "b") == expected)
                    #expect(try now.values(forKeys: keys, in: "b") == keys.map { try now.get($0, in: "b") })
                    #expect(try old.values(forKeys: keys, in: "b") == keys.map { k in
                        Int(String(decoding: k.dropFirst(6), as: UTF8.self)).flatMap { $0 < 2_000 ? first[$0] : nil } })
                }
            }
            #expect(try engine.values(forKeys: [Self.key(1), Self.key(1)], in: "none") == [nil, nil])
            #expect(try engine.values(forKeys: [Self.key(5), Self.key(9_999)], in: "b") == [second[5], nil])
            if cacheBytes > 0 { #expect(engine.statistics.cacheHits > 0) }
        }
    }

    @Test("handles(forKeys:) and values(of:) agree with handle(forKey:) and value(of:); foreign handles are refused")
    func handles() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: 256 << 10))
            defer { try? engine.close() }
            var rng = SplitMix64(seed: 45)
            _ = try Self.write(engine, round: 1, rng: &rng)
            let snapshot = engine.snapshot()
            let keys = (0 ..< 300).map { _ in Self.key(Int(rng.next() % 2_100)) }
            let handles = try snapshot.handles(forKeys: keys, in: "b")
            #expect(try handles == keys.map { try snapshot.handle(forKey: $0, in: "b") })
            let found = handles.compactMap { $0 }
            #expect(found.count < keys.count && found.count > keys.count / 2)
            #expect(try snapshot.values(of: found) == found.map { try snapshot.value(of: $0) })
            #expect(try snapshot.values(of: []) == [])
            #expect(try snapshot.handles(forKeys: keys, in: "none").allSatisfy { $0 == nil })

            try EngineTest.withTemporaryDirectory { other in
                let second = try Engine.open(at: other, options: Self.options(cacheBytes: 0))
                defer { try? second.close() }
                var rng2 = SplitMix64(seed: 45)
                _ = try Self.write(second, round: 1, rng: &rng2)
                // Another engine's handles name the same places, and are refused before anything is read.
                do {
                    _ = try second.snapshot().values(of: found)
                    Issue.record("another engine's handles must be refused")
                } catch let error as LucidError {
                    #expect(error.code == .invalidArgument)
                }
            }
        }
    }

    @Test("readers batch-read while a writer rewrites every record through a tiny cache: each batch is its snapshot's")
    func concurrentWithWriter() async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: 64 << 10))
            defer { try? engine.close() }
            var rng = SplitMix64(seed: 43)
            _ = try Self.write(engine, round: 0, rng: &rng)
            let flags = Flags()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var rng = SplitMix64(seed: 44)
                    for round in 1 ... 8 { _ = try Self.write(engine, round: round, rng: &rng) }
                    flags.done.store(true, ordering: .releasing)
                }
                for reader in 0 ..< 2 {
                    group.addTask {
                        var rng = SplitMix64(seed: 50 + UInt64(reader))
                        while !flags.done.load(ordering: .acquiring) {
                            let snapshot = engine.snapshot()
                            let keys = (0 ..< 40).map { _ in Self.key(Int(rng.next() % 2_000)) }
                            let batch = try snapshot.values(forKeys: keys, in: "b")
                            let single = try keys.map { try snapshot.get($0, in: "b") }
                            if batch != single || batch.contains(where: { $0 == nil }) {
                                flags.mismatches.add(1, ordering: .relaxed)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(flags.mismatches.load(ordering: .relaxed) == 0)
        }
    }

    private final class Flags: Sendable {
        let done = Atomic<Bool>(false)
        let mismatches = Atomic<Int>(0)
    }

    @Test("a closed engine refuses a batch; a corrupt page fails it as get fails")
    func errors() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var location: RecordLocation?
            var path = ""
            do {
                let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: 0))
                var rng = SplitMix64(seed: 47)
                _ = try Self.write(engine, round: 1, rng: &rng)
                let snapshot = engine.snapshot()
                location = snapshot.state.keyspaces["b"]?.primary.value(forKey: Self.key(1_500))
                path = try #require(snapshot.state.segments[UInt64(location?.segment ?? 0)]).path
                try engine.close()
                #expect(throws: LucidError.self) { try snapshot.values(forKeys: [Self.key(1)], in: "b") }
                #expect(throws: LucidError.self) { try engine.values(forKeys: [Self.key(1)], in: "b") }
            }
            let found = try #require(location)
            // A byte inside the record's value: the page fails its checksum.
            let offset = UInt64(found.pageOffset) + UInt64(Format.pageHeaderLength) + 3
            try CorruptionHelpers.flipBit(path: path, offset: offset, bit: 2)
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: 0))
            defer { try? engine.close() }
            var single: LucidError?
            do { _ = try engine.get(Self.key(1_500), in: "b") } catch let e as LucidError { single = e }
            let expected = try #require(single, "get fails on the damaged page")
            #expect(expected.code == .corruption)
            do {
                _ = try engine.values(forKeys: [Self.key(3), Self.key(1_500), Self.key(7)], in: "b")
                Issue.record("the batch must fail as get does")
            } catch let error as LucidError {
                #expect(error.code == expected.code && error.file == expected.file && error.offset == expected.offset)
            }
        }
    }
}
