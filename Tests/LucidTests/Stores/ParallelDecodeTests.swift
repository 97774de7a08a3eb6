import Foundation
@testable import Lucid
import LucidEngine
import Synchronization
import Testing

/// `ParallelDecode.compactMap` against a loop: the same entities in the same order, what `transform` drops left
/// out, the error of the smallest failing index, and no entity leaked or released twice; and the disk store's
/// full scans, which use it from `ParallelDecode.minimumCount` records on.
@Suite("Parallel decoding of large results")
struct ParallelDecodeTests {
    /// Live instances of one test case (cases run concurrently).
    final class Counter: Sendable {
        let live = Atomic<Int>(0)
        var value: Int { live.load(ordering: .relaxed) }
    }

    /// Counts its live instances, to catch an entity leaked or destroyed twice by the chunks' moves.
    final class Tracked: Sendable {
        let value: Int
        let counter: Counter
        init(_ value: Int, _ counter: Counter) {
            self.value = value
            self.counter = counter
            counter.live.add(1, ordering: .relaxed)
        }
        deinit { counter.live.subtract(1, ordering: .relaxed) }
    }

    /// Drops every seventh index and whole runs of 15,000 (the second chunk of 70,001 keeps nothing).
    static func keeps(_ i: Int) -> Bool { i % 7 != 3 && (i / 15_000) % 3 != 1 }

    @Test("the loop's result, in order, across chunk boundaries and whole chunks filtered out",
          arguments: [0, 1, 4_095, 4_096, 16_385, 70_001])
    func sameAsLoop(count: Int) throws {
        let counter = Counter()
        let expected = (0 ..< count).filter(Self.keeps)
        do {
            let result = try ParallelDecode.compactMap(count: count) { i throws(StoreError) in
                Self.keeps(i) ? Tracked(i, counter) : nil
            }
            #expect(result.map(\.value) == expected)
            #expect(counter.value == result.count)
        }
        #expect(counter.value == 0, "every entity released once")
    }

    /// The chunks a decode was cut into: the transforms made, one per chunk (`compactMap(count:perChunk:)`), and the
    /// ranges of indices each transform was called for.
    final class Chunks: @unchecked Sendable {
        private let lock = NSLock()
        private var ranges: [ClosedRange<Int>] = []
        /// A new chunk's transform, recording the indices it decodes.
        func transform() -> (Int) throws(StoreError) -> Int? {
            let chunk = lock.withLock {
                ranges.append(Int.max ... Int.max)
                return ranges.count - 1
            }
            return { i throws(StoreError) in
                self.lock.withLock {
                    let r = self.ranges[chunk]
                    self.ranges[chunk] = r.lowerBound == Int.max ? i ... i : min(r.lowerBound, i) ... max(r.upperBound, i)
                }
                return i
            }
        }
        var sorted: [ClosedRange<Int>] { lock.withLock { ranges.sorted { $0.lowerBound < $1.lowerBound } } }
    }

