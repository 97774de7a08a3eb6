import Foundation
import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `Engine.submit` queues a batch and returns a ticket: batches commit in submission order, a failure reaches the
/// failed batch's ticket and every later one, and `maxQueuedCommitBytes` holds a producer back.
@Suite("Submitted commits")
struct SubmitTests {
    private static func batch(_ n: Int, records: Int = 10) -> WriteBatch {
        var batch = WriteBatch()
        for r in 0 ..< records {
            batch.put(EngineTest.le64(UInt64(n)), forKey: Array("key-\(n)-\(r)".utf8), in: "ks",
                      indexTerms: [IndexTerm(index: "n", value: .int(Int64(n)))])
        }
        return batch
    }

    /// One put of a 2 MiB value (more than the queue limits of the CommitQueue tests allow beside another batch).
    private static let bigBatch: WriteBatch = {
        var big = WriteBatch()
        big.put([UInt8](repeating: 0, count: 2 << 20), forKey: [1], in: "ks")
        return big
    }()

    /// Enqueues `batch` with `limit` on a new thread; `admitted` runs once it is queued. The box holds whether
    /// it was queued, or the error that refused it.
    private static func enqueueOnThread(_ queue: CommitQueue, _ batch: WriteBatch, limit: Int,
                                        admitted: @escaping @Sendable () -> Void) -> ResultBox<Bool> {
        let done = ResultBox<Bool>()
        Thread {
            do {
                try queue.enqueue(PendingCommit(batch: batch, completion: { _ in }), limit: limit)
                admitted()
                done.fulfill(.success(true))
            } catch {
                done.fulfill(.failure(error as? LucidError ?? LucidError(code: .io, message: "\(error)")))
            }
        }.start()
        return done
    }

