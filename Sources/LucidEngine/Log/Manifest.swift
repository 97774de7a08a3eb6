/// The list of live segments, in log order: the store's single source of truth (docs/FORMAT.md, "Manifest slot").
/// Recovery replays the segments in exactly this order; a compaction's outputs take the place of its inputs.
struct Manifest: Sendable, Hashable {
    struct Segment: Sendable, Hashable {
        enum Kind: UInt8, Sendable, Hashable {
            /// Commit groups as the writer wrote them; page LSNs continue from segment to segment.
            case log = 1
            /// The output of a compaction: every page is its own group, page LSNs count from 1 in each file.
            case compacted = 2
        }

        var id: UInt64
        var sealed: Bool
        var sealedLength: UInt64
        /// The first LSN of the log this segment holds (for a compacted segment: of the log it replaced).
        var firstLSN: UInt64
        var kind: Kind = .log
        /// For a sealed segment, the LSN the next log segment starts at (0: unknown, a version 1 manifest).
        var endLSN: UInt64 = 0

        /// True when compacted segment `next` picks up the stretch of log this compacted segment replaced, without
        /// a gap: it starts at or before this one's end and reaches at least as far. Every output of one compaction
        /// replaces the same stretch (same `firstLSN` and `endLSN`), and a later compaction of the last of them
        /// with the log after it starts inside that stretch (its `firstLSN` is the output's) and ends further on.
        func continuedBy(_ next: Segment) -> Bool {
            kind == .compacted && next.kind == .compacted && sealed && next.sealed && endLSN != 0
                && next.firstLSN <= endLSN && next.endLSN >= endLSN
        }
    }

    var version: UInt64
    var nextSegmentId: UInt64
    var segments: [Segment]
    /// Segments replaced by a committed compaction whose files may still exist: removed on open.
    var obsolete: [UInt64] = []

    var active: Segment? { segments.first { !$0.sealed } }

    /// The position of segment `id` in the log order.
    func position(of id: UInt64) -> Int? { segments.firstIndex { $0.id == id } }

    func encode() -> [UInt8] {
        var body = ByteWriter()
        body.u64(nextSegmentId)
        body.u32(UInt32(segments.count))
        for s in segments {
            body.u64(s.id)
            body.u8(s.sealed ? Format.segmentStateSealed : Format.segmentStateActive)
            body.u8(s.kind.rawValue)
            body.u64(s.sealedLength)
            body.u64(s.firstLSN)
            body.u64(s.endLSN)
        }
        body.u32(UInt32(obsolete.count))
        for id in obsolete { body.u64(id) }
        var w = ByteWriter(capacity: Format.manifestHeaderLength + body.count + 4)
        w.raw(Format.manifestMagic)
        w.u32(Format.formatVersion)
        w.u32(UInt32(body.count))
        w.u64(version)
        w.raw(body.bytes)
        w.u32(CRC32C.mask(CRC32C.checksum(w.bytes)))
        return w.bytes
    }

    /// Outcome of reading one slot.
    enum SlotState: Equatable {
        case missing
        case invalid(String)
        case valid(Manifest)
    }

