import FuzzCommon

/// libFuzzer entry point; the checks are in OperationChecks.swift (`FuzzTarget.operations`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(.operations, start, count)
}