    @Test("tickets complete in submission order with consecutive sequences; the records are readable")
    func ticketsInOrder() async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .none))
            defer { try? engine.close() }
            let first = try engine.commitAndWait(Self.batch(1000))
            let tickets = try (0 ..< 300).map { try engine.submit(Self.batch($0)) }
            let last = try #require(tickets.last)
            #expect(try last.wait() == first + 300)
            // The last ticket's success implies every earlier one's: all are complete, in order.
            #expect(tickets.allSatisfy { $0.isComplete })
            var sequences: [UInt64] = []
            for ticket in tickets { sequences.append(try await ticket.sequence) }
            #expect(sequences == Array((first + 1) ... (first + 300)))
            #expect(try engine.get(Array("key-299-9".utf8), in: "ks") == EngineTest.le64(299))
            #expect(engine.count(in: "ks") == 301 * 10)
            let indexed = try engine.records(matching: IndexQuery(keyspace: "ks", index: "n", condition: .equals(.int(7))))
            #expect(indexed.count == 10)
        }
    }

    @Test("enqueue: completions run in queue order, after publish and before their tickets; a refused batch runs none")
    func enqueueCompletions() async throws {
        try await EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .always))
            defer { try? engine.close() }
            let seen = Mutex<[(sequence: UInt64, published: Bool)]>([])
            var tickets: [CommitTicket] = []
            for n in 0 ..< 50 {
                let key = Array("key-\(n)-0".utf8)
                tickets.append(try engine.enqueue(Self.batch(n, records: 1)) { result in
                    // The batch is visible to readers when its completion runs.
                    let published = (try? engine.get(key, in: "ks")) != nil
                    if case .success(let sequence) = result { seen.withLock { $0.append((sequence, published)) } }
                })
            }
            var oversized = WriteBatch()
            oversized.put([1], forKey: [UInt8](repeating: 7, count: 5000), in: "ks")
            #expect(throws: LucidError.self) {
                _ = try engine.enqueue(oversized) { _ in seen.withLock { $0.append((0, false)) } }
            }
            var sequences: [UInt64] = []
            for ticket in tickets { sequences.append(try await ticket.sequence) }
            let recorded = seen.withLock { $0 }
            #expect(recorded.map(\.sequence) == sequences, "completions ran once each, in queue order")
            #expect(sequences == Array(sequences[0] ... sequences[0] + 49))
            #expect(recorded.allSatisfy { $0.published })
        }
    }

    /// The README's bulk load ("Using the engine").
    private static func load(_ batches: some Sequence<WriteBatch>, into engine: Engine) throws {
        var last: CommitTicket?
        for batch in batches { last = try engine.submit(batch) }
        try last?.wait()
        try engine.sync()
    }

    @Test("the README's bulk load: batches built lazily while the writer writes, then one sync")
    func readmeBulkLoad() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .none))
            try Self.load((0 ..< 100).lazy.map { Self.batch($0) }, into: engine)
            #expect(engine.count(in: "ks") == 100 * 10)
            #expect(engine.statistics.syncs >= 1)
            try engine.close()
            let reopened = try Engine.open(at: dir, options: EngineTest.options(sync: .none))
            defer { try? reopened.close() }
            #expect(try reopened.get(Array("key-99-9".utf8), in: "ks") == EngineTest.le64(99))
        }
    }

    @Test("what fails before queueing throws from submit, and nothing is queued")
    func refusedAtSubmission() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .none))
            var invalid = WriteBatch()
            invalid.put([1], forKey: [1], in: "")
            let error = #expect(throws: LucidError.self) { try engine.submit(invalid) }
            #expect(error?.code == .invalidArgument)
            #expect(engine.statistics.lastSequence == 0)
            try engine.close()
            let closed = #expect(throws: LucidError.self) { try engine.submit(Self.batch(0)) }
            #expect(closed?.code == .closed)
        }
    }

    @Test("a failed write fails its ticket and every later one; readers see exactly the batches acknowledged")
    func failurePropagates() throws {
        let fs = FaultFileSystem()
        var options = EngineTest.options(sync: .none)
        options.fileSystem = fs
        options.maxQueuedCommitBytes = 0   // one batch per group: the third write is the third batch's
        let engine = try Engine.open(at: "/submit-store", options: options)
        defer { try? engine.close() }
        fs.resetOperationCounts()
        fs.failOperation([.write], nth: 3, errno: EIO)
        // Submitting stops at the first refusal: once the engine is failed, submit throws failedState.
        var tickets: [CommitTicket] = []
        var refused: LucidError?
        for n in 0 ..< 50 {
            do { tickets.append(try engine.submit(Self.batch(n, records: 200))) } catch let error as LucidError {
                refused = error
                break
            }
        }
        #expect(refused?.code == .failedState, "the producer meets the failed state: \(String(describing: refused))")
        var outcomes: [Result<UInt64, LucidError>] = []
        for ticket in tickets {
            do { outcomes.append(.success(try ticket.wait())) } catch let error as LucidError { outcomes.append(.failure(error)) }
        }
        let acknowledged = outcomes.prefix { if case .success = $0 { true } else { false } }.count
        #expect(acknowledged == 2, "two groups were written before the failing write")
        let codes = outcomes.dropFirst(acknowledged).map { outcome -> LucidError.Code? in
            if case .failure(let error) = outcome { error.code } else { nil }
        }
        #expect(codes.first == .io, "the failed write's own batch")
        #expect(codes.dropFirst().allSatisfy { $0 == .failedState }, "\(codes)")
        #expect(fs.injectedFaultCount == 1)
        // Nothing after the failure is visible; everything before it is.
        for n in 0 ..< tickets.count {
            let value = try engine.get(Array("key-\(n)-199".utf8), in: "ks")
            #expect((value != nil) == (n < acknowledged), "batch \(n)")
        }
        let again = #expect(throws: LucidError.self) { try engine.submit(Self.batch(99)) }
        #expect(again?.code == .failedState)
    }

    @Test("with maxQueuedCommitBytes 0 a submitter waits for an empty queue: one batch per commit group")
    func limitHoldsProducerBack() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var options = EngineTest.options(sync: .none)
            options.maxQueuedCommitBytes = 0
            let engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            let before = engine.statistics.groupsWritten
            var last: CommitTicket?
            for n in 0 ..< 200 { last = try engine.submit(Self.batch(n)) }
            try #require(last).wait()
            // Had two batches ever been queued together, the writer would have taken them as one group.
            #expect(engine.statistics.groupsWritten - before == 200)
            #expect(engine.count(in: "ks") == 200 * 10)
        }
    }

    @Test("committers held by a limit are admitted in arrival order: a large batch is not overtaken by small ones")
    func limitAdmitsInArrivalOrder() throws {
        let queue = CommitQueue()
        try queue.enqueue(PendingCommit(batch: Self.bigBatch, completion: { _ in }))   // over the limit below
        let limit = 3 << 20   // the queued batch plus the large one exceed it; a small one alone would fit
        let admitted = Mutex<[Int]>([])
        var threads: [ResultBox<Bool>] = []
        // Committer 0 has a large batch, committers 1...6 small ones; they arrive in that order.
        for c in 0 ... 6 {
            threads.append(Self.enqueueOnThread(queue, c == 0 ? Self.bigBatch : Self.batch(c), limit: limit) {
                admitted.withLock { $0.append(c) }
            })
            Thread.sleep(forTimeInterval: 0.05)   // arrival order
        }
        #expect(admitted.withLock { $0 }.isEmpty)
        _ = try #require(queue.takeGroup(extraBytes: 0))   // the queue empties: the large batch's turn
        queue.finishGroup()
        for done in threads { _ = try done.wait().get() }
        let group = try #require(queue.takeGroup(extraBytes: .max))
        queue.finishGroup()
        // The queue's order is the order of admission: the large batch, then the small ones as they arrived.
        let order = group.map { String(decoding: $0.batch.operations[0].key, as: UTF8.self) }
        #expect(order == ["\u{1}"] + (1 ... 6).map { "key-\($0)-0" }, "\(order)")
        #expect(admitted.withLock { $0 }.sorted() == Array(0 ... 6))
    }

    @Test("CommitQueue.enqueue with a limit blocks until the writer takes the queued batches, or the queue closes")
    func queueLimitBlocks() throws {
        let queue = CommitQueue()
        try queue.enqueue(PendingCommit(batch: Self.batch(0), completion: { _ in }), limit: 0)   // an empty queue admits any batch
        #expect(queue.takeGroup(extraBytes: 0)?.count == 1)
        queue.finishGroup()
        for closing in [false, true] {
            // The queue holds more than 1 MiB: a submitter with that limit waits.
            try queue.enqueue(PendingCommit(batch: Self.bigBatch, completion: { _ in }))
            let admitted = Mutex(false)
            let done = Self.enqueueOnThread(queue, Self.batch(1), limit: 1 << 20) { admitted.withLock { $0 = true } }
            Thread.sleep(forTimeInterval: 0.2)
            #expect(!admitted.withLock { $0 }, "admitted while the queue was over its limit (closing: \(closing))")
            if closing {
                queue.close()
                #expect(throws: LucidError.self) { try done.wait().get() }
            } else {
                let group = try #require(queue.takeGroup(extraBytes: 0))
                #expect(group.count == 1 && group[0].batch.count == 1, "the big batch alone")
                queue.finishGroup()
                #expect(try done.wait().get())
                #expect(queue.takeGroup(extraBytes: 0)?.count == 1, "the admitted batch")
                queue.finishGroup()
            }
        }
    }
}
