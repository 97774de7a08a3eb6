import FuzzCommon
import FuzzLucidCommon

/// libFuzzer entry point; the checks are in QueryChecks.swift (`QueryChecks.check`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(named: "FuzzQuery", QueryChecks.check, start, count)
}
