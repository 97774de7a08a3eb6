/// The prefix coding of a checkpoint's sorted byte strings (primary keys, index entries; docs/FORMAT.md,
/// "Checkpoint"): each string as the length it shares with the previous one (varint), the length of the rest
/// (varint) and the rest. One encoder and one decoder serve both kinds of strings.
struct PrefixEncoder {
    private var previous: [UInt8] = []

    /// Appends `bytes`, coded against the previous string, to `w`.
    mutating func append(_ bytes: UnsafeRawBufferPointer, to w: inout ByteWriter) {
        let shared = previous.withUnsafeBytes { Self.sharedPrefix($0, bytes) }
        w.varint(shared)
        w.varint(bytes.count - shared)
        w.raw(UnsafeRawBufferPointer(rebasing: bytes[shared...]))
        previous.removeAll(keepingCapacity: true)
        previous.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
    }

    /// Length of the common prefix of two byte strings.
    private static func sharedPrefix(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        var i = 0
        while i < n && a[i] == b[i] { i += 1 }
        return i
    }
}

/// Reads back what ``PrefixEncoder`` wrote, into a buffer of a fixed capacity (the longest string allowed), so
/// that decoding never reallocates and never allocates by what the bytes claim.
struct PrefixDecoder: ~Copyable {
    private let buffer: UnsafeMutableRawBufferPointer
    private var length = 0

    /// A decoder of strings of at most `maxLength` bytes.
    init(maxLength: Int) {
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength, alignment: 1)
    }

    deinit { buffer.deallocate() }

    /// Decodes the next string from `r`, or nil when the lengths are malformed, share more than the previous
    /// string has or run past the capacity. The result is valid until the next call.
    mutating func next(_ r: inout ByteReader) -> UnsafeRawBufferPointer? {
        guard let shared = r.length(max: length), let suffixLength = r.length(max: buffer.count - shared),
              let suffix = r.slice(suffixLength) else { return nil }
        if suffixLength > 0 {
            UnsafeMutableRawBufferPointer(rebasing: buffer[shared..<(shared + suffixLength)]).copyMemory(from: suffix)
        }
        length = shared + suffixLength
        return UnsafeRawBufferPointer(rebasing: buffer[0..<length])
    }
}
