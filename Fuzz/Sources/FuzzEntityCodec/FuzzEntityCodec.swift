import FuzzCommon
import FuzzLucidCommon

/// libFuzzer entry point; the checks are in EntityCodecChecks.swift (`EntityCodecChecks.check`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(named: "FuzzEntityCodec", EntityCodecChecks.check, start, count)
}
