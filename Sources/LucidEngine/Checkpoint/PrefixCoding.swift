/// The prefix coding of a checkpoint's sorted byte strings (primary keys, index entries; docs/FORMAT.md,
/// "Checkpoint"): each string as one head varint, `shared << 2 | sameLength << 1 | flag`, where `shared` is the
/// length it shares with the previous string, `sameLength` says it is as long as the previous one (the length of
/// the rest then follows only when it is 0, as a varint), and `flag` is one bit the caller gives the string's
/// own fields (the primary entries: same segment as the previous entry; the index entries: same term length);
/// then the rest of the string. One encoder and one decoder serve both kinds of strings.
struct PrefixEncoder {
    private var previous: [UInt8] = []

    /// Appends `bytes`, coded against the previous string, with the caller's `flag` bit, to `w`.
    mutating func append(_ bytes: UnsafeRawBufferPointer, flag: Bool, to w: inout ByteWriter) {
        let shared = previous.withUnsafeBytes { Self.sharedPrefix($0, bytes) }
        let sameLength = bytes.count == previous.count
        w.varint(UInt64(shared) << 2 | (sameLength ? 2 : 0) | (flag ? 1 : 0))
        if !sameLength { w.varint(bytes.count - shared) }
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
///
/// It also tells whether each string sorts strictly after the previous one, from the shared length and one byte
/// (O(1), no comparison of whole strings): the string after `shared` bytes in common with the previous one is
/// greater when it continues past a previous string of exactly `shared` bytes, or when its first unshared byte is
/// greater than the previous string's byte there. An encoder shares the whole common prefix, so a first unshared
/// byte equal to the previous string's counts as out of order (such a file was not written by ``PrefixEncoder``).
struct PrefixDecoder: ~Copyable {
    private let buffer: UnsafeMutableRawBufferPointer
    private var length = 0
    private var started = false

    /// A decoder of strings of at most `maxLength` bytes.
    init(maxLength: Int) {
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maxLength, alignment: 1)
    }

    deinit { buffer.deallocate() }

    /// Decodes the next string and its caller's flag bit from `r`, or nil when the lengths are malformed, share
    /// more than the previous string has or run past the capacity. `ascending` says whether the string sorts
    /// strictly after the previous one (always true for the first). The string is valid until the next call.
    /// - Complexity: O(unshared length).
    mutating func next(_ r: inout ByteReader) -> (bytes: UnsafeRawBufferPointer, flag: Bool, ascending: Bool)? {
        guard let head = r.varint(), head >> 2 <= UInt64(length) else { return nil }
        let shared = Int(head >> 2)
        let suffixLength: Int
        if head & 2 != 0 {
            suffixLength = length - shared
        } else {
            guard let n = r.length(max: buffer.count - shared) else { return nil }
            suffixLength = n
        }
        guard let suffix = r.slice(suffixLength) else { return nil }
        let ascending: Bool
        if !started {
            ascending = true
            started = true
        } else if suffixLength == 0 {
            ascending = false   // equal to the previous string, or a prefix of it
        } else if shared == length {
            ascending = true    // the previous string followed by more bytes
        } else {
            ascending = suffix[0] > buffer[shared]
        }
        if suffixLength > 0 {
            UnsafeMutableRawBufferPointer(rebasing: buffer[shared..<(shared + suffixLength)]).copyMemory(from: suffix)
        }
        length = shared + suffixLength
        return (UnsafeRawBufferPointer(rebasing: buffer[0..<length]), head & 1 != 0, ascending)
    }
}
