// FuzzCheckpoint's check: checkpoint files, as bytes and as programs (shared
// with the Fuzz package: see FuzzInput.swift).

import LucidEngine
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Input: a mode byte, then either (bit 1 clear) bytes taken as a `CHECKPOINT` file, with bit 0 recomputing its
/// trailer (length and CRC) so mutations reach the decoder, or (bit 1 set) a program describing a checkpoint
/// (header, segments, keyspaces with primary entries, bulk key runs of at most 800 entries in all and index
/// entries, some fields possibly just
/// past a format cap), optionally followed by a byte flip applied to its encoding.
///
/// Checks: decoding never traps and allocates within `-malloc_limit_mb` whatever the bytes claim; a decoded
/// checkpoint's primary keys are strictly increasing per keyspace and so are each index's entries, the trees'
/// counts equal what they iterate, and every field is within the caps the loader enforces; a decoded checkpoint
/// re-encoded with `CheckpointWriter` decodes to the same entries (empty index trees are not written), and
/// re-encoding that is a fixpoint. A program's checkpoint encodes and decodes to exactly its entries (sorted, a
/// repeated key keeping its last location) when every field is within the caps, and is rejected otherwise.
enum CheckpointChecks {
    typealias CP = FuzzingSupport.Checkpoint
    typealias KS = FuzzingSupport.CheckpointKeyspace

    static func check(_ bytes: [UInt8]) throws {
        guard let mode = bytes.first else { return }
        if mode & 2 != 0 {
            try checkProgram(Array(bytes.dropFirst()))
        } else {
            var file = Array(bytes.dropFirst())
            if mode & 1 != 0 { file = FuzzingSupport.withValidCheckpointChecksum(file) }
            try checkBytes(file)
        }
    }

    /// Decodes arbitrary bytes; a valid checkpoint must be well formed and survive a re-encode.
    static func checkBytes(_ file: [UInt8]) throws {
        guard case .valid(let cp) = FuzzingSupport.decodeCheckpoint(file) else { return }
        try checkWellFormed(cp)
        try fuzzRequire(cp.entryCount + cp.indexEntryCount <= file.count,
                        "decoded \(cp.entryCount) + \(cp.indexEntryCount) entries from \(file.count) bytes")
        let fs = MemoryFileSystem()
        let again = try FuzzingSupport.encodeCheckpoint(cp, directory: "/ckp", fileSystem: fs)
        guard case .valid(let back) = FuzzingSupport.decodeCheckpoint(again) else {
            throw FuzzCheckFailure("a decoded checkpoint, re-encoded, is rejected: \(FuzzingSupport.decodeCheckpoint(again))")
        }
        try fuzzRequire(back == canonical(cp), "a decoded checkpoint, re-encoded, decodes differently \(diff(canonical(cp), back))")
        let third = try FuzzingSupport.encodeCheckpoint(back, directory: "/ckp", fileSystem: fs)
        try fuzzRequire(FuzzHelpers.same(third, again), "re-encoding a checkpoint is not a fixpoint")
    }

