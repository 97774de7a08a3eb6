import CLucidSupport

extension SegmentFile {
    /// Maps `capacity` bytes of the file (more than it holds is allowed: only bytes below ``readableEnd`` are
    /// ever read), so that page reads check and decompress straight from the page cache instead of a `pread`
    /// into a buffer. Does nothing for a file layer that cannot map (the fault-injecting one) or when `mmap`
    /// fails: reads then keep using `pread`. Cost: one `mmap` call; pages fault in on first use.
    ///
    /// The mapping records which pages reads have checked (``CheckedPages``): a later read of one skips its
    /// checksum. With `readingInPlace` (``EngineOptions/PageCompression/none``,
    /// ``EngineOptions/PageCompression/lz4Records``), reads copy values in place from checked pages stored without
    /// whole-page compression (``checkedValue(pageAt:range:records:)``).
    ///
    /// Sound because the engine never changes or cuts a byte below a segment's published end: the writer
    /// appends (and cuts only its own filler, past the end), and a sealed segment is immutable.
    func map(capacity: UInt64, readingInPlace: Bool) {
        guard capacity > UInt64(Format.segmentHeaderLength), capacity <= UInt64(Int.max),
              let posix = handle as? PosixFileHandle,
              let mapped = try? posix.map(length: Int(capacity)) else { return }
        mapping.install(SegmentMapping(file: mapped, readsInPlace: readingInPlace))
    }

    /// Maps a sealed segment of `length` bytes (its file's size) and lets reads use all of it. A segment mapped
    /// while it was active keeps that mapping when it covers `length`.
    func mapSealed(length: UInt64, readingInPlace: Bool) {
        setReadableEnd(length)
        if mapping.withCurrent({ ($0?.bytes.count ?? 0) >= length }) { return }
        map(capacity: length, readingInPlace: readingInPlace)
    }

    /// Maps the active segment, whose published end is `end`, with room to grow to a quarter past `segmentSize`
    /// (a page that does not end inside the mapping is read with `pread`; a segment grows past its size by at most
    /// one commit group, which can be large).
    func mapActive(end: UInt64, segmentSize: UInt64, readingInPlace: Bool) {
        setReadableEnd(end)
        map(capacity: max(end, segmentSize + segmentSize / 4), readingInPlace: readingInPlace)
    }

    /// Moves the bound of mapped reads: the writer calls it with the active segment's end before publishing the
    /// records below it.
    func setReadableEnd(_ end: UInt64) { readableEnd.store(end, ordering: .releasing) }

    /// Asks the processor to start loading the first ``prefetchSpan`` bytes of the page at `offset` (its header
    /// and most of a typical stored page) from the mapping, when the segment is mapped: a point read that missed
    /// the page cache calls it before deciding what to do with the miss, so that the lines the header check and
    /// the checksum then read, the memory such a read waits for, are on their way meanwhile. A hint: it reads
    /// nothing and cannot fail; nothing past the readable end is touched. O(1).
    func prefetchPage(at offset: UInt64) {
        let limit = readableEnd.load(ordering: .acquiring)
        // Borrowed: taking a reference would retain and release it, an atomic write to memory every reader shares.
        mapping.withCurrent { mapped in
            guard let mapped, let base = mapped.bytes.baseAddress else { return }
            let end = min(UInt64(mapped.bytes.count), limit, offset + UInt64(Self.prefetchSpan))
            guard offset < end else { return }
            lucid_prefetch_range(base + Int(offset), Int(end - offset))   // every cache line the span touches
        }
    }

    /// Whether a read of the page at `offset` will check it in place, so that later point reads of it copy (or
    /// decode) their values straight from the mapping (``checkedValue(pageAt:range:records:)``): the segment is
    /// mapped for in-place reads (``SegmentMapping/readsInPlace``), and the page's header says it is stored without whole-page compression and
    /// ends inside the mapping, below the readable end. A point read that misses such a page decodes only its own
    /// value instead of caching the page whole for point reads that would never ask the cache for it (a `forEach`
    /// run over the page, or a lookup of a record's index terms, still reads it whole through the cache and caches
    /// it then). A hint read from a header not checked yet: the read that follows checks everything. O(1), no
    /// lock; reads the page's header from the mapping.
    func readsInPlace(pageAt offset: UInt64) -> Bool {
        mapping.withCurrent { mapped in
            guard let mapped, mapped.readsInPlace,
                  let (header, limit) = mappedHeader(at: offset, in: mapped) else { return false }
            let flags = header.load(fromByteOffset: Format.pageHeaderFlagsOffset, as: UInt8.self)
            let storedOffset = Format.pageHeaderStoredLengthOffset
            let storedLength = UInt32(littleEndian: header.loadUnaligned(fromByteOffset: storedOffset, as: UInt32.self))
            return flags & Format.pageFlagCompressed == 0
                && UInt64(storedLength) <= limit - offset - UInt64(Format.pageHeaderLength)
        }
    }

