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

#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing

/// A task executor backed by a fixed set of threads, which take its jobs in the order they were enqueued.
///
/// Only for synchronous tests (through ``HeavyTest``): a job holds its thread until it suspends or ends, and the
/// threads are few, so an asynchronous test that blocked one of them waiting for a child task (children inherit the
/// preference) could wait for itself.
final class HeavyTestThreads: TaskExecutor {
    /// The threads every `.heavy` test shares: as many as the processors, at least 2.
    static let shared = HeavyTestThreads(count: max(2, ProcessInfo.processInfo.activeProcessorCount))

    /// The system threads of every `HeavyTestThreads`, each added by the thread itself before it takes a job.
    private static let threads = Mutex<Set<pthread_t>>([])

    /// Whether the caller runs on one of the executor's threads (a test checks that `.heavy` tests do).
    static var isCurrentThread: Bool {
        let current = pthread_self()
        return threads.withLock { $0.contains(current) }
    }

    private let queue = JobQueue()

    private init(count: Int) {
        for _ in 0..<count {
            let thread = Thread { [queue, unowned self] in
                let current = pthread_self()
                _ = HeavyTestThreads.threads.withLock { $0.insert(current) }
                while true { queue.next().runSynchronously(on: self.asUnownedTaskExecutor()) }
            }
            // At least the stack a thread of the global executor has on Linux (8 MiB; the model tests recurse
            // through the B-tree).
            thread.stackSize = 8 << 20
            thread.start()
            // For debuggers and `top` (at most 15 bytes); Foundation names the system thread once it is started.
            thread.name = "lucid-heavy"
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
/// tests only (see ``HeavyTestThreads``); it is a test trait only, so that it sits next to a visibly synchronous
/// function rather than on a suite that may gain asynchronous tests.
struct HeavyTest: TestTrait, TestScoping {
    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(HeavyTestThreads.shared) { try await function() }
    }
}

extension Trait where Self == HeavyTest {
    /// A long synchronous test: it runs on threads of its own, leaving the global executor to the other tests.
    static var heavy: Self { HeavyTest() }
}