    /// The invariants every loaded checkpoint must satisfy.
    static func checkWellFormed(_ cp: CP) throws {
        let ids = Set(cp.segments.map { UInt32(truncatingIfNeeded: $0.id) })
        for (name, ks) in cp.keyspaces {
            // The loader checks a name's stored length, then repairs it with String(decoding:as:), so stored bytes
            // that are not UTF-8 grow (each bad byte becomes U+FFFD, 3 bytes) past the cap, and the engine's own
            // next checkpoint of that state is rejected.
            try fuzzRequire(!name.isEmpty && name.utf8.count <= FuzzingSupport.maxNameLength,
                            "loaded keyspace name is \(name.utf8.count) UTF-8 bytes, over the cap: stored name not UTF-8")
            try fuzzRequire(ks.primaryCount == ks.primary.count,
                            "keyspace \(name): tree count \(ks.primaryCount), iterated \(ks.primary.count)")
            for (i, e) in ks.primary.enumerated() {
                if i > 0 {
                    try fuzzRequire(ks.primary[i - 1].key.lexicographicallyPrecedes(e.key),
                                    "keyspace \(name): primary keys not strictly increasing at \(i)")
                }
                try fuzzRequire(e.key.count <= FuzzingSupport.maxKeyLength, "key of \(e.key.count) bytes")
                try fuzzRequire(ids.contains(e.segment), "entry in segment \(e.segment), not listed")
                try fuzzRequire(Int(e.valueOffset) <= FuzzingSupport.maxRawPageLength, "valueOffset \(e.valueOffset)")
                try fuzzRequire(Int(e.valueLength) <= FuzzingSupport.maxValueLength, "valueLength \(e.valueLength)")
                try fuzzRequire(e.sequence <= cp.lastSequence, "sequence \(e.sequence) after lastSequence \(cp.lastSequence)")
            }
            for (index, entries) in ks.indexes {
                try fuzzRequire(!index.isEmpty && index.utf8.count <= FuzzingSupport.maxNameLength,
                                "loaded index name is \(index.utf8.count) UTF-8 bytes, over the cap: stored name not UTF-8")
                try fuzzRequire(ks.indexCounts[index] == entries.count,
                                "index \(name)/\(index): tree count \(ks.indexCounts[index] ?? -1), iterated \(entries.count)")
                for (i, e) in entries.enumerated() {
                    if i > 0 {
                        try fuzzRequire(entries[i - 1].entry.lexicographicallyPrecedes(e.entry),
                                        "index \(name)/\(index): entries not strictly increasing at \(i)")
                    }
                    try fuzzRequire(e.termLength <= e.entry.count && e.termLength <= FuzzingSupport.maxIndexTermLength
                                        && e.entry.count <= FuzzingSupport.maxIndexTermLength + FuzzingSupport.maxKeyLength,
                                    "index entry of \(e.entry.count) bytes with a term of \(e.termLength)")
                }
            }
        }
    }

    /// What decoding the encoding of `cp` must give: entries sorted, a repeated key keeping its last value, index
    /// trees without entries dropped, tree counts equal to the entries.
    static func canonical(_ cp: CP) -> CP {
        var out = cp
        out.keyspaces = cp.keyspaces.mapValues { ks in
            var last: [[UInt8]: FuzzingSupport.CheckpointEntry] = [:]
            for e in ks.primary { last[e.key] = e }
            let primary = last.values.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            var indexes: [String: [FuzzingSupport.CheckpointIndexEntry]] = [:]
            for (name, entries) in ks.indexes where !entries.isEmpty {
                var l: [[UInt8]: FuzzingSupport.CheckpointIndexEntry] = [:]
                for e in entries { l[e.entry] = e }
                indexes[name] = l.values.sorted { $0.entry.lexicographicallyPrecedes($1.entry) }
            }
            return KS(primary: primary, indexes: indexes)
        }
        return out
    }

    static func diff(_ a: CP, _ b: CP) -> String {
        if a.segments != b.segments || a.lastSequence != b.lastSequence || a.nextLSN != b.nextLSN
            || a.coveredSegment != b.coveredSegment || a.coveredOffset != b.coveredOffset { return "(header differs)" }
        if Set(a.keyspaces.keys) != Set(b.keyspaces.keys) {
            return "(keyspaces \(a.keyspaces.keys.sorted()) vs \(b.keyspaces.keys.sorted()))"
        }
        for name in a.keyspaces.keys.sorted() where a.keyspaces[name] != b.keyspaces[name] {
            let x = a.keyspaces[name]!, y = b.keyspaces[name]!
            return "(keyspace \(name): \(x.primary.count)/\(x.primaryCount) vs \(y.primary.count)/\(y.primaryCount) entries, "
                + "indexes \(x.indexCounts.sorted { $0.key < $1.key }) vs \(y.indexCounts.sorted { $0.key < $1.key }))"
        }
        return "(?)"
    }

    static let names = ["a", "b", "ü", "e\u{301}", "\u{E9}", "keyspace-with-a-longer-name",
                        String(repeating: "n", count: 255)]
    static let invalidNames = ["", String(repeating: "x", count: 256)]

