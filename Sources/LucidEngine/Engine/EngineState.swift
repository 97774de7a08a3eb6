/// Where a record's value lives: segment, page, and the value's range inside the page's raw payload.
/// 24 bytes, stored inline in B-tree leaves.
struct RecordLocation: Sendable, Hashable {
    var segment: UInt32
    var pageOffset: UInt32
    var valueOffset: UInt32
    var valueLength: UInt32
    var sequence: UInt64
}

/// The state readers see: every keyspace's primary tree, the open segments and how far the log is visible.
/// Guarded by the engine's read-write lock; copied (O(1), copy-on-write) for snapshots.
struct EngineState: Sendable {
    var keyspaces: [String: BTree<RecordLocation>] = [:]
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

/// Applies decoded pages to a set of keyspace trees, in log order. Shared by recovery, verify and the writer's
/// view of replay, so that all three build the index the same way.
struct Replayer {
    var keyspaces: [String: BTree<RecordLocation>] = [:]
    var lastSequence: UInt64 = 0
    var records = 0
    private var lastKeyspaceBytes: [UInt8] = []
    private var lastKeyspaceName = ""

    init(keyspaces: [String: BTree<RecordLocation>] = [:]) {
        self.keyspaces = keyspaces
    }

    private mutating func keyspaceName(_ bytes: UnsafeRawBufferPointer) -> String {
        if !bytes.elementsEqual(lastKeyspaceBytes) {
            lastKeyspaceBytes = Array(bytes)
            lastKeyspaceName = String(decoding: bytes, as: UTF8.self)
        }
        return lastKeyspaceName
    }

    /// Applies every record of a verified data page located at `pageOffset` of `segment`.
    mutating func apply(page raw: PageBuffer, header: PageHeader, segment: UInt64, pageOffset: UInt64) {
        guard header.type == Format.pageTypeData else { return }
        raw.bytes.withUnsafeBytes { payload in
            _ = RecordCodec.decodeAll(payload, expectedCount: Int(header.recordCount),
                                      baseSequence: header.baseSequence) { record in
                let name = keyspaceName(record.keyspace)
                lastSequence = max(lastSequence, record.sequence)
                records += 1
                switch record.kind {
                case .put:
                    let location = RecordLocation(
                        segment: UInt32(truncatingIfNeeded: segment), pageOffset: UInt32(truncatingIfNeeded: pageOffset),
                        valueOffset: UInt32(record.valueOffset), valueLength: UInt32(record.valueLength),
                        sequence: record.sequence)
                    keyspaces[name, default: BTree()].updateValue(location, forKey: Array(record.key))
                case .delete:
                    keyspaces[name]?.removeValue(forKey: Array(record.key))
                }
            }
        }
    }
}
