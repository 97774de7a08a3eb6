import CLZ4

/// The engine's safe wrapper of liblz4's block API. The C module stays behind this file.
enum LZ4 {
    /// The worst-case compressed size of `count` bytes (`LZ4_COMPRESSBOUND`).
    @inline(__always) static func bound(_ count: Int) -> Int { count + count / 255 + 16 }

    /// Compresses `source` and appends the result to `destination`; returns the compressed size, or `nil`
    /// when LZ4 could not compress (input too large). `destination` is untouched on `nil`.
    ///
    /// `level` 0 uses the fast compressor (`LZ4_compress_default`); 1...12 use LZ4HC at that level, which is
    /// several times slower to compress and smaller, and decompresses with the same `LZ4_decompress_safe`
    /// (one block format: nothing on disk says which compressor wrote a page).
    static func compress(_ source: UnsafeRawBufferPointer, appendingTo destination: inout [UInt8],
                         level: Int = 0) -> Int? {
        guard source.count > 0, source.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
        return appendBlock(of: source, capacity: bound(source.count), to: &destination) { src, out, count, capacity in
            level > 0 ? LZ4_compress_HC(src, out, count, capacity, Int32(min(level, 12)))
                : LZ4_compress_default(src, out, count, capacity)
        }
    }

    /// Appends `capacity` bytes of room to `destination`, has `compress` write a block of `source` there (given the
    /// source, the room, the source's length and the room's), and trims the room to what it wrote: the block's size,
    /// or nil (and `destination` as it was) when `compress` returns 0 or less. The one place a compressor writes
    /// into an array. Requires a nonempty `source` of at most `LZ4_MAX_INPUT_SIZE` bytes and `capacity` > 0.
    static func appendBlock(
        of source: UnsafeRawBufferPointer, capacity: Int, to destination: inout [UInt8],
        _ compress: (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>, Int32, Int32) -> Int32
    ) -> Int? {
        let start = destination.count
        destination.append(contentsOf: repeatElement(0, count: capacity))
        let written = destination.withUnsafeMutableBytes { dst in
            compress(source.baseAddress!.assumingMemoryBound(to: CChar.self),
                     (dst.baseAddress! + start).assumingMemoryBound(to: CChar.self), Int32(source.count), Int32(capacity))
        }
        guard written > 0 else {
            destination.removeLast(capacity)
            return nil
        }
        destination.removeLast(capacity - Int(written))
        return Int(written)
    }

    /// Decompresses `source` into exactly `rawLength` bytes with `LZ4_decompress_safe`, which never writes
    /// outside its buffer whatever the input. Returns `nil` when the input is malformed or does not decode to
    /// exactly `rawLength` bytes. The caller bounds `rawLength` before calling.
    static func decompress(_ source: UnsafeRawBufferPointer, rawLength: Int) -> [UInt8]? {
        guard rawLength > 0, source.count > 0, source.count <= Int(Int32.max) else { return nil }
        var ok = false
        let result = [UInt8](unsafeUninitializedCapacity: rawLength) { dst, initialized in
            let n = LZ4_decompress_safe(
                source.baseAddress!.assumingMemoryBound(to: CChar.self),
                UnsafeMutableRawPointer(dst.baseAddress!).assumingMemoryBound(to: CChar.self),
                Int32(source.count), Int32(rawLength))
            ok = n == Int32(rawLength)
            initialized = ok ? rawLength : 0
        }
        return ok ? result : nil
    }

