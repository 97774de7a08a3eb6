import FuzzCommon

/// libFuzzer entry point; the checks are in ManifestChecks.swift (`FuzzTarget.manifest`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    runFuzzCheck(.manifest, start, count)
}
