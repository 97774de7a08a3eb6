import Logging

/// How an ``Engine`` is opened and how it trades durability for speed.
public struct EngineOptions: Sendable {
    /// When a commit is made durable.
    public enum SyncMode: Sendable, Hashable {
        /// Every commit group is `fdatasync`'d before any of its batches is acknowledged (the default).
        /// An acknowledged commit survives a crash or power loss.
        case always
        /// Commits are acknowledged once written; the writer `fdatasync`s when the last sync is older than the
        /// interval (checked at each commit), on ``Engine/sync()`` and on close. A crash may lose the most recent
        /// commits, always as a suffix: the recovered state is the state after some commit.
        case grouped(milliseconds: Int)
        /// Never `fdatasync` except on ``Engine/sync()``, roll and close. Same suffix-only loss rule.
        case none
    }

    /// How pages are stored: the trade between a store's size and the cost of a read.
    public enum PageCompression: Sendable, Hashable {
        /// LZ4 block compression of whole pages, kept for a page when it saves at least 1/8 (the default). Commits
        /// use LZ4's fast compressor, compaction
        /// ``EngineOptions/compactionCompressionLevel``. A read that misses the page cache checks the whole stored
        /// page (with ``EngineOptions/memoryMappedReads``, the first time the process reads it: see ``none``) and
        /// decompresses it up to the value it wants.
        case lz4
        /// Each record LZ4-compressed alone, against a dictionary of records written lately that the segment
        /// holds as its first two pages (format version 3). A read decodes only the record it wants, so point reads
        /// of data larger than the cache cost little more than with ``none``, and the store is smaller than with
        /// ``lz4``. With ``EngineOptions/memoryMappedReads``, a record read again and again is kept decoded in a
        /// cache of single records (a quarter of ``EngineOptions/pageCacheBytes``, admitted on a record's second
        /// miss), so index queries over hot records do not decode them each time. Measured at 1M records of ~216
        /// bytes with mapped reads (README, "Benchmarks"; alternated runs of `lucid-compare --child`): random gets
        /// 1.25-1.6× those with ``lz4``, index queries about the same or faster, the store 0.84× after load and 0.89×
        /// after compaction, a full scan about 0.9×. Not the default: loads cost more (0.85× the uncompressed
        /// engine's sequential load in one run, against 1.16× with ``lz4``), as writing compresses each record
        /// against a copy of a 16 KiB prepared state, and without mapped reads (off by default) its reads gain
        /// nothing over ``lz4``. Compaction uses LZ4's fast compressor, not LZ4HC. Records that are short and
        /// very repetitive (a few words from a small vocabulary) compress better as whole pages: up to 3× smaller in
        /// one of the engine's tests; each segment also holds its dictionary, twice (up to 2 × 64 KiB). With
        /// ``EngineOptions/memoryMappedReads`` checked pages are read in place, as with ``none``. A segment's
        /// dictionary is built from the records the writer wrote last (from the first group's own records in a new
        /// store); compaction compresses its output against the newest dictionary the store holds.
        case lz4Records
        /// Pages are stored as they are. The store is larger (1.8× at 1M records of ~216 bytes of JSON-like
        /// text; README, "Benchmarks"), and with ``EngineOptions/memoryMappedReads`` reads get cheaper: the first
        /// read of a page in a process checks its checksum, and later reads of that page copy values straight
        /// from the mapping, touching the page's header and the value only (a bit per 32 bytes of mapped
        /// segment records which pages were checked: 1/256 of the segments' size in memory, touched as pages
        /// are read). A checked page is not checked again while its mapping lives (the engine never changes a byte
        /// below a segment's published end). What that gives up: unlike the engine's page cache, the mapping reads
        /// the kernel's page cache, which may drop a page and read it from the disk again, so damage the disk (or
        /// another process) brings to a page after its first check is returned by reads instead of reported;
        /// ``Engine/verify()`` checks every page and reports it. A mapped ``lz4`` page is checked once per mapping
        /// in the same way (and decoded from the mapping on each read that misses the page cache); without mapped
        /// reads, every read from the file checks its page. Every mapped store pays the checked-page bits.
        /// Files written either way are read by every engine of this format version; the option may change
        /// between opens and affects only pages written from then on (compaction rewrites the pages it moves).
        case none
    }

    /// What open does with damage it finds.
    public enum RecoveryMode: Sendable, Hashable {
        /// Cut a torn or never-synced tail back to the last complete commit group (and report what was
        /// dropped); fail with ``LucidError/Code/corruption`` when data that was acknowledged durable is damaged.
        case pointInTime
        /// Fail on any damage, including a torn tail. The store is never modified by recovery.
        case strict
        /// Copy every verifiable commit group of the (damaged) store into a new store at `destination` and open
        /// that one. The source is never modified. See ``Engine/salvage(from:to:options:)``.
        case salvage(destination: String)
    }

