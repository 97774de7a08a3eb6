/// Pages whose records are compressed one by one against their segment's dictionary (format version 3,
/// ``Format/pageFlagRecordsCompressed``; docs/FORMAT.md, "Records compressed one by one").
///
/// The stored payload is a table of `recordCount` pairs `rawLength varint | storedLength varint`, then the
/// entries' stored bytes back to back in the same order; an entry whose `storedLength` equals its `rawLength` is
/// stored as it is, a shorter one is an LZ4 block compressed against the dictionary. The table comes first so that
/// a reader finds an entry by reading a few contiguous bytes, not one line of memory per entry before it. The raw
/// payload is the entries' records back to back, exactly what an uncompressed page of the same records holds, so
/// record locations (offsets in the raw payload) mean the same for every kind of page, and a reader that wants one
/// record decodes that record alone.
enum RecordPageCodec {
    /// One entry of a stored payload: where its stored bytes lie and where its record lies in the raw payload.
    struct Entry {
        var stored: Range<Int>
        var rawStart: Int
        var rawLength: Int
        var isCompressed: Bool { stored.count < rawLength }
    }

    /// Calls `body` for each entry in order until it returns false; returns false when the payload is malformed:
    /// a table that does not hold `recordCount` pairs, a raw length of 0 or past `rawLength` in total, a stored length
    /// of 0 or over its raw length, stored bytes past the payload (or, when `body` never stopped, raw lengths that do
    /// not add up to `rawLength` or bytes left after the last entry). O(entries), no allocation.
    static func forEachEntry(_ stored: UnsafeRawBufferPointer, recordCount: Int, rawLength: Int,
                             _ body: (Entry) -> Bool) -> Bool {
        // The table's end, where the stored bytes start.
        var table = ByteReader(stored)
        for _ in 0..<(2 * recordCount) {
            guard table.varint() != nil else { return false }
        }
        var reader = ByteReader(stored)
        var storedStart = table.offset
        var rawStart = 0
        for _ in 0..<recordCount {
            guard let raw = reader.length(max: rawLength - rawStart), raw > 0,
                  let storedLength = reader.length(max: raw), storedLength > 0,
                  storedLength <= stored.count - storedStart else { return false }
            let entry = Entry(stored: storedStart..<(storedStart + storedLength), rawStart: rawStart, rawLength: raw)
            storedStart += storedLength
            rawStart += raw
            if !body(entry) { return true }
        }
        return storedStart == stored.count && rawStart == rawLength
    }

    /// The raw payload of a record-compressed page: every entry decoded, in order, into one buffer of the
    /// header's `rawLength` (bounded by the header's checks). - Throws: ``LucidError/Code/corruption`` at `file`,
    /// `offset` when the entries are malformed or an entry does not decode to its raw length.
    static func decode(_ stored: UnsafeRawBufferPointer, header: PageHeader, dictionary: LZ4.PreparedDictionary,
                       file: String, offset: UInt64) throws -> [UInt8] {
        let rawLength = Int(header.rawLength)
        var ok = true
        let raw = [UInt8](unsafeUninitializedCapacity: rawLength) { buffer, initialized in
            let out = UnsafeMutableRawBufferPointer(buffer)
            let wellFormed = forEachEntry(stored, recordCount: Int(header.recordCount), rawLength: rawLength) { entry in
                let source = UnsafeRawBufferPointer(rebasing: stored[entry.stored])
                let target = UnsafeMutableRawBufferPointer(rebasing: out[entry.rawStart..<(entry.rawStart + entry.rawLength)])
                if entry.isCompressed {
                    ok = dictionary.decompress(source, into: target)
                } else {
                    target.copyMemory(from: source)
                }
                return ok
            }
            ok = ok && wellFormed
            initialized = ok ? rawLength : 0
        }
        guard ok else {
            throw LucidError.corruption("page records do not decode to \(rawLength) bytes", file: file, offset: offset)
        }
        return raw
    }

