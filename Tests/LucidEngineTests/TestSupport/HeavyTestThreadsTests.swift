import Testing

/// The `.heavy` trait (Support/HeavyTestThreads.swift) moves a synchronous test off the global executor's threads:
/// if the task executor preference did not reach the test's body, the long tests would hold those threads again.
@Suite("Test support: heavy tests run on threads of their own")
struct HeavyTestThreadsTests {
    @Test("a .heavy test runs on a heavy-test thread", .heavy)
    func heavyTestRunsOnItsThreads() {
        #expect(HeavyTestThreads.isCurrentThread)
    }

    @Test("every case of a parameterized .heavy test does too", .heavy, arguments: 0..<4)
    func everyCaseRunsOnItsThreads(_ index: Int) {
        #expect(HeavyTestThreads.isCurrentThread, "case \(index)")
    }

    @Test("a test without the trait runs elsewhere")
    func plainTestRunsElsewhere() {
        #expect(!HeavyTestThreads.isCurrentThread)
    }
}
