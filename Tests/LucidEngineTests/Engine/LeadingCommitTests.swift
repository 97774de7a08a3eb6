import Foundation
import Synchronization
import Testing
@testable import LucidEngine

/// A synchronous commit writes its own batch when the writer is idle and nothing is queued
/// (`CommitQueue.tryLead`), and otherwise queues it for the writer thread: either way commits are written one
/// group at a time, in the order they were queued, and each is acknowledged once.
@Suite("Commits written by the committing thread")
struct LeadingCommitTests {
    @Test("a lone synchronous commit is written on the calling thread; an asynchronous one by the writer")
    func loneCommitLeads() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .always))
            defer { try? engine.close() }
            let caller = pthread_self()
            for lead in [true, false] {
                let acknowledgedOn = Mutex<pthread_t?>(nil)
                let box = ResultBox<UInt64>()
                var batch = WriteBatch()
                batch.put([1], forKey: Array("k\(lead)".utf8), in: "ks")
                engine.core.submit(batch, lead: lead) { result in
                    acknowledgedOn.withLock { $0 = pthread_self() }
                    box.fulfill(result)
                }
                _ = try box.wait().get()
                let thread = try #require(acknowledgedOn.withLock { $0 })
                #expect((pthread_equal(thread, caller) != 0) == lead, "lead \(lead)")
            }
            #expect(try engine.get(Array("ktrue".utf8), in: "ks") == [1])
            #expect(try engine.get(Array("kfalse".utf8), in: "ks") == [1])
        }
    }

    @Test("synchronous and asynchronous committers mixed: every commit lands once, in each committer's order")
    func mixedCommittersKeepOrder() async throws {
        let dir = try EngineTest.makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .always))
        let perCommitter = 150
        // Four threads commit synchronously (they lead whenever the writer is idle) while four tasks commit
        // asynchronously (always through the writer thread); each committer's sequences must increase.
        let threads = (0 ..< 4).map { t in
            let done = ResultBox<[UInt64]>()
            let thread = Thread {
                var sequences: [UInt64] = []
                do {
                    for i in 0 ..< perCommitter {
                        var batch = WriteBatch()
                        batch.put(EngineTest.le64(UInt64(i)), forKey: Array("sync-\(t)".utf8), in: "ks")
                        batch.put([UInt8(t)], forKey: Array("sync-\(t)-\(i)".utf8), in: "ks")
                        sequences.append(try engine.commitAndWait(batch))
                    }
                    done.fulfill(.success(sequences))
                } catch {
                    done.fulfill(.failure(error as? LucidError ?? LucidError(code: .io, message: "\(error)")))
                }
            }
            thread.start()
            return done
        }
        try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for t in 0 ..< 4 {
                group.addTask {
                    var sequences: [UInt64] = []
                    for i in 0 ..< perCommitter {
                        var batch = WriteBatch()
                        batch.put(EngineTest.le64(UInt64(i)), forKey: Array("async-\(t)".utf8), in: "ks")
                        batch.put([UInt8(t)], forKey: Array("async-\(t)-\(i)".utf8), in: "ks")
                        sequences.append(try await engine.commit(batch))
                    }
                    return sequences
                }
            }
            for try await sequences in group {
                #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
            }
        }
        var all: [UInt64] = []
        for done in threads {
            let sequences = try done.wait().get()
            #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
            all += sequences
        }
        #expect(Set(all).count == all.count, "a sequence acknowledged twice")
        for t in 0 ..< 4 {
            // The last write of each committer is the one left standing.
            for prefix in ["sync", "async"] {
                #expect(try engine.get(Array("\(prefix)-\(t)".utf8), in: "ks") == EngineTest.le64(UInt64(perCommitter - 1)))
            }
        }
        #expect(engine.snapshot().count(in: "ks") == 8 + 8 * perCommitter)
        try engine.close()
        let reopened = try Engine.open(at: dir, options: EngineTest.options(sync: .always))
        defer { try? reopened.close() }
        #expect(reopened.snapshot().count(in: "ks") == 8 + 8 * perCommitter)
        #expect(try reopened.verify().ok)
    }
}
