/// Walking the entries of a record's keyed container in place, for ``EntityRecordReader``: one checking pass
/// that allocates nothing (it also tells whether a key is stored twice), then entry by entry reads.
extension BinaryReader {
    /// How many keys the checking pass compares by fingerprint on the stack; a container with more entries
    /// has its duplicates found by ``hasDuplicateKeys(at:)`` instead.
    static let fingerprintedKeys = 32

    /// Checks the keyed container whose tag is at `position` at depth 0 exactly as ``keyedEntries(at:depth:_:)``
    /// does (same checks in the same order, so the same errors), without listing its entries.
    /// - Returns: the position just past its end tag, and whether some key is stored twice (exact: keys with
    ///   equal fingerprints are compared byte by byte).
    /// - Throws: `typeMismatch` when the value there is not a keyed container, `dataCorrupted` for bad bytes.
    func checkKeyedContainer(at position: Int) throws -> (end: Int, hasDuplicateKeys: Bool) {
        guard try tag(at: position, []) == .keyed else { throw mismatch([String: Int].self, at: position, []) }
        let capacity = Self.fingerprintedKeys
        let (end, duplicates, overflow) = try withUnsafeTemporaryAllocation(of: KeyPrint.self, capacity: capacity) {
            prints -> (Int, Bool, Bool) in
            var count = 0
            var duplicates = false
            // A 64-bit Bloom filter of the fingerprints: the earlier keys are compared only when a key's bit is set.
            var seen: UInt64 = 0
            var p = position + 1
            while true {
                let keyLength = try quickOrCheckedVarint(at: &p, [])
                if keyLength == 0 { return (p, duplicates, count > capacity) }
                guard keyLength - 1 <= UInt64(bytes.count - p) else {
                    throw corrupt("key past the end of the record", at: p, [])
                }
                let key = p..<(p + Int(keyLength - 1))
                p = key.upperBound
                if !duplicates && count < capacity {
                    let print = KeyPrint(key: key, fingerprint: fingerprint(key))
                    let bit: UInt64 = 1 << ((print.fingerprint &* 0x9E37_79B9_7F4A_7C15) >> 58)
                    if seen & bit != 0 {
                        for i in 0..<count where prints[i].fingerprint == print.fingerprint
                            && keysEqual(prints[i].key, key) {
                            duplicates = true
                            break
                        }
                    }
                    seen |= bit
                    (prints.baseAddress! + count).initialize(to: print)
                }
                count += 1
                p = try valueEnd(at: p, depth: 1, [])
            }
        }
        // Past `capacity` entries the later keys were not compared: an exact pass over all of them (rare).
        if overflow && !duplicates { return (end, try hasDuplicateKeys(at: position)) }
        return (end, duplicates)
    }

    /// Whether two entries of the (already checked) keyed container at `position` have the same key: pairwise.
    private func hasDuplicateKeys(at position: Int) throws -> Bool {
        let entries = try keyedEntries(at: position, depth: 0, []).entries
        for i in entries.indices {
            for j in (i + 1)..<entries.count where keysEqual(entries[i].key, entries[j].key) { return true }
        }
        return false
    }

    /// The key and value position of the entry whose key length is at `position` in a checked container, or nil
    /// at its end tag.
    @inline(__always)
    func entry(at position: Int) throws -> (key: Range<Int>, value: Int)? {
        var p = position
        let keyLength = try quickOrCheckedVarint(at: &p, [])
        if keyLength == 0 { return nil }
        guard keyLength - 1 <= UInt64(bytes.count - p) else { throw corrupt("key past the end of the record", at: p, []) }
        let end = p + Int(keyLength - 1)
        return (p..<end, end)
    }

    /// Whether the key bytes at `a` and `b` are equal.
    func keysEqual(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        return bytes.withUnsafeBufferPointer { bytes in
            bytesEqual(bytes.baseAddress! + a.lowerBound, bytes.baseAddress! + b.lowerBound, count: a.count)
        }
    }

    /// A digest of the key bytes at `range`: its length, first and last byte. Keys with different
    /// fingerprints differ; keys with equal ones are compared byte by byte.
    @inline(__always)
    private func fingerprint(_ range: Range<Int>) -> UInt64 {
        guard let last = range.last else { return 0 }
        return UInt64(range.count) << 16 | UInt64(bytes[range.lowerBound]) << 8 | UInt64(bytes[last])
    }
}

/// Whether the `count` bytes at `a` and `b` are equal: a word or two of overlapping loads for keys of 4 to 16
/// bytes, byte by byte below.
@inline(__always)
func bytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count n: Int) -> Bool {
    if n >= 8 {
        var i = 0
        while i + 8 < n {
            if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
                return false
            }
            i += 8
        }
        return a.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
    }
    if n >= 4 {
        return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
            && a.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self) == b.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
    }
    for i in 0..<n where a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) {
        return false
    }
    return true
}

/// A key of the checking pass: where its bytes are and their fingerprint.
private struct KeyPrint {
    var key: Range<Int>
    var fingerprint: UInt64
}
