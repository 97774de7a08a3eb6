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
        let capacity = Self.fingerprintedKeys
        let (end, duplicates, count) = try withUnsafeTemporaryAllocation(of: KeyPrint.self, capacity: capacity) {
            prints -> (Int, Bool, Int) in
            // A record of scalars, strings and identifiers in one tight pass; any other shape, or bad bytes, in
            // the checked pass (which gives the same result, or throws the error).
            if let walk = quickWalk(at: position, prints) { return walk }
            return try checkedWalk(at: position, prints)
        }
        // Past `capacity` entries the later keys were not compared: an exact pass over all of them (rare).
        if count > capacity && !duplicates { return (end, try hasDuplicateKeys(at: position)) }
        return (end, duplicates)
    }

    /// ``checkKeyedContainer(at:)``'s walk: the end, whether a key is stored twice, the number of entries.
    private func checkedWalk(at position: Int, _ prints: UnsafeMutableBufferPointer<KeyPrint>) throws
        -> (Int, Bool, Int) {
        guard try tag(at: position, []) == .keyed else { throw mismatch([String: Int].self, at: position, []) }
        var count = 0
        var duplicates = false
        var seen: UInt64 = 0
        var p = position + 1
        while true {
            let keyLength = try quickOrCheckedVarint(at: &p, [])
            if keyLength == 0 { return (p, duplicates, count) }
            guard keyLength - 1 <= UInt64(bytes.count - p) else {
                throw corrupt("key past the end of the record", at: p, [])
            }
            let key = p..<(p + Int(keyLength - 1))
            p = key.upperBound
            if !duplicates { duplicates = noteKey(key, count, prints, &seen) }
            count += 1
            p = try valueEnd(at: p, depth: 1, [])
        }
    }

    /// ``checkedWalk(at:_:)`` for a well-formed record whose values are scalars, strings or keyed containers of
    /// those, in one pass over the bytes; nil for any other record.
    @inline(__always)
    private func quickWalk(at position: Int, _ prints: UnsafeMutableBufferPointer<KeyPrint>) -> (Int, Bool, Int)? {
        bytes.withUnsafeBufferPointer { buffer in
            guard position < buffer.count, buffer[position] == EntityCodec.Tag.keyed.rawValue else { return nil }
            var count = 0
            var duplicates = false
            var seen: UInt64 = 0
            var p = position + 1
            while true {
                guard let keyLength = Self.quickVarint(buffer, &p) else { return nil }
                if keyLength == 0 { return (p, duplicates, count) }
                guard keyLength - 1 <= UInt64(buffer.count - p) else { return nil }
                let key = p..<(p + Int(keyLength - 1))
                p = key.upperBound
                if !duplicates { duplicates = noteKey(key, count, prints, &seen) }
                count += 1
                guard let end = Self.quickValueEnd(buffer, at: p, depth: 1) else { return nil }
                p = end
            }
        }
    }

    /// Notes `key`, the record's entry number `count`, in `prints` (the first `prints.count` keys only), and
    /// tells whether an earlier key equals it. `seen` is a 64-bit Bloom filter of the fingerprints noted: the
    /// earlier keys are compared only when the key's bit is set.
    @inline(__always)
    private func noteKey(_ key: Range<Int>, _ count: Int, _ prints: UnsafeMutableBufferPointer<KeyPrint>,
                         _ seen: inout UInt64) -> Bool {
        guard count < prints.count else { return false }
        let print = KeyPrint(key: key, fingerprint: fingerprint(key))
        let bit: UInt64 = 1 << ((print.fingerprint &* 0x9E37_79B9_7F4A_7C15) >> 58)
        (prints.baseAddress! + count).initialize(to: print)
        if seen & bit == 0 {
            seen |= bit
            return false
        }
        for i in 0..<count where prints[i].fingerprint == print.fingerprint && keysEqual(prints[i].key, key) {
            return true
        }
        return false
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
struct KeyPrint {
    var key: Range<Int>
    var fingerprint: UInt64
}
