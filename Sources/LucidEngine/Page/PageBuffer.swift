/// A verified, decompressed page payload, shared read-only between readers and the page cache.
///
/// A struct over the array, not a class holding it: the array's storage is already a shared, reference-counted
/// object, and a class around it cost a cache hit one more dependent load (entry → object → storage).
struct PageBuffer: Sendable {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Copies `length` bytes at `offset` out, or nil when the range is not inside the page.
    func copy(offset: Int, length: Int) -> [UInt8]? {
        guard offset >= 0, length >= 0, offset <= bytes.count - length else { return nil }
        return bytes.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[offset..<(offset + length)])) }
    }
}
