import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// engine-notes §9.9 test 5's last clause, checked in a real process: no allocation sized by a hostile header.
/// In this process a 4 GiB allocation would simply succeed (the machine has the memory, and pages are committed
/// lazily), so ``HostileHeaderTests`` cannot see one. Here `lucidctl verify` and `lucidctl recover` (which reads
/// every page it can, past damage) run on each forged store under an address-space limit (`ulimit -v`) of
/// ``addressSpaceLimitKiB``: an allocation sized by a hostile length field fails there, and Swift ends the process
/// on a failed allocation, so a crash instead of the expected exit status shows it. What this catches is an
/// allocation of more than about 128 MiB (the limit less what the tool needs on a clean store), not every one above
/// the largest page (8 MiB) that §9.9 asks about: the fuzzers check that bound, with libFuzzer's
/// `-malloc_limit_mb=64` (Fuzz/run.sh).
///
/// The limit counts address space, not memory: each thread's stack (8 MiB) and each malloc arena (64 MiB) reserve
/// some, so the child runs with `MALLOC_ARENA_MAX=2` and the limit grows with the processor count (the tool's
/// parallel reads start a thread per processor). On this 2-processor machine the tool runs under 96 MiB.
@Suite("Recovery: hostile page headers under an address-space limit")
struct HostileHeaderMemoryTests {
    /// 192 MiB of address space plus 16 MiB per processor: `lucidctl verify` and `recover` of a small store run in
    /// 96 MiB on 2 processors (measured with `ulimit -v` and `MALLOC_ARENA_MAX=2`), while an allocation sized by a
    /// hostile 32-bit length (up to 4 GiB) does not fit.
    static let addressSpaceLimitKiB = (192 + 16 * ProcessInfo.processInfo.activeProcessorCount) << 10

    struct Outcome {
        var status: Int32
        var signaled: Bool
        var output: String
    }

    /// Runs `lucidctl arguments` under the address-space limit, through `bash -c 'ulimit -v …; exec …'`.
    static func lucidctl(_ arguments: [String]) throws -> Outcome {
        let tool = try #require(BuiltProducts.executable(named: "lucidctl", override: "LUCIDCTL"),
                                "lucidctl not found next to the test binary")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "ulimit -v \(addressSpaceLimitKiB) && exec \"$0\" \"$@\"", tool.path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"   // a crash ends at once, without the backtracer's report
        environment["MALLOC_ARENA_MAX"] = "2"           // each arena reserves 64 MiB of address space
        process.environment = environment
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
                       output: String(decoding: output, as: UTF8.self))
    }

    @Test("the limit leaves room for the tool on a clean store (control)")
    func cleanStoreUnderTheLimit() throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try HostileHeaderTests.makeStore(dir)
            let verified = try Self.lucidctl(["verify", dir])
            #expect(verified.status == 0 && !verified.signaled, "\(verified.output)")
            let recovered = try Self.lucidctl(["recover", dir, "--out", dir + "-recovered"])
            defer { try? FileManager.default.removeItem(atPath: dir + "-recovered") }
            #expect(recovered.status == 0 && !recovered.signaled, "\(recovered.output)")
        }
    }

    @Test("verify and recover of a store with a hostile page exit with a status, in the tail or before synced pages",
          .heavy,
          arguments: HostileHeaderTests.cases)
    func hostilePageUnderTheLimit(_ hostile: HostileHeaderTests.Case) throws {
        for placement in ["tail", "middle"] {
            try EngineTest.withTemporaryDirectory { dir in
                let store = try HostileHeaderTests.makeStore(dir)
                if placement == "tail" {
                    let forged = hostile.forge(store.context(at: store.original.count,
                                                             sequence: UInt64(store.groups.count + 1)))
                    try EngineTest.append(store.segment, forged)
                } else {
                    let g = store.groups.count - 3
                    let at = store.groups[g].start
                    try EngineTest.insert(store.segment, at: at, hostile.forge(store.context(at: at, sequence: UInt64(g + 1))))
                }
                let tag = "[\(hostile), \(placement)]"
                // Strict recovery: a cut tail is damage too, so verify finds a problem either way.
                let verified = try Self.lucidctl(["verify", dir])
                #expect(!verified.signaled && verified.status == 2, "\(tag) verify: \(verified.status) \(verified.output.prefix(400))")
                let out = dir + "-recovered"
                defer { try? FileManager.default.removeItem(atPath: out) }
                let recovered = try Self.lucidctl(["recover", dir, "--out", out])
                #expect(!recovered.signaled && recovered.status == 0, "\(tag) recover: \(recovered.status) \(recovered.output.prefix(400))")
            }
        }
    }
}
