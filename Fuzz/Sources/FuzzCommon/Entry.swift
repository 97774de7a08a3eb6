/// Runs one fuzz target's check on the bytes libFuzzer passes and traps with the check's message when an invariant
/// breaks, so libFuzzer saves the input (`crash-*`). Traps inside the engine surface the same way.
public func runFuzzCheck(_ target: FuzzTarget, _ start: UnsafeRawPointer, _ count: Int) -> Int32 {
    let bytes = [UInt8](UnsafeRawBufferPointer(start: start, count: count))
    do {
        try target.check(bytes)
    } catch {
        fatalError("\(target.rawValue): \(error)")
    }
    return 0
}