    /// Durability of commits. Default ``SyncMode/always``.
    public var syncMode: SyncMode = .always
    /// Target size of a raw (uncompressed) page, 4 KiB ... 1 MiB. Default 4 KiB.
    ///
    /// A read that misses the page cache reads, checks and decompresses a whole page, so smaller pages make
    /// reads of data larger than the cache cheaper, and LZ4 compresses them less well. Measured at 1M records of
    /// ~216 bytes with a 64 MiB cache (README, "Benchmarks"): 4 KiB pages gave 1.7× the random gets, 2× the
    /// ordered scan and 2–3.5× the index queries of 16 KiB pages, and a store 15–20% larger (after load and
    /// after compaction). When the data fits the cache, the page size barely matters. A store that is mostly
    /// written and seldom read (a log, an archive) is smaller with 16 KiB pages. Changing it between opens is
    /// allowed: it only affects pages written from then on.
    public var pageSize: Int = Format.defaultPageSize
    /// Bytes of decompressed pages kept in memory for reads. Default 64 MiB; 0 disables the cache. Pages read once
    /// (scans, uniformly random gets) do not displace pages read again (CLOCK with 2Q's admission rule); plan it
    /// for the pages your reads come back to. With ``PageCompression/lz4Records`` and ``memoryMappedReads`` a
    /// quarter of it keeps single decoded records instead (see there).
    public var pageCacheBytes: Int = 64 << 20
    /// Read segments through a read-only memory mapping instead of `pread`. Default false.
    ///
    /// A read that misses the page cache then checks and decompresses the page straight from the operating
    /// system's page cache, without a system call and a copy: measured at 1M records with a 64 MiB cache (README,
    /// "Benchmarks"), random gets of data larger than the cache ran 1.4× and an ordered scan 1.6–1.9× as fast.
    /// Only bytes below a segment's published end are read through the mapping. The cost is the mapping's usual
    /// one: if the disk fails to deliver a mapped page (an I/O error), or another process ignores the store's lock
    /// and cuts a segment, the process gets SIGBUS instead of an ``LucidError/Code/io`` error. Checksums are
    /// checked either way (with mapped reads, the first time the process reads each page: see ``PageCompression/none``),
    /// and mapped pages count in the process's resident memory while the kernel keeps them.
    public var memoryMappedReads: Bool = false
    /// How the pages a store writes from now on are stored. Default ``PageCompression/lz4``.
    public var pageCompression: PageCompression = .lz4
    /// The part of ``pageCacheBytes`` given to single decoded records (``RecordCache``): a quarter when pages of
    /// records compressed one by one are read in place (``PageCompression/lz4Records`` with
    /// ``memoryMappedReads``), else none.
    var recordCacheBytes: Int {
        memoryMappedReads && pageCompression == .lz4Records ? max(0, pageCacheBytes) / 4 : 0
    }
    /// Whether reads copy values of checked pages in place: mapped segments (``memoryMappedReads``) that track the
    /// pages reads have checked (``PageCompression/none``, ``PageCompression/lz4Records``).
    var readsPagesInPlace: Bool { memoryMappedReads && (pageCompression == .none || pageCompression == .lz4Records) }
    /// Keep a hash table of each keyspace's keys of at most 16 bytes, for point reads of the current state
    /// (``Engine/get(_:in:)``, ``Engine/lookUp(_:in:)``). Default true.
    ///
    /// A point read then finds its key with one probe of memory instead of a descent through the keyspace's
    /// B-tree, whose nodes, past a few hundred thousand keys, no longer fit the processor's caches: measured at 1M
    /// records (README, "Point reads"), random gets ran 1.3-1.4× as fast with LZ4 pages. The cost: about 60 bytes
    /// of memory per such key (the table holds the key and its record's location), one hashed update per written
    /// or deleted key, and a build after open, O(keys), on a thread of its own (reads use the trees until it is
    /// done; the first commit, a compaction's swap and close wait for it). A snapshot's point reads (and so the
    /// records of an index query) use the table while it is unchanged since the snapshot was taken, the
    /// snapshot's trees after that; scans and longer keys use the trees either way.
    public var pointIndex: Bool = true
    /// Size after which the active segment is sealed and a new one started. Default 64 MiB (1 MiB ... 1 GiB).
    public var segmentSize: UInt64 = Format.defaultSegmentSize
    /// Bytes of filler the writer lays down ahead of the log's end before a small durable commit, so that the
    /// next commits overwrite space the file already has. Default 256 KiB; 0 turns it off (0 or 4 KiB ... 64 MiB).
    ///
    /// An append that grows the file makes `fdatasync` commit the file system's journal as well as the data; an
    /// overwrite inside the file does not. Measured on ext4 (virtio disk), one commit of a small record per
    /// `fdatasync`: 7.5k/s appending, 11.5k/s overwriting filler. It costs one extra write of this many bytes
    /// per this many bytes of small durable commits (large or unsynced groups append as before), and the filler
    /// is cut off on close and roll. Recovery treats a tail of filler as the clean end of the log (FORMAT.md).
    /// Turn it off on copy-on-write file systems (btrfs, ZFS), where an overwrite allocates anyway.
    public var logPreallocationBytes: Int = Format.defaultLogPreallocationBytes
    /// Bytes of batches (``WriteBatch``'s approximate encoded size) that ``Engine/submit(_:)`` lets wait for
    /// the writer before it blocks its caller. Default 4 MiB: enough for the writer to take several batches of a
    /// bulk load as one group while the next is built, and a bound on the memory a fast producer can fill. Outside
    /// the bound: the group being written, a single batch larger than the limit (always admitted into an empty
    /// queue), and up to two written groups waiting to be freed on another thread. Other commits are bounded by
    /// their committers, each waiting for its own.
    ///
    /// Measured on a 1M-record random-key load in batches of 1,000 (`lucid-compare`): 0 (one batch queued at a
    /// time) loaded slowest, 4 and 8 MiB alike, 32 MiB no faster; the memory still held after the load grew with
    /// the limit (per record: 250 B at 0, 264 B at 4 MiB, 270 B at 8 MiB, 326 B at 32 MiB).
    public var maxQueuedCommitBytes: Int = 4 << 20
    /// What open does with damage. Default ``RecoveryMode/pointInTime``.
    public var recoveryMode: RecoveryMode = .pointInTime
    /// Create the store when the directory holds none. Default true.
    public var createIfMissing: Bool = true
    /// The file layer. Default ``PosixFileSystem``; tests pass a fault-injecting one.
    public var fileSystem: any FileSystem = PosixFileSystem()
    /// When the engine compacts sealed segments by itself, on a background thread after a segment roll.
    /// Default ``AutoCompactionPolicy/init(deadRatio:minimumSealedBytes:)`` (half dead, 64 MiB sealed); nil
    /// turns automatic compaction off (``Engine/compact(_:)`` still works).
    public var autoCompaction: AutoCompactionPolicy? = AutoCompactionPolicy()
    /// How hard compaction compresses the pages it writes: 0 uses LZ4's fast compressor (as commits do), 1...12
    /// LZ4HC at that level. Default 9 (LZ4HC's default): compacted data is written once and read many times, so
    /// compaction spends CPU for smaller files. Reads cost the same either way (one block format, decompressed
    /// by the same routine); the level is not recorded on disk and may change between opens.
    public var compactionCompressionLevel: Int = 9
    /// Whether ``Engine/close()`` writes a `CHECKPOINT` when the log has grown past the last one. Default true
    /// (fast reopen). Read-only tools set it to false, together with ``RecoveryMode/strict``, so that opening and
    /// closing a store never changes its files (the `LOCK` file aside).
    public var checkpointOnClose: Bool = true
    /// How long a segment that compaction removed may stay held by snapshots before the engine logs a warning
    /// (once per segment, at the next commit group or ``Engine/statistics`` read after that age). Default 60 s;
    /// must be positive. A snapshot holds every segment it can read: its files stay open, and their disk space
    /// taken, until it is released (``EngineStatistics/pinnedSegments``).
    public var pinnedSegmentWarningAge: Duration = .seconds(60)
    /// Where recovery and failure messages go.
    public var logger: Logger = Logger(label: "lucid.engine")

