import FuzzCommon

/// libFuzzer entry point; the checks are in PageChecks.swift (`FuzzTarget.page`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(.page, start, count)
}