    /// Where the header of the page at `offset` lies in `mapped`, and the bound every mapped read stops at (the
    /// mapping's size or the readable end, the smaller), when the header lies below that bound; nil otherwise.
    /// Reads nothing of the page. O(1).
    @inline(__always)
    private func mappedHeader(at offset: UInt64,
                              in mapped: SegmentMapping) -> (header: UnsafeRawPointer, limit: UInt64)? {
        guard let base = mapped.bytes.baseAddress else { return nil }
        let limit = min(UInt64(mapped.bytes.count), readableEnd.load(ordering: .acquiring))
        guard offset <= limit, limit - offset >= UInt64(Format.pageHeaderLength) else { return nil }
        return (UnsafeRawPointer(base) + Int(offset), limit)
    }

    /// How much of a page `prefetchPage` asks for: 2 KiB (random gets on a 1M-record store, mostly missing the
    /// page cache, ran fastest with 2 KiB among 256 bytes, 768 bytes, 2 KiB and 3 KiB).
    static let prefetchSpan = 2048

    /// `decode` applied to the header and stored payload of the page at `offset` in the mapped bytes, with the
    /// `pread` path's checks against `fileEnd`; nil when the page does not lie wholly below `limit` (the readable
    /// end, at most the mapping's size), for the `pread` path to read. So a damaged header can never make a read
    /// leave the bytes the file holds. `decode` verifies the payload (``PageCodec``, as every reader of
    /// ``StoredPageDecoder`` does), told whether a read from this mapping did already (``CheckedPages``): a page it
    /// returns from is marked checked, so that the next read of it skips the checksum. Sound because a byte below
    /// the readable end never changes while it is mapped (see ``map(capacity:readingInPlace:)``); the header is
    /// decoded and checked on every read all the same. A page's bit covers 32 bytes, so a damaged location up to 31
    /// bytes before a checked page's start finds its bit set: the bytes it reads as a header must then still pass
    /// ``PageHeader/decode(_:expectedSalt:bytesAvailable:)`` (the page magic and this segment's random salt, 64
    /// bits, known type and flags, lengths within bounds) before anything is decoded, and decoding stays within the
    /// mapping whatever the bytes (`LZ4_decompress_safe`). Locations come from checked pages and checkpoints.
    func mappedPage<R>(at offset: UInt64, fileEnd: UInt64, limit: UInt64, in mapped: SegmentMapping,
                       _ decode: StoredPageDecoder<R>) throws -> R? {
        let bytes = mapped.bytes
        let headerLength = Format.pageHeaderLength
        precondition(limit <= UInt64(bytes.count))
        guard offset >= UInt64(Format.segmentHeaderLength), offset + UInt64(headerLength) <= limit,
              fileEnd >= offset + UInt64(headerLength) else { return nil }
        let start = Int(offset)
        let headerBytes = UnsafeRawBufferPointer(rebasing: bytes[start..<start + headerLength])
        let header: PageHeader
        switch PageHeader.decode(headerBytes, expectedSalt: self.header.pageSalt,
                                 bytesAvailable: fileEnd - offset - UInt64(headerLength)) {
        case .success(let h): header = h
        case .failure(let why): throw LucidError.corruption("invalid page header: \(why)", file: path, offset: offset)
        }
        let payloadStart = start + headerLength
        guard UInt64(payloadStart) + UInt64(header.storedLength) <= limit else { return nil }
        let stored = UnsafeRawBufferPointer(rebasing: bytes[payloadStart..<payloadStart + Int(header.storedLength)])
        let checked = mapped.checkedPages.contains(pageAt: offset)
        let result = try decode(header, headerBytes, stored, checked)
        if !checked { mapped.checkedPages.insert(pageAt: offset) }
        return result
    }

