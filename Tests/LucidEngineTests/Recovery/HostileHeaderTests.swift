import Foundation
import Testing
@testable import LucidEngine

/// Forged pages (FORMAT.md "Page" and "Validation order"): each hostile header or payload must be rejected
/// before anything is allocated or returned. In the tail (after the last commit) it is cut and the store equals
/// the model; inserted before later synced pages it is `corruption` at its offset. Never a crash, never a wrong
/// value. Garbage and zero tails are cut too.
@Suite("Recovery: hostile page headers")
struct HostileHeaderTests {
    /// What a forged page needs to look plausible at a given place of the segment.
    struct Context {
        var salt: UInt32
        /// The LSN a page at this place must carry.
        var nextLSN: UInt64
        var nextSequence: UInt64
        /// A complete valid page from earlier in the segment (to replay it).
        var earlierPage: [UInt8]
    }

    struct Case: CustomStringConvertible {
        var description: String
        /// Where in the forged bytes a reader must first fail (a forged group may start with a valid page).
        var failsAt: @Sendable (Context) -> Int = { _ in 0 }
        var forge: @Sendable (Context) -> [UInt8]

        init(description: String, failsAt: @escaping @Sendable (Context) -> Int = { _ in 0 },
             forge: @escaping @Sendable (Context) -> [UInt8]) {
            self.description = description
            self.failsAt = failsAt
            self.forge = forge
        }
    }

    static let commitAndStart = Format.pageFlagCommit | Format.pageFlagGroupStart

    static let record = EngineTest.encodeRecord(kind: Format.recordKindPut, keyspace: Array("a".utf8),
                                                key: Array("forged".utf8), value: Array("forged value".utf8))

    /// A page that would be valid at `c` except for what `transform` changes (the CRC is recomputed).
    static func page(_ c: Context, type: UInt8 = Format.pageTypeData, flags: UInt8 = commitAndStart,
                     recordCount: UInt16 = 1, salt: UInt32? = nil, rawLength: UInt32? = nil,
                     storedLength: UInt32? = nil, lsn: UInt64? = nil, lsnOffset: UInt64 = 0,
                     payload: [UInt8] = record) -> [UInt8] {
        EngineTest.forgePage(type: type, flags: flags, recordCount: recordCount, salt: salt ?? c.salt,
                             rawLength: rawLength, storedLength: storedLength, lsn: lsn ?? (c.nextLSN + lsnOffset),
                             syncedLSN: c.nextLSN - 1, baseSequence: c.nextSequence, payload: payload)
    }

    static func compressed(_ raw: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        _ = raw.withUnsafeBytes { LZ4.compress($0, appendingTo: &out) }
        return out
    }

    static let compressibleRecord = EngineTest.encodeRecord(
        kind: Format.recordKindPut, keyspace: Array("a".utf8), key: Array("zeros".utf8),
        value: [UInt8](repeating: 0, count: 600))

