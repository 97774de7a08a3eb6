/// Where a record's value lives: segment, page, and the value's range inside the page's raw payload, plus
/// whether index terms follow the value. 24 bytes, stored inline in B-tree leaves.
struct RecordLocation: Sendable, Hashable {
    var segment: UInt32
    var pageOffset: UInt32
    var valueOffset: UInt32
    /// Value length (values are at most 4 MiB) with bit 31 set when the record carries index terms.
    private var packedLength: UInt32
    var sequence: UInt64

    init(segment: UInt32, pageOffset: UInt32, valueOffset: UInt32, valueLength: UInt32, hasTerms: Bool,
         sequence: UInt64) {
        self.segment = segment
        self.pageOffset = pageOffset
        self.valueOffset = valueOffset
        self.packedLength = valueLength | (hasTerms ? 1 << 31 : 0)
        self.sequence = sequence
    }

    var valueLength: UInt32 { packedLength & ~(1 << 31) }
    var hasTerms: Bool { packedLength & (1 << 31) != 0 }
}

/// The state readers see: every keyspace's primary tree, the open segments and how far the log is visible.
/// Guarded by the engine's read-write lock; copied (O(1), copy-on-write) for snapshots.
struct EngineState: Sendable {
    var keyspaces: [String: KeyspaceState] = [:]
    /// The manifest in force: the segments in log order (published with every change of the segment set).
    var manifest = Manifest(version: 0, nextSegmentId: 0, segments: [])
    var segments: [UInt64: SegmentFile] = [:]
    var activeSegment: UInt64 = 0
    /// Bytes of the active segment holding published commit groups.
    var activeEnd: UInt64 = 0
    /// Exact lengths of sealed segments.
    var sealedLengths: [UInt64: UInt64] = [:]
    var lastSequence: UInt64 = 0

    /// The readable length of a segment in this state.
    func visibleLength(of segment: UInt64) -> UInt64 {
        segment == activeSegment ? activeEnd : (sealedLengths[segment] ?? 0)
    }

    var liveKeys: Int { keyspaces.values.reduce(0) { $0 + $1.count } }
}

/// Applies decoded pages to a set of keyspaces, in log order, maintaining secondary indexes. Shared by
/// recovery and verify, so that both build the index the same way the writer does.
struct Replayer {
    var keyspaces: [String: KeyspaceState] = [:]
    var lastSequence: UInt64 = 0
    var records = 0
    /// Reads the index terms of an earlier record (whose page may be anywhere in the log).
    let termReader: (RecordLocation) throws -> [IndexTerm]
    private var lastKeyspaceBytes: [UInt8] = []
    private var lastKeyspaceName = ""

    init(termReader: @escaping (RecordLocation) throws -> [IndexTerm]) {
        self.termReader = termReader
    }

    private mutating func keyspaceName(_ bytes: UnsafeRawBufferPointer) -> String {
        if !bytes.elementsEqual(lastKeyspaceBytes) {
            lastKeyspaceBytes = Array(bytes)
            lastKeyspaceName = String(decoding: bytes, as: UTF8.self)
        }
        return lastKeyspaceName
    }

    /// Applies every record of a verified data page located at `pageOffset` of `segment`.
    /// - Throws: when the terms of a replaced record cannot be read.
    mutating func apply(page raw: PageBuffer, header: PageHeader, segment: UInt64, pageOffset: UInt64) throws {
        guard header.type == Format.pageTypeData else { return }
        try raw.bytes.withUnsafeBytes { payload in
            _ = try RecordCodec.decodeAll(payload, expectedCount: Int(header.recordCount),
                                          baseSequence: header.baseSequence) { record in
                let name = keyspaceName(record.keyspace)
                lastSequence = max(lastSequence, record.sequence)
                records += 1
                let old: RecordLocation?
                switch record.kind {
                case .put:
                    let location = RecordLocation(
                        segment: UInt32(truncatingIfNeeded: segment), pageOffset: UInt32(truncatingIfNeeded: pageOffset),
                        valueOffset: UInt32(record.valueOffset), valueLength: UInt32(record.valueLength),
                        hasTerms: record.termCount > 0, sequence: record.sequence)
                    old = keyspaces[name, default: KeyspaceState()].primary.updateValue(location, forKey: record.key)
                case .delete:
                    old = keyspaces[name]?.primary.removeValue(forKey: record.key)
                }
                if let old, old.hasTerms {
                    keyspaces[name]?.removeTerms(try termReader(old), forKey: record.key)
                }
                if record.termCount > 0 {
                    keyspaces[name]?.insertTerms(RecordCodec.terms(of: record, in: payload), forKey: record.key)
                }
            }
        }
    }
}
