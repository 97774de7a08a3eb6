import FuzzCommon

/// libFuzzer entry point; the checks are in FuzzChecks.swift (`FuzzTarget.page`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(.page, start, count)
}