    static let cases: [Case] = {
        var cases: [Case] = [
            Case(description: "storedLength 0") { page($0, storedLength: 0) },
            Case(description: "storedLength 0xFFFFFFFF") { page($0, storedLength: 0xFFFF_FFFF) },
            Case(description: "storedLength one more than the payload") { page($0, storedLength: UInt32(record.count + 1)) },
            Case(description: "rawLength 0") { page($0, rawLength: 0) },
            Case(description: "rawLength 0xFFFFFFFF") { page($0, rawLength: 0xFFFF_FFFF) },
            Case(description: "rawLength 0xFFFFFFFF, compressed") {
                page($0, flags: commitAndStart | Format.pageFlagCompressed, rawLength: 0xFFFF_FFFF)
            },
            Case(description: "rawLength just over 8 MiB, compressed") {
                page($0, flags: commitAndStart | Format.pageFlagCompressed, rawLength: UInt32(Format.maxRawPageLength + 1))
            },
            Case(description: "wrong salt") { page($0, salt: $0.salt ^ 0x0100) },
            Case(description: "salt 0") { page($0, salt: 0) },
            Case(description: "LSN repeated") { page($0, lsn: $0.nextLSN - 1) },
            Case(description: "LSN skipped") { page($0, lsn: $0.nextLSN + 1) },
            Case(description: "LSN 0") { page($0, lsn: 0) },
            Case(description: "an earlier valid page replayed") { $0.earlierPage },
            Case(description: "recordCount 0") { page($0, recordCount: 0) },
            Case(description: "recordCount 2 for one record") { page($0, recordCount: 2) },
            Case(description: "recordCount 0xFFFF") { page($0, recordCount: 0xFFFF) },
            Case(description: "unknown flag 0x08") { page($0, flags: commitAndStart | 0x08) },
            Case(description: "unknown flag 0x80") { page($0, flags: commitAndStart | 0x80) },
            // GROUP_START exactly on the page after a COMMIT page.
            Case(description: "a COMMIT page after a COMMIT page without GROUP_START") { page($0, flags: Format.pageFlagCommit) },
            Case(description: "a two-page group whose first page lacks GROUP_START") {
                page($0, flags: 0) + page($0, flags: Format.pageFlagCommit, lsnOffset: 1)
            },
            Case(description: "a two-page group whose second page also says GROUP_START",
                 failsAt: { page($0, flags: Format.pageFlagGroupStart).count }) {
                page($0, flags: Format.pageFlagGroupStart) + page($0, lsnOffset: 1)
            },
            // Two valid pages of a group that never commits: in the tail an incomplete group; in the middle the
            // next (GROUP_START) page is the first that cannot follow them.
            Case(description: "a group that never commits (GROUP_START, then a page without COMMIT)",
                 failsAt: { page($0, flags: Format.pageFlagGroupStart).count + page($0, flags: 0, lsnOffset: 1).count }) {
                page($0, flags: Format.pageFlagGroupStart) + page($0, flags: 0, lsnOffset: 1)
            },
            Case(description: "checksum off by one") {
                var p = page($0)
                p[Format.pageHeaderCRCOffset] ^= 1
                return p
            },
            Case(description: "compressed payload that decompresses to rawLength - 1") {
                page($0, flags: commitAndStart | Format.pageFlagCompressed,
                     rawLength: UInt32(compressibleRecord.count - 1), payload: compressed(compressibleRecord))
            },
            Case(description: "compressed payload that decompresses to rawLength + 1") {
                page($0, flags: commitAndStart | Format.pageFlagCompressed,
                     rawLength: UInt32(compressibleRecord.count + 1), payload: compressed(compressibleRecord))
            },
            Case(description: "random bytes flagged compressed") {
                var rng = EngineTest.SplitMix64(seed: $0.nextLSN)
                return page($0, flags: commitAndStart | Format.pageFlagCompressed, rawLength: 4096,
                            payload: rng.bytes(200))
            },
            Case(description: "uncompressed page whose storedLength differs from rawLength") {
                page($0, rawLength: UInt32(record.count + 8))
            },
        ]
        // Unknown page types without the safe-to-ignore bit (0x20).
        for type: UInt8 in [0, 2, 0x1F, 0x40, 0x81, 0xDF] {
            cases.append(Case(description: "unknown type \(type)") { page($0, type: type) })
        }
        // A valid checksum over payloads that are not records.
        let nonsense: [(String, [UInt8])] = [
            ("record kind 3", [3] + Array(record.dropFirst())),
            ("record kind 0", [0] + Array(record.dropFirst())),
            ("keyspace length 0", EngineTest.encodeRecord(kind: 1, keyspace: [], key: [1], value: [2])),
            ("keyspace length 256", EngineTest.encodeRecord(kind: 1, keyspace: [UInt8](repeating: 0x61, count: 256), key: [1], value: [2])),
            ("key length 1025", EngineTest.encodeRecord(kind: 1, keyspace: [0x61], key: [UInt8](repeating: 1, count: 1025), value: [])),
            ("a delete with a value", EngineTest.encodeRecord(kind: 2, keyspace: [0x61], key: [1], value: [2])),
            ("a delete with index terms", EngineTest.encodeRecord(kind: 2, keyspace: [0x61], key: [1], value: [], termCount: 1) + [1, 0x69, 0]),
            ("trailing bytes", record + [0]),
            ("a record cut short", Array(record.dropLast(3))),
            ("a value length past the end", [1, 0, 1, 0x61, 1, 0x6B, 0xFF, 0xFF, 0x03, 0]),
            ("an 11-byte varint", [1] + [UInt8](repeating: 0xFF, count: 10) + [0x01, 1, 0x61, 0, 0, 0]),
            ("4097 index terms", EngineTest.encodeRecord(kind: 1, keyspace: [0x61], key: [1], value: [], termCount: 4097)),
            ("a term with an empty index name", EngineTest.encodeRecord(kind: 1, keyspace: [0x61], key: [1], value: [], termCount: 1) + [0, 0]),
        ]
        for (name, payload) in nonsense {
            cases.append(Case(description: "valid CRC over nonsense: \(name)") { page($0, payload: payload) })
        }
        for seed in 1...4 as ClosedRange<UInt64> {
            cases.append(Case(description: "valid CRC over random payload \(seed)") {
                var rng = EngineTest.SplitMix64(seed: seed)
                return page($0, recordCount: UInt16(rng.int(1...3)), payload: rng.bytes(rng.int(1...300)))
            })
        }
        return cases
    }()

    struct Store {
        var dir: String
        var segment: String
        var original: [UInt8]
        var model: EngineTest.Model
        var groups: [EngineTest.CommittedGroup]
        var pages: [EngineTest.DiskPage]