    /// Builds a checkpoint from the program, encodes it, decodes it, compares; then flips one byte of the
    /// encoding (CRC fixed) when the input asks for it and checks the result as arbitrary bytes.
    static func checkProgram(_ bytes: [UInt8]) throws {
        var input = FuzzInput(bytes)
        var valid = true
        var why: [String] = []
        func invalid(_ reason: String) { valid = false; why.append(reason) }

        let lastSequence = UInt64(input.u16())
        var segments: [FuzzingSupport.CheckpointSegment] = []
        for i in 0..<input.int(in: 0...3) {
            let high: UInt64 = input.int(in: 0...7) == 0 ? 1 << 32 : 0   // truncated to the low 32 bits by the loader
            segments.append(.init(id: high | UInt64(i + 1 + input.int(in: 0...3)), salt: UInt64(input.u32()),
                                  firstLSN: UInt64(input.u16())))
        }
        let ids = segments.map { UInt32(truncatingIfNeeded: $0.id) }
        var cp = CP(coveredSegment: segments.last?.id ?? 0, coveredOffset: UInt64(input.u16()),
                    nextLSN: UInt64(input.u16()), lastSequence: lastSequence, segments: segments, keyspaces: [:])

        func key(_ input: inout FuzzInput) -> [UInt8] {
            switch input.int(in: 0...15) {
            case 0: return Array(repeating: input.byte(), count: FuzzingSupport.maxKeyLength)
            case 1: return Array(repeating: input.byte(), count: FuzzingSupport.maxKeyLength + 1)
            case 2: return input.bytes(upTo: input.int(in: 0...24))
            default: return (0..<input.int(in: 0...4)).map { _ in UInt8(ascii: "a") + input.byte() % 5 }
            }
        }
        func location(_ input: inout FuzzInput, key: [UInt8]) -> FuzzingSupport.CheckpointEntry {
            var segment = ids.isEmpty ? 1 : input.pick(ids)
            var valueOffset = UInt32(input.u16())
            var valueLength = UInt32(input.u16())
            var sequence = lastSequence == 0 ? 0 : UInt64(input.int(in: 0...Int(lastSequence)))
            switch input.int(in: 0...15) {
            case 0: valueOffset = UInt32(FuzzingSupport.maxRawPageLength)
            case 1: valueOffset = UInt32(FuzzingSupport.maxRawPageLength + 1)
            case 2: valueLength = UInt32(FuzzingSupport.maxValueLength)
            case 3: valueLength = UInt32(FuzzingSupport.maxValueLength + 1)
            case 4: sequence = lastSequence + 1
            case 5: segment = (ids.max() ?? 0) &+ 1
            default: break
            }
            return .init(key: key, segment: segment, pageOffset: input.u32(), valueOffset: valueOffset,
                         valueLength: valueLength, hasTerms: input.bool(), sequence: sequence)
        }
        func checkLocation(_ e: FuzzingSupport.CheckpointEntry) {
            if !ids.contains(e.segment) { invalid("segment \(e.segment) not listed") }
            if Int(e.valueOffset) > FuzzingSupport.maxRawPageLength { invalid("valueOffset") }
            if Int(e.valueLength) > FuzzingSupport.maxValueLength { invalid("valueLength") }
            if e.sequence > lastSequence { invalid("sequence") }
            if e.key.count > FuzzingSupport.maxKeyLength { invalid("key length") }
        }

        var flip: (position: Int, mask: UInt8)? = nil
        var budget = 800   // generated entries over the whole program (bulk runs), to keep an input fast
        var steps = 0
        while !input.isAtEnd && steps < 64 {
            steps += 1
            let op = input.int(in: 0...7)
            if op == 7 {   // stop: the rest is a byte flip of the encoding
                let position = Int(input.u16())
                let mask = input.byte()
                if mask != 0 { flip = (position, mask) }
                break
            }
            let nameChoice = input.int(in: 0...15)
            let name = nameChoice < names.count ? names[nameChoice]
                : nameChoice < 14 ? "ks\(nameChoice)" : invalidNames[nameChoice - 14]
            var ks = cp.keyspaces[name] ?? KS(primary: [], indexes: [:])
            switch op {
            case 0...2:   // a few primary entries
                for _ in 0..<input.int(in: 0...6) {
                    let k = key(&input)
                    ks.primary.append(location(&input, key: k))
                }
            case 3:   // a bulk run of generated keys: multi-level trees, built by insertion
                let count = min(input.int(in: 0...800), budget)
                budget -= count
                // A long prefix (up to 1,000 bytes: 3-4 keys a leaf) reaches trees of three levels within the budget.
                let prefix = Array(key(&input).prefix(1000))
                let template = location(&input, key: [])
                let stride = input.int(in: 1...7)
                for i in 0..<count {
                    var e = template
                    e.key = prefix + Array(String(i * stride, radix: 36).utf8)
                    e.sequence = min(e.sequence, UInt64(i) % (lastSequence + 1))
                    ks.primary.append(e)
                }
            case 4...5:   // index entries
                let indexChoice = input.int(in: 0...9)
                let index = indexChoice < 7 ? "idx\(indexChoice)" : indexChoice == 7 ? String(repeating: "i", count: 255)
                    : indexChoice == 8 ? String(repeating: "i", count: 256) : ""
                let bulk = op == 5 ? min(input.int(in: 0...800), budget) : 0
                budget -= bulk
                var entries = ks.indexes[index] ?? []
                for _ in 0..<(op == 4 ? input.int(in: 0...6) : 1) {
                    var term: [UInt8]
                    switch input.int(in: 0...15) {
                    case 0: term = Array(repeating: 6, count: FuzzingSupport.maxIndexTermLength)
                    case 1: term = Array(repeating: 6, count: FuzzingSupport.maxIndexTermLength + 1)
                    default: term = [6] + input.bytes(upTo: input.int(in: 0...6))
                    }
                    // Mostly a key of the keyspace (as in a real index), sometimes one it lacks.
                    let pk = !ks.primary.isEmpty && input.int(in: 0...7) != 0 ? input.pick(ks.primary).key : key(&input)
                    var termLength = term.count
                    if input.int(in: 0...15) == 0 { termLength = term.count + pk.count + 1 }
                    if bulk > 0 {
                        for i in 0..<bulk {
                            let bulkTerm = term + Array(String(i, radix: 36).utf8)
                            entries.append(.init(entry: bulkTerm + pk,
                                                 termLength: termLength == term.count ? bulkTerm.count : termLength))
                        }
                    } else {
                        entries.append(.init(entry: term + pk, termLength: termLength))
                    }
                }
                ks.indexes[index] = entries
            default:   // just the keyspace
                break
            }
            cp.keyspaces[name] = ks
        }

        // What the loader must do with it: entries are checked only as they end up in the trees.
        let expected = canonical(cp)
        for (name, ks) in expected.keyspaces {
            if name.utf8.isEmpty || name.utf8.count > FuzzingSupport.maxNameLength { invalid("keyspace name") }
            ks.primary.forEach(checkLocation)
            for (index, entries) in ks.indexes {
                if index.utf8.isEmpty || index.utf8.count > FuzzingSupport.maxNameLength { invalid("index name") }
                for e in entries where e.entry.count > FuzzingSupport.maxIndexTermLength + FuzzingSupport.maxKeyLength
                    || e.termLength > min(e.entry.count, FuzzingSupport.maxIndexTermLength) {
                    invalid("index entry")
                }
            }
        }

        let fs = MemoryFileSystem()
        let encoded = try FuzzingSupport.encodeCheckpoint(cp, directory: "/ckp", fileSystem: fs)
        let outcome = FuzzingSupport.decodeCheckpoint(encoded)
        switch outcome {
        case .valid(let back):
            try fuzzRequire(valid, "a checkpoint with \(why.prefix(3)) was accepted")
            try checkWellFormed(back)
            try fuzzRequire(back == expected, "checkpoint round trip differs \(diff(expected, back))")
            let again = try FuzzingSupport.encodeCheckpoint(back, directory: "/ckp", fileSystem: fs)
            try fuzzRequire(FuzzHelpers.same(again, encoded), "re-encoding a decoded checkpoint changed its bytes")
        case .invalid(let reason):
            try fuzzRequire(!valid, "a valid checkpoint (\(expected.entryCount) entries, \(expected.indexEntryCount) index entries) was rejected: \(reason)")
        }
        if let flip, !encoded.isEmpty {
            var mutated = encoded
            mutated[flip.position % mutated.count] ^= flip.mask
            try checkBytes(FuzzingSupport.withValidCheckpointChecksum(mutated))
        }
    }
}