    /// The bytes `range` of the raw payload of the page at `offset`, copied straight from the mapping, when this
    /// process has checked that page and found it stored without whole-page compression (``CheckedPages``); nil
    /// otherwise, for the caller to read the page as usual. Reads the page's header (checked with the page, and
    /// never changed since) and the value, nothing else, all below the readable end as every mapped read.
    /// O(range.count), no lock but the record cache's shard lock. A page of records compressed one by one (``RecordPageCodec``) is read by walking
    /// its entries' lengths to the one holding `range` and decoding that entry alone, up to where `range` ends:
    /// O(entries + range.upperBound - entry start); an entry that does not decode, or a range across entries, gives
    /// nil (the usual read then names the damage). With `records`, such a value is looked up there first (before
    /// anything of the page is read: only values decoded from a checked page are ever cached, under their exact
    /// page and range), and cached once decoded when the cache's admission rule says so.
    ///
    /// A page's bit covers 32 bytes, so an offset that is not the start of the page it falls on (a damaged
    /// location) finds the bit set too: the header it then reads must still have the page magic, this segment's
    /// salt, no whole-page compression, lengths within the format's bounds (equal raw and stored lengths without
    /// flag bit 3), or the read goes the usual way, whose checks name the damage.
    /// - Throws: ``LucidError/Code/corruption`` at the page when `range` lies outside its payload.
    @inline(__always)
    func checkedValue(pageAt offset: UInt64, range: Range<Int>, records: RecordCache?) throws -> [UInt8]? {
        try mapping.withCurrent { mapped -> [UInt8]? in
            guard let mapped, let (header, limit) = mappedHeader(at: offset, in: mapped) else { return nil }
            let headerLength = UInt64(Format.pageHeaderLength)
            // The key to cache the value under, when the record cache says to once it is decoded.
            var admitAs: RecordCache.Key?
            if let records {
                let key = RecordCache.Key(segment: UInt32(truncatingIfNeeded: id),
                                          pageOffset: UInt32(truncatingIfNeeded: offset),
                                          valueOffset: UInt32(truncatingIfNeeded: range.lowerBound),
                                          valueLength: UInt32(truncatingIfNeeded: range.count))
                switch records.lookup(key) {
                case .hit(let value): return value
                case .miss(let admit): if admit { admitAs = key }
                }
            }
            guard mapped.readsInPlace, mapped.checkedPages.contains(pageAt: offset) else { return nil }
            func u32(_ at: Int) -> UInt32 {
                UInt32(littleEndian: header.loadUnaligned(fromByteOffset: at, as: UInt32.self))
            }
            let flags = header.load(fromByteOffset: Format.pageHeaderFlagsOffset, as: UInt8.self)
            let storedLength = u32(Format.pageHeaderStoredLengthOffset)
            let rawLength = u32(Format.pageHeaderRawLengthOffset)
            guard u32(0) == Format.pageMagic, u32(Format.pageHeaderSaltOffset) == self.header.pageSalt,
                  flags & Format.pageFlagCompressed == 0, UInt64(storedLength) <= limit - offset - headerLength,
                  Int(rawLength) <= Format.maxRawPageLength
            else { return nil }
            guard range.lowerBound >= 0, range.upperBound <= Int(rawLength) else {
                throw LucidError.corruption("value range lies outside its page", file: path, offset: offset)
            }
            let stored = UnsafeRawBufferPointer(start: header + Int(headerLength), count: Int(storedLength))
            if flags & Format.pageFlagRecordsCompressed != 0 {
                // Checked with its page, so the dictionary was loaded then.
                guard let dictionary = dictionary.load(), range.count > 0 else { return range.isEmpty ? [] : nil }
                let recordCount = Int(UInt16(littleEndian: header.loadUnaligned(fromByteOffset: Format.pageHeaderRecordCountOffset,
                                                                                  as: UInt16.self)))
                // The header's bounds, checked with the page; a location inside a checked page's 32 bytes but not at
                // its start (a damaged one) reads other bytes as a header: those go the usual way.
                guard recordCount > 0,
                      Int(storedLength) <= Int(rawLength) + recordCount * Format.maxRecordEntryOverhead else { return nil }
                guard case .bytes(let value) = RecordPageCodec.entryBytes(
                    range, of: stored, recordCount: recordCount, rawLength: Int(rawLength), dictionary: dictionary)
                else { return nil }
                if let admitAs { records?.insert(value, for: admitAs) }
                return value
            }
            guard rawLength == storedLength else { return nil }
            return Array(UnsafeRawBufferPointer(rebasing: stored[range]))
        }
    }
}