        /// The context for a page placed at `offset`, which must be a group boundary.
        func context(at offset: Int, sequence: UInt64) -> Context {
            let next = pages.first { $0.offset >= offset }
            let previous = pages.last { $0.offset < offset }!
            let earlier = pages[0]
            return Context(salt: EngineTest.pageSalt(ofSegment: original), nextLSN: next?.lsn ?? (previous.lsn + 1),
                           nextSequence: sequence,
                           earlierPage: Array(original[earlier.offset..<earlier.end]))
        }

        func restore() throws {
            try EngineTest.removeCheckpoints(dir)
            try EngineTest.writeFile(segment, original)
        }
    }

    static func makeStore(_ dir: String) throws -> Store {
        var rng = EngineTest.SplitMix64(seed: 0x4057_11E)
        var batches: [[EngineTest.Op]] = []
        for i in 0..<8 {
            batches.append([.put(keyspace: "a", key: Array("k\(i)".utf8), value: rng.bytes(rng.int(0...200))),
                            .put(keyspace: "b", key: Array("k\(i % 3)".utf8), value: rng.bytes(rng.int(0...50)))])
        }
        batches.append([.delete(keyspace: "a", key: Array("k2".utf8))])
        let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .always))
        let (models, groups) = try EngineTest.commitAll(batches, to: engine, dir: dir)
        try engine.close()
        // Opens replay the log as FORMAT.md "Recovery" describes (no checkpoint, as after a crash).
        try EngineTest.removeCheckpoints(dir)
        let segment = try EngineTest.activeSegmentPath(dir)
        let original = try EngineTest.readFile(segment)
        return Store(dir: dir, segment: segment, original: original, model: models.last!, groups: groups,
                     pages: EngineTest.pages(ofSegment: original))
    }

    @Test("the forging helper writes pages the engine accepts (control)")
    func validForgedPageIsApplied() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let store = try Self.makeStore(dir)
            let c = store.context(at: store.original.count, sequence: UInt64(store.groups.count + 1))
            try EngineTest.append(store.segment, Self.page(c))
            // A two-page group of two batches (sequences n+1 and n+2; the second page's record has delta 1)...
            let second = EngineTest.encodeRecord(kind: Format.recordKindPut, seqDelta: 1, keyspace: Array("b".utf8),
                                                 key: Array("forged-2".utf8), value: [2])
            try EngineTest.append(store.segment,
                                  EngineTest.forgePage(flags: Format.pageFlagGroupStart, salt: c.salt, lsn: c.nextLSN + 1,
                                                       syncedLSN: c.nextLSN, baseSequence: c.nextSequence + 1,
                                                       payload: Self.record)
                                  + EngineTest.forgePage(flags: Format.pageFlagCommit, salt: c.salt, lsn: c.nextLSN + 2,
                                                         syncedLSN: c.nextLSN, baseSequence: c.nextSequence + 1,
                                                         payload: second))
            // ...and a page of a future type with the safe-to-ignore bit, as its own commit group: skipped and kept.
            let ignorable = EngineTest.forgePage(type: 0x21, recordCount: 0, salt: c.salt,
                                                 lsn: c.nextLSN + 3, syncedLSN: c.nextLSN + 2, baseSequence: 0,
                                                 payload: Array("future".utf8))
            try EngineTest.append(store.segment, ignorable)
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            #expect(engine.recoveryReport.droppedBytes == 0)
            var expected = store.model
            expected.apply([.put(keyspace: "a", key: Array("forged".utf8), value: Array("forged value".utf8)),
                            .put(keyspace: "b", key: Array("forged-2".utf8), value: [2])])
            #expect(try EngineTest.differences(engine, expected).isEmpty)
            #expect(engine.statistics.lastSequence == c.nextSequence + 2)
            // Writing goes on after the ignorable page, and everything survives a reopen.
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "b", key: [9], value: [9])]))
            expected.apply([.put(keyspace: "b", key: [9], value: [9])])
            try engine.close()
            let again = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? again.close() }
            #expect(again.recoveryReport.droppedBytes == 0)
            #expect(try EngineTest.differences(again, expected).isEmpty)
            #expect(try again.verify().ok)
        }
    }

    @Test("a hostile page after the last commit is cut; the store equals the model", arguments: cases)
    func hostilePageInTail(_ hostile: Case) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let store = try Self.makeStore(dir)
            let forged = hostile.forge(store.context(at: store.original.count, sequence: UInt64(store.groups.count + 1)))
            try EngineTest.append(store.segment, forged)
            let tag = "[\(hostile)]"
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            #expect(engine.recoveryReport.droppedBytes == UInt64(forged.count), "\(tag)")
            #expect(engine.recoveryReport.truncatedAtOffset == UInt64(store.original.count), "\(tag)")
            let diffs = try EngineTest.differences(engine, store.model, absentKeys: [Array("forged".utf8), Array("zeros".utf8)],
                                                   keyspaces: ["a", "b"])
            #expect(diffs.isEmpty, "\(tag) \(diffs.prefix(4))")
            try engine.close()
            #expect(try EngineTest.readFile(store.segment) == store.original, "\(tag) the tail is removed")
            let again = try Engine.open(at: dir, options: EngineTest.options())
            #expect(again.recoveryReport.droppedBytes == 0, "\(tag)")
            #expect(try again.verify().ok, "\(tag)")
            try again.close()
        }
    }

    @Test("a hostile page before later synced pages is corruption at its offset", arguments: cases)
    func hostilePageInTheMiddle(_ hostile: Case) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let store = try Self.makeStore(dir)
            // Insert before the last three groups: synced groups follow it.
            let g = store.groups.count - 3
            let at = store.groups[g].start
            let context = store.context(at: at, sequence: UInt64(g + 1))
            let forged = hostile.forge(context)
            let failure = at + hostile.failsAt(context)
            try EngineTest.insert(store.segment, at: at, forged)
            let damaged = try EngineTest.readFile(store.segment)
            let tag = "[\(hostile) at \(at)]"
            for mode in [EngineOptions.RecoveryMode.pointInTime, .strict] {
                let error = EngineTest.expectLucidError(.corruption, "\(tag) \(mode)") {
                    try Engine.open(at: dir, options: EngineTest.options(recoveryMode: mode))
                }
                #expect(error?.file == store.segment, "\(tag) \(String(describing: error))")
                #expect(error?.offset == UInt64(failure), "\(tag) \(String(describing: error))")
            }
            #expect(try EngineTest.readFile(store.segment) == damaged, "\(tag) a refused open changes nothing")
        }
    }

    /// A tail of 0xFF bytes only is filler (FORMAT.md "Filler"): the clean end of the log, nothing dropped. Any
    /// other byte in it (a zero at its end, say) makes it a tail to cut like any other.
    @Test("garbage or zeros after the last commit are cut; filler is the clean end", arguments: [1, 2, 3, 47, 48, 49, 100, 4095, 4096, 4097, 65536])
    func garbageTail(length: Int) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let store = try Self.makeStore(dir)
            var rng = EngineTest.SplitMix64(seed: UInt64(length))
            let magic = EngineTest.le32(Format.pageMagic)
            let tails: [(String, [UInt8])] = [
                ("zeros", [UInt8](repeating: 0, count: length)),
                ("random", rng.bytes(length)),
                ("magic then random", Array((magic + rng.bytes(length)).prefix(length))),
                ("0xFF then a zero", [UInt8](repeating: 0xFF, count: length - 1) + [0]),
                ("a zero then 0xFF", [0] + [UInt8](repeating: 0xFF, count: length - 1)),
                ("0xFF (filler)", [UInt8](repeating: 0xFF, count: length)),
            ]
            for (kind, tail) in tails {
                let tag = "[\(length) bytes of \(kind)]"
                let filler = kind.hasSuffix("(filler)")
                try store.restore()
                try EngineTest.append(store.segment, tail)
                if filler {
                    // Strict recovery drops nothing either, and leaves the file as it is.
                    let strict = try Engine.open(at: dir, options: EngineTest.options(recoveryMode: .strict))
                    #expect(strict.recoveryReport.droppedBytes == 0, "\(tag)")
                    try strict.close()
                    #expect(try EngineTest.readFile(store.segment) == store.original + tail, "\(tag) strict changed the file")
                }
                let engine = try Engine.open(at: dir, options: EngineTest.options())
                #expect(engine.recoveryReport.droppedBytes == (filler ? 0 : UInt64(length)), "\(tag)")
                let diffs = try EngineTest.differences(engine, store.model, keyspaces: ["a", "b"])
                #expect(diffs.isEmpty, "\(tag) \(diffs.prefix(4))")
                // The store keeps working after the cut.
                try engine.commitAndWait(EngineTest.batch([.put(keyspace: "b", key: [1], value: [2])]))
                let logEnd = EngineTest.logLengths(engine, dir: dir)[store.segment]!
                try engine.close()
                #expect(try EngineTest.fileSize(store.segment) > store.original.count, "\(tag)")
                #expect(try EngineTest.fileSize(store.segment) == logEnd, "\(tag) close leaves no filler")
                let again = try Engine.open(at: dir, options: EngineTest.options())
                #expect(again.recoveryReport.droppedBytes == 0, "\(tag)")
                #expect(try again.get([1], in: "b") == [2], "\(tag)")
                #expect(try again.verify().ok, "\(tag)")
                try again.close()
            }
        }
    }
}
