// The `.heavy` trait: long synchronous tests run on threads of their own, not on the pool that runs Swift tasks.
//
// Swift Testing calls a synchronous test function from a task, so it occupies one of the global executor's threads
// (as many as there are processors) for as long as it runs. The crash-point enumerations, the truncation loop, the
// kill -9 loops and the randomized model tests take 5 to 70 s each; together they held both threads of a 2-core
// machine for minutes, and the asynchronous tests that were waiting (a loopback server's answer, a bounded wait)
// got no thread meanwhile. Their wall-clock bounds then measured that wait, not the code: a 10-second bound failed a
// CI run once, and two 3-minute limits failed a run on a busy machine. Under `.heavy` such a test runs on
// `HeavyTestThreads`, a fixed set of threads of its own (through a task executor preference), so the global
// executor stays free for the others; the operating system shares the processors between both.

import Foundation
import Testing

/// A task executor backed by a fixed set of threads, which run its jobs in the order they were enqueued.
///
/// Only for synchronous tests (through ``HeavyTest``): a job holds its thread until it suspends or ends, and the
/// threads are few, so an asynchronous test that blocked one of them waiting for a child task (children inherit the
/// preference) could wait for itself.
final class HeavyTestThreads: TaskExecutor {
    /// The threads every `.heavy` test shares: as many as the processors, at least 2.
    static let shared = HeavyTestThreads(count: max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// The name of the threads (a test checks that it runs on one).
    static let threadName = "lucid-heavy"

    private let queue = JobQueue()

    private init(count: Int) {
        for _ in 0..<count {
            let thread = Thread { [queue, unowned self] in
                // Named from the thread itself, which is when Foundation names the system thread (a name longer
                // than 15 bytes is refused).
                Thread.current.name = HeavyTestThreads.threadName
                while true { queue.next().runSynchronously(on: self.asUnownedTaskExecutor()) }
            }
            // The same stack a thread of the global executor has (the model tests recurse through the B-tree).
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        queue.append(UnownedJob(job))
    }

    /// The jobs waiting for a thread: a FIFO behind a condition variable.
    private final class JobQueue: @unchecked Sendable {
        // @unchecked: `jobs` is read and written only with `condition` locked.
        private let condition = NSCondition()
        private var jobs: [UnownedJob] = []
        private var head = 0

        func append(_ job: UnownedJob) {
            condition.lock()
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        /// The oldest job; waits for one.
        func next() -> UnownedJob {
            condition.lock()
            defer { condition.unlock() }
            while head == jobs.count { condition.wait() }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            return job
        }
    }
}

/// Runs each test (each case of a parameterized one) it applies to on ``HeavyTestThreads``. Apply it to synchronous
/// tests only (see ``HeavyTestThreads``).
struct HeavyTest: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(HeavyTestThreads.shared) { try await function() }
    }
}

extension Trait where Self == HeavyTest {
    /// A long synchronous test: it runs on threads of its own, leaving the global executor to the other tests.
    static var heavy: Self { HeavyTest() }
}