    /// The defaults: durable commits, 4 KiB pages, 64 MiB cache and segments, point-in-time recovery.
    public init() {}

    func validate() throws {
        guard (4 << 10)...(1 << 20) ~= pageSize else {
            throw LucidError.invalidArgument("pageSize must be between 4 KiB and 1 MiB, not \(pageSize)")
        }
        guard maxQueuedCommitBytes >= 0 else { throw LucidError.invalidArgument("maxQueuedCommitBytes must not be negative") }
        guard pageCacheBytes >= 0 else { throw LucidError.invalidArgument("pageCacheBytes must not be negative") }
        guard (1 << 20)...Format.maxSegmentSize ~= segmentSize else {
            throw LucidError.invalidArgument("segmentSize must be between 1 MiB and 1 GiB, not \(segmentSize)")
        }
        guard logPreallocationBytes == 0 || (4 << 10)...Format.maxLogPreallocationBytes ~= logPreallocationBytes else {
            throw LucidError.invalidArgument("logPreallocationBytes must be 0 or between 4 KiB and 64 MiB, not \(logPreallocationBytes)")
        }
        if let policy = autoCompaction, !(policy.deadRatio > 0 && policy.deadRatio < 1) {
            throw LucidError.invalidArgument("autoCompaction.deadRatio must lie between 0 and 1, not \(policy.deadRatio)")
        }
        guard 0...12 ~= compactionCompressionLevel else {
            throw LucidError.invalidArgument("compactionCompressionLevel must be between 0 and 12, not \(compactionCompressionLevel)")
        }
        guard pinnedSegmentWarningAge > .zero else {
            throw LucidError.invalidArgument("pinnedSegmentWarningAge must be positive, not \(pinnedSegmentWarningAge)")
        }
        if case .grouped(let ms) = syncMode, ms < 0 {
            throw LucidError.invalidArgument("grouped sync interval must not be negative")
        }
    }
}