    // Whether the pool runs the chunks on several threads is libdispatch's to decide: under a loaded test run its
    // worker did not come within 5 s (a test that waited for a second thread failed twice in `.ci/run`). What this
    // code decides, and what is checked, is the cut: one contiguous chunk per processor, handed to concurrentPerform.
    @Test("from minimumCount records, cut into one contiguous chunk per processor",
          .enabled(if: ProcessInfo.processInfo.activeProcessorCount > 1))
    func parallelFromMinimumCount() throws {
        let count = ParallelDecode.minimumCount   // fewer than chunkSize records: still one chunk per processor
        #expect(ParallelDecode.runsInParallel(count: count))
        #expect(!ParallelDecode.runsInParallel(count: count - 1))
        let chunks = Chunks()
        let result = try ParallelDecode.compactMap(count: count, perChunk: { () throws(StoreError) in chunks.transform() })
        #expect(result == Array(0 ..< count))
        let expected = min(ProcessInfo.processInfo.activeProcessorCount, count / ParallelDecode.minimumChunk)
        let ranges = chunks.sorted
        #expect(ranges.count == expected, "\(ranges.count) chunks")
        // Contiguous, covering every index once.
        #expect(ranges.first?.lowerBound == 0 && ranges.last?.upperBound == count - 1)
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound + 1 == $1.lowerBound })
        // Below minimumCount, one transform on the calling thread.
        let small = Chunks()
        _ = try ParallelDecode.compactMap(count: count - 1, perChunk: { () throws(StoreError) in small.transform() })
        #expect(small.sorted == [0 ... count - 2])
    }

    @Test("the error of the smallest failing index, nothing leaked", arguments: [
        [4_000], [17_000], [69_999], [40_000, 20_000], [3, 50_000], [16_384, 16_383],
    ])
    func firstError(failing: [Int]) {
        let count = 70_000
        let smallest = failing.min()!
        let failingSet = Set(failing)
        let counter = Counter()
        do {
            _ = try ParallelDecode.compactMap(count: count) { i throws(StoreError) -> Tracked? in
                if failingSet.contains(i) { throw .undecodableEntity(keyspace: "k", key: [UInt8(i % 256)], detail: "\(i)") }
                return Tracked(i, counter)
            }
            Issue.record("no error")
        } catch {
            guard case .undecodableEntity(_, _, let detail) = error else { Issue.record("\(error)"); return }
            #expect(detail == "\(smallest)")
        }
        #expect(counter.value == 0, "every decoded entity released")
    }

    @Test("a full scan of a large store: every entity in key order; a bad record late in it fails the scan with its key")
    func largeScan() async throws {
        let temp = try TemporaryStore()
        let store = DiskStore<Book>(engine: temp.engine, entityCacheBytes: 0)
        let count = ParallelDecode.minimumCount * 3 + 17
        // Written in a shuffled order: the scan reads in storage order and must still answer in key order.
        var order = Array(1 ... count)
        var rng = SystemRandomNumberGenerator()
        order.shuffle(using: &rng)
        for start in stride(from: 0, to: count, by: 1_000) {
            _ = try await store.set(order[start ..< min(count, start + 1_000)].map { Book.remote($0, "t\($0)") })
        }
        let all = try await store.search(.all)
        #expect(all.entities.map(\.identifier) == (1 ... count).map { Book.Identifier.remote($0) })
        #expect(all.entities.allSatisfy { $0.title == "t\($0.identifier.remoteValue!)" })
        // Filtered scans (a `~=` over every record), decoded and filtered on several threads, each with its own
        // evaluator: a regex, literal text, and a regex with a comparison.
        for filter: Query<Book>.Filter in [.title ~= .string("^t1[0-9]*7$"), .title ~= .string("99"),
                                           .title ~= .string("3$") && .pages >= .int(100)] {
            let query = Query<Book>.filter(filter)
            let expected = try query.evaluate(over: all.entities).entities
            #expect(!expected.isEmpty)
            #expect(try await store.search(query).entities == expected, "\(filter)")
        }

        let bad = Book.remote(count - 100, "x")
        var batch = WriteBatch()
        batch.put([1, 0xEE, 0xEE], forKey: bad.identifier.storageKey, in: store.keyspace)
        try temp.engine.commitAndWait(batch)
        for query in [Query<Book>.all, .filter(.title ~= .string("^t1"))] {
            do {
                _ = try await store.search(query)
                Issue.record("the bad record was read")
            } catch {
                guard case .undecodableEntity(_, let key, _) = error else { Issue.record("\(error)"); return }
                #expect(key == bad.identifier.storageKey)
            }
        }
    }

    @Test("a transform made per chunk: once per chunk, on several threads, its error that of the first chunk")
    func perChunk() throws {
        let count = ParallelDecode.minimumCount * 4
        let made = Atomic<Int>(0)
        let result = try ParallelDecode.compactMap(count: count, perChunk: { () throws(StoreError) in
            made.add(1, ordering: .relaxed)
            var calls = 0   // state of this chunk's transform alone
            return { (i: Int) throws(StoreError) -> Int? in
                calls += 1
                return i % 3 == 0 ? i : nil
            }
        })
        #expect(result == (0 ..< count).filter { $0 % 3 == 0 })
        #expect(made.load(ordering: .relaxed) >= 2 && made.load(ordering: .relaxed) <= count / ParallelDecode.minimumChunk)
        // Below minimumCount: one transform, made on this thread.
        let few = Atomic<Int>(0)
        _ = try ParallelDecode.compactMap(count: 10, perChunk: { () throws(StoreError) in
            few.add(1, ordering: .relaxed)
            return { (i: Int) throws(StoreError) -> Int? in i }
        })
        #expect(few.load(ordering: .relaxed) == 1)
        #expect(throws: StoreError.self) {
            try ParallelDecode.compactMap(count: count, perChunk: { () throws(StoreError) -> (Int) throws(StoreError) -> Int? in
                throw .notSupported("no transform")
            })
        }
    }
}