    /// Decodes a slot's bytes. Throws only for a newer format version in a slot whose checksum holds (every
    /// version keeps the slot's framing: docs/FORMAT.md); any other damage, a damaged version field included, is
    /// `.invalid`.
    static func decode(_ bytes: [UInt8], file: String) throws -> SlotState {
        if bytes.isEmpty { return .invalid("empty") }
        return try bytes.withUnsafeBytes { raw -> SlotState in
            var r = ByteReader(raw)
            guard raw.count >= Format.manifestHeaderLength + 4 else { return .invalid("truncated") }
            guard r.bytes(8) == Format.manifestMagic else { return .invalid("bad magic") }
            let version = r.u32()!
            let bodyLength = Int(r.u32()!)
            guard bodyLength <= Format.manifestMaxBodyLength,
                  raw.count >= Format.manifestHeaderLength + bodyLength + 4 else { return .invalid("truncated body") }
            let manifestVersion = r.u64()!
            let end = Format.manifestHeaderLength + bodyLength
            let stored = raw.loadUnaligned(fromByteOffset: end, as: UInt32.self).littleEndian
            guard CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<end]))) == stored else {
                return .invalid("checksum mismatch")
            }
            // Checked after the checksum: a damaged stale slot whose version bytes read as a newer version must not
            // make a store with a valid newest slot unopenable.
            if version > Format.formatVersion {
                throw LucidError(code: .unsupportedFormatVersion,
                                 message: "manifest format version \(version) is newer than \(Format.formatVersion)",
                                 file: file, offset: 8)
            }
            guard version >= 1 else { return .invalid("format version 0") }
            var body = ByteReader(UnsafeRawBufferPointer(rebasing: raw[Format.manifestHeaderLength..<end]))
            guard let next = body.u64(), let count = body.u32(), Int(count) <= Format.manifestMaxSegments else {
                return .invalid("malformed body")
            }
            let entryLength = version == 1 ? Format.manifestSegmentEntryLengthV1 : Format.manifestSegmentEntryLength
            guard Int(count) * entryLength <= body.remaining else { return .invalid("malformed body") }
            var segments: [Segment] = []
            segments.reserveCapacity(Int(count))
            for _ in 0..<count {
                let id = body.u64()!, state = body.u8()!
                let kindByte = version == 1 ? Format.manifestKindLog : body.u8()!
                let length = body.u64()!, first = body.u64()!
                let end = version == 1 ? 0 : body.u64()!
                guard state == Format.segmentStateSealed || state == Format.segmentStateActive,
                      let kind = Segment.Kind(rawValue: kindByte), kind == .log || state == Format.segmentStateSealed,
                      id < next else { return .invalid("malformed segment entry") }
                segments.append(Segment(id: id, sealed: state == Format.segmentStateSealed,
                                        sealedLength: length, firstLSN: first, kind: kind, endLSN: end))
            }
            var obsolete: [UInt64] = []
            if version >= 2 {
                guard let n = body.u32(), Int(n) <= Format.manifestMaxObsolete, Int(n) * 8 == body.remaining else {
                    return .invalid("malformed obsolete list")
                }
                for _ in 0..<n { obsolete.append(body.u64()!) }
            } else if body.remaining != 0 {
                return .invalid("malformed body")
            }
            if version == 1 {
                // Version 1 logs are ordered by first LSN; each sealed segment ends where the next one starts.
                segments.sort { $0.firstLSN < $1.firstLSN }
                for i in segments.indices.dropLast() where segments[i].sealed {
                    segments[i].endLSN = segments[i + 1].firstLSN
                }
            }
            guard segments.last.map({ !$0.sealed }) == true, segments.filter({ !$0.sealed }).count == 1,
                  Set(segments.map(\.id)).count == segments.count,
                  Set(obsolete).isDisjoint(with: segments.map(\.id)), obsolete.allSatisfy({ $0 < next }) else {
                return .invalid("must name exactly one active segment, last, no segment twice, none also obsolete")
            }
            return .valid(Manifest(version: manifestVersion, nextSegmentId: next, segments: segments,
                                   obsolete: obsolete))
        }
    }
}

/// Reads and writes the two manifest slots of a store directory.
struct ManifestStore: Sendable {
    let directory: String
    let fileSystem: any FileSystem

    func slotPath(_ index: Int) -> String { directory + "/" + Format.manifestSlotNames[index] }

    /// The state of both slots.
    func readSlots() throws -> [Manifest.SlotState] {
        try (0..<2).map { i in
            let path = slotPath(i)
            guard fileSystem.fileExists(at: path) else { return .missing }
            let handle = try fileSystem.openFile(at: path, mode: .readOnly)
            defer { try? handle.close() }
            let size = try handle.size()
            // A slot is small; refuse absurd sizes before allocating.
            guard size <= UInt64(Format.manifestMaxBodyLength + Format.manifestHeaderLength + 4) else {
                return .invalid("slot file too large (\(size) bytes)")
            }
            return try Manifest.decode(try handle.read(at: 0, count: Int(size)), file: path)
        }
    }

    /// Writes `manifest` into slot `version % 2` and makes it durable. The other slot keeps the previous version,
    /// so a crash during this write leaves the previous manifest in force.
    func write(_ manifest: Manifest) throws {
        let path = slotPath(Int(manifest.version % 2))
        let existed = fileSystem.fileExists(at: path)
        let handle = try fileSystem.openFile(at: path, mode: .readWrite(create: true))
        defer { try? handle.close() }
        try handle.truncate(to: 0)
        try handle.write(manifest.encode(), at: 0)
        try handle.sync()
        if !existed { try fileSystem.syncDirectory(at: directory) }
    }
}
