/// Every constant of the on-disk format, mirrored from `docs/FORMAT.md`. Nothing else defines one.
/// Changing any layout bumps ``formatVersion``.
enum Format {
    /// Version written into manifests, segment headers and checkpoints; a larger one on disk is refused on open.
    /// 2: manifest entries carry a segment kind and end LSN, and the manifest lists obsolete segments
    /// (compaction). 3: pages whose records are compressed one by one against their segment's dictionary
    /// (``pageFlagRecordsCompressed``, ``pageTypeDictionary``). Versions 1 and 2 are still read.
    static let formatVersion: UInt32 = 3

    // MARK: Files
    static let lockFileName = "LOCK"
    static let manifestSlotNames = ["MANIFEST-0", "MANIFEST-1"]
    static let segmentSuffix = ".seg"
    static let temporarySuffix = ".tmp"

    // MARK: Checkpoint
    static let checkpointFileName = "CHECKPOINT"
    static let checkpointMagic: [UInt8] = Array("LUCIDCKP".utf8)
    static let checkpointTrailerLength = 12
    /// Version of the checkpoint's layout, apart from ``formatVersion`` because a checkpoint is only an
    /// accelerator: open ignores one of any other version and reads the log instead. 5: each tree's entries in
    /// chunks of at most ``checkpointChunkEntries``, each coded on its own, listed by a directory at the end (so
    /// open decodes chunks on several threads); 4 wrote each tree as one run after its name. 4: a string's length, the
    /// segment and the term length only when they differ from the previous entry's (flags in the prefix-coding
    /// head, `PrefixEncoder`); 3 stored each of them for every entry; 3 and 4 prefix-code keys and index entries
    /// and keep the value length and terms flag in one varint (version-2 checkpoints, written with
    /// ``formatVersion`` 2, stored every key and entry in full).
    static let checkpointVersion: UInt32 = 5
    /// The most entries the engine writes in one checkpoint chunk (a reader accepts any chunking).
    static let checkpointChunkEntries = 1 << 16

    // MARK: Manifest
    static let manifestMagic: [UInt8] = Array("LUCIDMAN".utf8)
    static let manifestHeaderLength = 24
    static let manifestMaxBodyLength = 16 << 20
    static let manifestMaxSegments = 1_000_000
    static let manifestSegmentEntryLengthV1 = 25
    static let manifestSegmentEntryLength = 34
    static let manifestMaxObsolete = 1_000_000
    static let segmentStateSealed: UInt8 = 1
    static let segmentStateActive: UInt8 = 2
    static let manifestKindLog: UInt8 = 1
    static let manifestKindCompacted: UInt8 = 2

    // MARK: Segment header
    static let segmentMagic: [UInt8] = Array("LUCIDSEG".utf8)
    static let segmentHeaderLength = 64
    static let segmentHeaderCRCOffset = 60
    static let segmentKindLog: UInt32 = 1
    static let segmentKindCompacted: UInt32 = 2

    // MARK: Page header
    static let pageMagic: UInt32 = 0x4C50_4147
    static let pageHeaderLength = 48
    static let pageHeaderCRCOffset = 44
    /// Where a page header's fields lie (see docs/FORMAT.md, "Page"): flags (u8), record count (u16), the segment
    /// salt's low 32 bits, `rawLength` and `storedLength` (u32, little-endian).
    static let pageHeaderFlagsOffset = 5
    static let pageHeaderRecordCountOffset = 6
    static let pageHeaderSaltOffset = 8
    static let pageHeaderRawLengthOffset = 12
    static let pageHeaderStoredLengthOffset = 16
    static let pageTypeData: UInt8 = 1
    static let pageTypeSafeToIgnoreBit: UInt8 = 0x20
    static let pageFlagCompressed: UInt8 = 1 << 0
    static let pageFlagCommit: UInt8 = 1 << 1
    static let pageFlagGroupStart: UInt8 = 1 << 2
    /// The payload is a table of `recordCount` pairs `rawLength varint | storedLength varint`, then each record's
    /// stored bytes, LZ4-compressed alone against the segment's dictionary when `storedLength < rawLength` (format
    /// version 3; ``RecordPageCodec``).
    static let pageFlagRecordsCompressed: UInt8 = 1 << 3
    static let pageKnownFlags: UInt8 = pageFlagCompressed | pageFlagCommit | pageFlagGroupStart | pageFlagRecordsCompressed
    /// A segment's record dictionary: its payload is the dictionary's bytes. Safe to ignore (no records); written as
    /// a segment's first two pages (the second a copy), and only those are ever read as one (format version 3).
    static let pageTypeDictionary: UInt8 = pageTypeSafeToIgnoreBit | 1
    /// The longest dictionary (LZ4 matches reach back 64 KiB at most).
    static let maxDictionaryLength = 64 << 10
    /// The longest record-dictionary entry's two length varints.
    static let maxRecordEntryOverhead = 10
    static let maxRawPageLength = 8 << 20
    static let maxRecordsPerPage = Int(UInt16.max)

    // MARK: Records
    static let recordKindPut: UInt8 = 1
    static let recordKindDelete: UInt8 = 2
    static let maxKeyspaceNameLength = 255
    static let maxKeyLength = 1024
    static let maxValueLength = 4 << 20
    static let maxIndexTermsPerRecord = 4096
    static let maxIndexNameLength = 255
    static let maxIndexTermLength = 1024

    // MARK: Writer policy (not format, but documented with it)
    static let defaultPageSize = 4 << 10
    static let compressionMinimumSavingDivisor = 8   // keep LZ4 output only when it saves >= 1/8
    static let defaultSegmentSize: UInt64 = 64 << 20
    static let maxSegmentSize: UInt64 = 1 << 30      // locations store page offsets as UInt32
    /// A batch's records may not exceed this; with maxSegmentSize it keeps every page offset below 4 GiB.
    static let maxBatchBytes = 512 << 20
    static let groupCommitExtraBytes = 1 << 20
    /// Filler written ahead of the active segment's end (docs/FORMAT.md, "Filler"): never the first byte of a
    /// page magic, so filler never reads as a page, and not zero, so that it is never mistaken for the zeros a
    /// crash can leave where data was lost.
    static let fillerByte: UInt8 = 0xFF
    static let defaultLogPreallocationBytes = 256 << 10
    static let maxLogPreallocationBytes = 64 << 20

    /// The name of segment `id`: 16 hex digits + ".seg".
    static func segmentFileName(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex + segmentSuffix
    }

    /// The id of a segment file name, or nil when the name is not one.
    static func segmentId(fromFileName name: String) -> UInt64? {
        guard name.hasSuffix(segmentSuffix), name.utf8.count == 16 + segmentSuffix.utf8.count else { return nil }
        return UInt64(name.dropLast(segmentSuffix.count), radix: 16)
    }
}