    /// Decompresses the first `prefixLength` bytes of the block `source`, which decodes to `rawLength` bytes,
    /// and calls `body` with them (valid only during the call). Decoding stops at `prefixLength`
    /// (`LZ4_decompress_safe_partial`, as safe as `decompress` against any input): a reader that needs one value
    /// of a page skips decoding the rest. Returns `nil` without calling `body` when the input is malformed or
    /// decodes to fewer than `prefixLength` bytes. Requires `0 < prefixLength <= rawLength`; the caller bounds
    /// `rawLength` (a page's is at most `Format.maxRawPageLength`). Cost: O(prefixLength) and a scratch buffer of
    /// `rawLength` bytes (`withUnsafeTemporaryAllocation`: on the heap beyond a small size). The scratch is the
    /// whole decoded size, not the prefix, because liblz4 before 1.9 could write past `targetOutputSize` (up to
    /// the capacity it is given) and needed that margin to succeed.
    /// With `dictionary`, the block was compressed against it (`LZ4_decompress_safe_partial_usingDict`).
    static func withDecompressedPrefix<R>(_ source: UnsafeRawBufferPointer, rawLength: Int, prefixLength: Int,
                                          dictionary: PreparedDictionary? = nil,
                                          _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard prefixLength > 0, prefixLength <= rawLength, source.count > 0, source.count <= Int(Int32.max),
              rawLength <= Int(Int32.max) else { return nil }
        return try withUnsafeTemporaryAllocation(byteCount: rawLength, alignment: 16) { scratch -> R? in
            // The whole block is passed (`source.count` is its exact size), so liblz4 never reads past it, and the
            // destination capacity is the whole decoded size, so it never writes past the scratch.
            let src = source.baseAddress!.assumingMemoryBound(to: CChar.self)
            let dst = scratch.baseAddress!.assumingMemoryBound(to: CChar.self)
            let n = if let dictionary {
                LZ4_decompress_safe_partial_usingDict(src, dst, Int32(source.count), Int32(prefixLength), Int32(rawLength),
                                                      dictionary.bytes.baseAddress!.assumingMemoryBound(to: CChar.self),
                                                      Int32(dictionary.count))
            } else {
                LZ4_decompress_safe_partial(src, dst, Int32(source.count), Int32(prefixLength), Int32(rawLength))
            }
            guard n >= Int32(prefixLength) else { return nil }
            return try body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(scratch)[0..<prefixLength]))
        }
    }

    // MARK: Records compressed against a dictionary

    /// A dictionary prepared for compression: liblz4's stream state after `LZ4_loadDict`, which each record's
    /// compression copies (16 KiB) instead of loading the dictionary again (which hashes all of it). Only liblz4's
    /// stable API is used (`LZ4_attach_dictionary`, which would avoid the copy, is not exported by the system
    /// library). Immutable once built; the bytes it refers to are kept alive with it.
    final class PreparedDictionary: @unchecked Sendable {
        /// The dictionary's bytes (the stream state points into them).
        let bytes: UnsafeMutableRawBufferPointer
        private let stream: UnsafeMutablePointer<LZ4_stream_t>

        init(_ dictionary: [UInt8]) {
            precondition(dictionary.count <= Format.maxDictionaryLength)
            let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(dictionary.count, 1), alignment: 16)
            dictionary.withUnsafeBytes { if !$0.isEmpty { bytes.copyMemory(from: $0) } }
            self.bytes = bytes
            stream = .allocate(capacity: 1)
            _ = LZ4_initStream(stream, MemoryLayout<LZ4_stream_t>.size)
            _ = LZ4_loadDict(stream, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(dictionary.count))
            count = dictionary.count
        }

        /// The dictionary's length (`bytes` may be one byte longer for an empty dictionary).
        let count: Int

        /// The dictionary's bytes, copied out (what a dictionary page holds).
        var contents: [UInt8] { Array(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[0..<count])) }

        deinit {
            stream.deallocate()
            bytes.deallocate()
        }

        /// Compresses `source` against the dictionary and appends the block to `destination`; returns its size, or
        /// nil (and `destination` untouched) when the block would not be smaller than `source`.
        func compress(_ source: UnsafeRawBufferPointer, appendingTo destination: inout [UInt8]) -> Int? {
            guard source.count > 1, source.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
            return withUnsafeTemporaryAllocation(of: LZ4_stream_t.self, capacity: 1) { work in
                work.baseAddress!.update(from: stream, count: 1)
                return appendBlock(of: source, capacity: source.count - 1, to: &destination) { src, out, count, capacity in
                    LZ4_compress_fast_continue(work.baseAddress!, src, out, count, capacity, 1)
                }
            }
        }

        /// Decodes the block `source`, compressed against this dictionary, into `destination`, which it must fill
        /// exactly (`LZ4_decompress_safe_usingDict`: never reads or writes outside the buffers, whatever the input).
        /// Returns false when the block is malformed or does not decode to exactly `destination.count` bytes.
        func decompress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) -> Bool {
            guard destination.count > 0, source.count > 0, source.count <= Int(Int32.max),
                  destination.count <= Int(Int32.max) else { return false }
            let n = LZ4_decompress_safe_usingDict(
                source.baseAddress!.assumingMemoryBound(to: CChar.self),
                destination.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(source.count), Int32(destination.count),
                bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(count))
            return n == Int32(destination.count)
        }

    }
}
