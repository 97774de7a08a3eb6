import CLZ4

extension LZ4 {
    /// LZ4's fast compressor for independent blocks, keeping its 16 KiB working state between blocks.
    ///
    /// `LZ4_compress_default` clears a fresh state for every block (`LZ4_initStream`: a 16 KiB `memset`, for a
    /// page of 4 KiB). Here the state is cleared once, at `init`, and each block starts with `LZ4_resetStream_fast`,
    /// which moves the state's offsets 64 KiB past every entry it holds instead of clearing them, then compresses
    /// with `LZ4_compress_fast_continue`: a block that refers to nothing before it (liblz4's documented way to
    /// reuse a state, and what its frame format does for independent blocks). The block decodes alone, with
    /// `LZ4_decompress_safe` (``decompress(_:rawLength:)``), as `LZ4_compress_default`'s does.
    ///
    /// Not safe for concurrent use: one owner (a ``PageBuilder``, the writer's ``WriterState``) compresses with it
    /// at a time. Cost: 16 KiB, allocated and cleared once.
    final class BlockCompressor {
        private let stream: UnsafeMutablePointer<LZ4_stream_t>

        init() {
            stream = .allocate(capacity: 1)
            // Fails only for a misaligned or short buffer, which `allocate` never gives.
            precondition(LZ4_initStream(stream, MemoryLayout<LZ4_stream_t>.size) != nil, "LZ4_initStream failed")
        }

        deinit { stream.deallocate() }

        /// Compresses `source` as one independent block and appends it to `destination`; returns its size, or nil
        /// (and `destination` untouched) when LZ4 could not compress it (empty or too large input). O(source.count).
        func compress(_ source: UnsafeRawBufferPointer, appendingTo destination: inout [UInt8]) -> Int? {
            guard source.count > 0, source.count <= Int(LZ4_MAX_INPUT_SIZE) else { return nil }
            LZ4_resetStream_fast(stream)
            return appendBlock(of: source, capacity: bound(source.count), to: &destination) { src, out, count, capacity in
                LZ4_compress_fast_continue(stream, src, out, count, capacity, 1)
            }
        }
    }
}
