import FuzzCommon

/// libFuzzer entry point; the checks are in RecoveryChecks.swift (`FuzzTarget.recovery`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(.recovery, start, count)
}
