/// The fused read of the usual case: the key asked for is the entry at the cursor (keys read in the order they
/// were written) and its value is a well-formed scalar or string of the type asked for.
///
/// ``EntityRecordReader/find(_:)`` followed by the value's read parses each value twice (once to find where it
/// ends, once to read it), through two calls and an optional position; here one pass over the bytes checks the
/// key, reads the value and finds its end, and the cursor moves exactly as `find` moves it. Anything else (another
/// key there, a key that may have been walked already, another type, a null where a value is required, malformed
/// bytes) changes nothing and answers nil; the caller then takes the general path, which gives the same result or
/// error as before. (`decodeIfPresent` reads a null at the cursor as nil.)
extension EntityRecordReader {
    /// `R.read(buffer, valuePosition)` on the value of the entry at the cursor when that entry is `key`'s and
    /// `key` cannot have been walked before; when it gives the value and the position just past it, the entry is
    /// noted as walked and the cursor moves past it. Else nil, and nothing changed.
    ///
    /// The read is a type, not a closure: a closure argument stayed an indirect call here (the optimizer did not
    /// inline it through the buffer access), 30 instructions per read of an `Int` (`record-decode-book`).
    @inline(__always)
    mutating func cursorRead<R: CursorValue>(_ key: StaticString, _ kind: R.Type) -> R.Value? {
        guard next == walked else { return nil }
        let bit = key.withUTF8Buffer { Self.keyBit($0) }
        guard !mayHaveWalked(bit) else { return nil }
        let start = next
        let found: (value: R.Value, end: Int)? = reader.bytes.withUnsafeBufferPointer { buffer in
            guard let value = Self.valuePosition(buffer, ofEntryAt: start, key: key) else { return nil }
            return R.read(buffer, value)
        }
        guard let found else { return nil }
        walkedKeys[bit.word] |= bit.mask
        next = found.end
        walked = found.end
        return found.value
    }
}

extension EntityRecordReader {
    /// The value position of the entry at `entry` in `buffer` when its key is `key`, else nil (also for the
    /// record's end, or a key running past the bytes).
    @inline(__always)
    static func valuePosition(_ buffer: UnsafeBufferPointer<UInt8>, ofEntryAt entry: Int, key: StaticString) -> Int? {
        var p = entry
        guard let keyLength = BinaryReader.quickVarint(buffer, &p), keyLength != 0,
              keyLength - 1 <= UInt64(buffer.count - p) else { return nil }
        let value = p + Int(keyLength - 1)
        return BinaryReader.isKey(buffer, p..<value, key) ? value : nil
    }
}
