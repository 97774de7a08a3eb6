/// A record decoded from a page payload. Byte ranges point into the page's raw payload.
struct DecodedRecord {
    var kind: WriteBatch.Kind
    var sequence: UInt64
    var keyspace: UnsafeRawBufferPointer
    var key: UnsafeRawBufferPointer
    /// Offset of the value within the raw payload, and its length.
    var valueOffset: Int
    var valueLength: Int
    var termCount: Int
    /// Offset within the payload where the terms begin.
    var termsOffset: Int
}

/// Encodes and decodes records (docs/FORMAT.md, "record").
enum RecordCodec {
    /// Encoded size of an operation with the given sequence delta.
    static func encodedSize(_ op: WriteBatch.Operation, seqDelta: UInt64) -> Int {
        1 + ByteWriter.varintSize(seqDelta) + bodySize(keyspace: op.keyspace, key: op.key, value: op.value, terms: op.terms)
    }

    /// Appends the record; returns the offset of the value within `writer`'s bytes.
    static func encode(_ op: WriteBatch.Operation, seqDelta: UInt64, into w: inout ByteWriter) -> Int {
        w.u8(op.kind.rawValue)
        w.varint(seqDelta)
        return encodeBody(keyspace: op.keyspace, key: op.key, value: op.value, terms: op.terms, into: &w).value
    }

    /// Size of a record's body: all of it but its kind and sequence delta. O(terms).
    @inline(__always)
    static func bodySize(keyspace: String, key: [UInt8], value: [UInt8], terms: [IndexTerm]) -> Int {
        let ks = keyspace.utf8.count
        var n = ByteWriter.varintSize(UInt64(ks)) + ks
        n += ByteWriter.varintSize(UInt64(key.count)) + key.count
        n += ByteWriter.varintSize(UInt64(value.count)) + value.count
        n += ByteWriter.varintSize(UInt64(terms.count))
        for t in terms {
            let nl = t.index.utf8.count
            n += ByteWriter.varintSize(UInt64(nl)) + nl + ByteWriter.varintSize(UInt64(t.term.count)) + t.term.count
        }
        return n
    }

    /// Where a record body's key, value and first term begin in the writer it was appended to.
    struct BodyOffsets {
        var key: Int
        var value: Int
        var terms: Int
    }

    /// Appends a record's body (docs/FORMAT.md, "record": from the keyspace name's length to the end of the terms);
    /// returns where its key, value and terms begin.
    @inline(__always)
    static func encodeBody(keyspace: String, key: [UInt8], value: [UInt8], terms: [IndexTerm],
                           into w: inout ByteWriter) -> BodyOffsets {
        w.varint(keyspace.utf8.count)
        w.raw(keyspace.utf8)
        w.varint(key.count)
        let keyOffset = w.count
        w.raw(key)
        w.varint(value.count)
        let valueOffset = w.count
        w.raw(value)
        w.varint(terms.count)
        let termsOffset = w.count
        // Terms read in place: iterating the array would copy each one (its name and its bytes).
        terms.withUnsafeBufferPointer { terms in
            for t in terms.indices {
                w.varint(terms[t].index.utf8.count)
                w.raw(terms[t].index.utf8)
                w.lengthPrefixed(terms[t].term)
            }
        }
        return BodyOffsets(key: keyOffset, value: valueOffset, terms: termsOffset)
    }

    /// Encoded size of a batch's operation (``WriteBatch/Entry``) with the given sequence delta: its kind, the
    /// delta and its body. O(1).
    @inline(__always)
    static func encodedSize(_ entry: WriteBatch.Entry, seqDelta: UInt64) -> Int {
        1 + ByteWriter.varintSize(seqDelta) + entry.bodyLength
    }

    /// Appends the record of a batch's operation `i` (its body copied whole: the batch holds it encoded as
    /// ``encode(_:seqDelta:into:)`` writes it); returns the offset of the value within `writer`'s bytes.
    @inline(__always)
    static func encode(_ ops: WriteBatch.Packed, _ i: Int, seqDelta: UInt64, into w: inout ByteWriter) -> Int {
        let entry = ops[i]
        w.u8(entry.kind.rawValue)
        w.varint(seqDelta)
        let bodyOffset = w.count
        w.raw(ops.body(i))
        return bodyOffset + (entry.valueStart - entry.bodyStart)
    }

    /// Decodes every record of a raw payload, calling `body` for each. Returns false (and stops) when the
    /// payload is malformed: a bad kind, a length past the end or over its cap, trailing bytes, or a count that
    /// differs from `expectedCount`.
    static func decodeAll(_ payload: UnsafeRawBufferPointer, expectedCount: Int, baseSequence: UInt64,
                          _ body: (DecodedRecord) throws -> Void) rethrows -> Bool {
        var r = ByteReader(payload)
        var decoded = 0
        while !r.isAtEnd {
            guard decoded < expectedCount,
                  let kindByte = r.u8(), let kind = WriteBatch.Kind(rawValue: kindByte),
                  let delta = r.varint(), delta <= UInt64.max - baseSequence,
                  let ksLen = r.length(max: Format.maxKeyspaceNameLength), ksLen >= 1,
                  let keyspace = r.slice(ksLen), isValidUTF8(keyspace),
                  let keyLen = r.length(max: Format.maxKeyLength), let key = r.slice(keyLen),
                  let valueLen = r.length(max: Format.maxValueLength),
                  let valueOffset = r.skip(valueLen),
                  let termCount = r.length(max: Format.maxIndexTermsPerRecord)
            else { return false }
            if kind == .delete && (valueLen != 0 || termCount != 0) { return false }
            let termsOffset = r.offset
            for _ in 0..<termCount {
                guard let nl = r.length(max: Format.maxIndexNameLength), nl >= 1, let name = r.slice(nl), isValidUTF8(name),
                      let tl = r.length(max: Format.maxIndexTermLength), r.skip(tl) != nil
                else { return false }
            }
            try body(DecodedRecord(kind: kind, sequence: baseSequence + delta, keyspace: keyspace, key: key,
                                   valueOffset: valueOffset, valueLength: valueLen,
                                   termCount: termCount, termsOffset: termsOffset))
            decoded += 1
        }
        return decoded == expectedCount
    }

    /// Names are UTF-8 (the engine only writes Swift strings); a page with other bytes there is not ours.
    @inline(__always)
    static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // ASCII, the common case, needs no decoding.
        if !bytes.contains(where: { $0 >= 0x80 }) { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }

    /// Decodes the index terms of a record (already validated by ``decodeAll``).
    static func terms(of record: DecodedRecord, in payload: UnsafeRawBufferPointer) -> [IndexTerm] {
        var r = ByteReader(payload, offset: record.termsOffset)
        var terms: [IndexTerm] = []
        terms.reserveCapacity(record.termCount)
        for _ in 0..<record.termCount {
            let nl = r.length(max: Format.maxIndexNameLength)!
            let name = String(decoding: r.slice(nl)!, as: UTF8.self)
            let tl = r.length(max: Format.maxIndexTermLength)!
            terms.append(IndexTerm(index: name, term: r.bytes(tl)!))
        }
        return terms
    }
}