    /// The bytes `range` of the raw payload, decoding only the entry that holds them, up to where `range` ends
    /// (a range across entries, which no record location makes, decodes the whole page). The caller checks that
    /// `range` lies in the raw payload. - Throws: as ``decode(_:header:dictionary:file:offset:)``.
    static func bytes(_ range: Range<Int>, of stored: UnsafeRawBufferPointer, header: PageHeader,
                      dictionary: LZ4.PreparedDictionary, file: String, offset: UInt64) throws -> [UInt8] {
        switch entryBytes(range, of: stored, recordCount: Int(header.recordCount), rawLength: Int(header.rawLength),
                          dictionary: dictionary) {
        case .bytes(let value): return value
        case .acrossEntries:
            return Array(try decode(stored, header: header, dictionary: dictionary, file: file, offset: offset)[range])
        case .malformed:
            throw LucidError.corruption("page records are malformed", file: file, offset: offset)
        case .undecodable:
            throw LucidError.corruption("a page record does not decode", file: file, offset: offset)
        }
    }

    /// What ``entryBytes(_:of:recordCount:rawLength:dictionary:)`` found.
    enum EntryRead {
        case bytes([UInt8])
        /// `range` is not within one entry.
        case acrossEntries
        /// The table is malformed before the entry holding `range.lowerBound`, or no entry holds it.
        case malformed
        /// That entry's block does not decode far enough.
        case undecodable
    }

    /// The bytes `range` of the raw payload, from the one entry that holds them: found through the table, decoded
    /// only up to where `range` ends (non-empty `range`). No allocation beyond the entry's raw length.
    static func entryBytes(_ range: Range<Int>, of stored: UnsafeRawBufferPointer, recordCount: Int, rawLength: Int,
                           dictionary: LZ4.PreparedDictionary) -> EntryRead {
        var found: Entry?
        let wellFormed = forEachEntry(stored, recordCount: recordCount, rawLength: rawLength) {
            guard range.lowerBound < $0.rawStart + $0.rawLength else { return true }
            found = $0
            return false
        }
        guard wellFormed, let entry = found else { return .malformed }
        let local = (range.lowerBound - entry.rawStart)..<(range.upperBound - entry.rawStart)
        guard local.upperBound <= entry.rawLength else { return .acrossEntries }
        let source = UnsafeRawBufferPointer(rebasing: stored[entry.stored])
        guard entry.isCompressed else { return .bytes(Array(source[local])) }
        return LZ4.withDecompressedPrefix(source, rawLength: entry.rawLength, prefixLength: local.upperBound,
                                          dictionary: dictionary, { Array($0[local]) }).map { .bytes($0) } ?? .undecodable
    }

    /// Encodes `raw` (records back to back, starting at `recordStarts`) as a record-compressed payload appended
    /// to `payload`: each record compressed against `dictionary`, or stored as it is when that is not smaller.
    /// `scratch` holds the entries while the table is written.
    static func encode(_ raw: UnsafeRawBufferPointer, recordStarts: [Int], dictionary: LZ4.PreparedDictionary,
                       appendingTo payload: inout [UInt8], scratch: inout [UInt8]) {
        scratch.removeAll(keepingCapacity: true)
        var table = ByteWriter(capacity: recordStarts.count * 4)
        for (i, start) in recordStarts.enumerated() {
            let end = i + 1 < recordStarts.count ? recordStarts[i + 1] : raw.count
            let record = UnsafeRawBufferPointer(rebasing: raw[start..<end])
            table.varint(record.count)
            if let compressed = dictionary.compress(record, appendingTo: &scratch) {
                table.varint(compressed)
            } else {
                table.varint(record.count)
                scratch.append(contentsOf: record)
            }
        }
        payload.append(contentsOf: table.bytes)
        payload.append(contentsOf: scratch)
    }
}
