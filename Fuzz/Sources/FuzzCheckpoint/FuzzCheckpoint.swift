import FuzzCommon

/// libFuzzer entry point; the checks are in CheckpointChecks.swift (`FuzzTarget.checkpoint`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(.checkpoint, start, count)
}
