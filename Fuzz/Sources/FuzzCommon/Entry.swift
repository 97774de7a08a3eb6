#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `LUCID_FUZZ_IGNORE=<text>`: a failing check whose message contains `<text>` does not trap, so a run can go on
/// past a finding already saved in `FailCases/` (and listed in `KNOWN-ISSUES`). Never set by `run.sh` itself.
private let ignoredFailure: String? = getenv("LUCID_FUZZ_IGNORE").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }

/// Runs one fuzz target's check on the bytes libFuzzer passes and traps with the check's message when an invariant
/// breaks, so libFuzzer saves the input (`crash-*`). Traps inside the engine surface the same way.
public func runFuzzCheck(_ target: FuzzTarget, _ start: UnsafeRawPointer, _ count: Int) -> Int32 {
    runFuzzCheck(named: target.rawValue, target.check, start, count)
}

/// The same for a target whose check lives outside `FuzzTarget` (the Lucid data layer's targets, in FuzzLucidCommon).
public func runFuzzCheck(named name: String, _ check: ([UInt8]) throws -> Void, _ start: UnsafeRawPointer,
                         _ count: Int) -> Int32 {
    let bytes = [UInt8](UnsafeRawBufferPointer(start: start, count: count))
    do {
        try check(bytes)
    } catch {
        if let ignoredFailure, "\(error)".contains(ignoredFailure) { return 0 }
        fatalError("\(name): \(error)")
    }
    return 0
}
