/// A verified, decompressed page payload, shared read-only between readers and the page cache.
final class PageBuffer: Sendable {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Copies `length` bytes at `offset` out, or nil when the range is not inside the page.
    func copy(offset: Int, length: Int) -> [UInt8]? {
        guard offset >= 0, length >= 0, offset <= bytes.count - length else { return nil }
        return bytes.withUnsafeBufferPointer { Array(UnsafeBufferPointer(rebasing: $0[offset..<(offset + length)])) }
    }
}
