/// Filler: space the writer lays down ahead of the active segment's end (docs/FORMAT.md, "Filler").
///
/// An `fdatasync` after an append that grows a file also commits the file system's journal (the new size and
/// blocks); after an overwrite inside the file it only writes the data. So before a small durable commit the
/// writer extends the active segment with ``Format/fillerByte`` bytes, and the commits that follow overwrite
/// them. Filler is never a page (a page starts with a non-0xFF magic), recovery reads a tail made only of filler
/// as the clean end of the log, and close and roll cut it off.
extension SegmentFile {
    /// Bytes of filler written or checked per call to the file layer.
    static let fillerChunkLength = 64 << 10
    private static let fillerChunk = [UInt8](repeating: Format.fillerByte, count: fillerChunkLength)

    /// Writes filler over `[start, end)`. - Throws: ``LucidError/Code/io`` (possibly after writing a prefix,
    /// which is filler too).
    func writeFiller(from start: UInt64, to end: UInt64) throws {
        var position = start
        while position < end {
            let count = Int(min(UInt64(Self.fillerChunkLength), end - position))
            try Self.fillerChunk.withUnsafeBytes {
                try handle.write(UnsafeRawBufferPointer(rebasing: $0[0..<count]), at: position)
            }
            position += UInt64(count)
        }
    }

    /// Whether every byte of `[start, end)` is filler (true for an empty range). Reads 64 KiB at a time,
    /// whatever the range's length. - Throws: ``LucidError/Code/io``.
    func isFiller(from start: UInt64, to end: UInt64) throws -> Bool {
        var position = start
        while position < end {
            let count = Int(min(UInt64(Self.fillerChunkLength), end - position))
            let bytes = try handle.read(at: position, count: count)
            guard bytes.count == count, !bytes.contains(where: { $0 != Format.fillerByte }) else { return false }
            position += UInt64(count)
        }
        return true
    }
}
