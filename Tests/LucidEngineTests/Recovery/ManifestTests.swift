import Foundation
import Testing
@testable import LucidEngine

/// FORMAT.md "A store is a directory", "Manifest slot" and "Recovery" 1–3: slot selection, orphans, temporary
/// files, missing or wrongly sized segments, newer format versions, and missing stores.
@Suite("Recovery: manifest and files")
struct ManifestTests {
    static let segmentSize: UInt64 = 1 << 20

    static func options(_ mode: EngineOptions.RecoveryMode = .pointInTime, create: Bool = true) -> EngineOptions {
        EngineTest.options(sync: .always, segmentSize: segmentSize, createIfMissing: create, recoveryMode: mode)
    }

    /// Commits 120 KB single-key batches until the store has rolled to a second segment, then `extra` more.
    /// Returns the model and the batches' groups.
    static func makeRolledStore(_ dir: String, extra: Int, seed: UInt64) throws
        -> (model: EngineTest.Model, groups: [EngineTest.CommittedGroup]) {
        var rng = EngineTest.SplitMix64(seed: seed)
        let engine = try Engine.open(at: dir, options: options())
        defer { try? engine.close() }
        var model = EngineTest.Model()
        var groups: [EngineTest.CommittedGroup] = []
        var i = 0
        var remaining = extra
        while engine.statistics.segments < 2 || remaining > 0 {
            if engine.statistics.segments >= 2 { remaining -= 1 }
            let ops: [EngineTest.Op] = [.put(keyspace: "r", key: Array("key-\(i)".utf8), value: rng.bytes(120_000))]
            let result = try EngineTest.commitAll([ops], to: engine, dir: dir, startingFrom: model)
            model = result.models.last!
            groups += result.groups
            i += 1
        }
        return (model, groups)
    }

    /// The path of the manifest slot other than the newest one.
    static func olderSlot(_ dir: String) throws -> String {
        let newest = try EngineTest.newestManifestSlot(dir)
        return Format.manifestSlotNames.map { dir + "/" + $0 }.first { $0 != newest.path }!
    }

    static func corruptSlot(_ path: String) throws {
        let bytes = try EngineTest.readFile(path)
        try EngineTest.flipBit(path, byte: bytes.count - 6, bit: 2)   // inside the body: the CRC fails
    }

    /// A roll creates the next segment (header only, synced), then writes the next manifest version into the other
    /// slot. A crash during that slot write leaves a torn newest slot and an orphan holding no page: open must use
    /// the older slot, remove the orphan and lose nothing.
    @Test("a torn newest manifest slot after an interrupted roll falls back to the older slot")
    func newestSlotCorruptFallsBack() throws {
        try EngineTest.withTemporaryDirectory { dir in
            var rng = EngineTest.SplitMix64(seed: 1)
            let engine = try Engine.open(at: dir, options: Self.options())
            var model = EngineTest.Model()
            for i in 0..<5 {
                let ops: [EngineTest.Op] = [.put(keyspace: "r", key: [UInt8(i)], value: rng.bytes(3_000))]
                try engine.commitAndWait(EngineTest.batch(ops))
                model.apply(ops)
            }
            try engine.close()
            let older = try EngineTest.newestManifestSlot(dir)
            let active = try EngineTest.activeSegmentPath(dir)
            let activeBytes = try EngineTest.readFile(active)
            let nextLSN = EngineTest.pages(ofSegment: activeBytes).last!.lsn + 1
            // The interrupted roll: the new segment, then a torn write of the next manifest version.
            let newId = older.manifest.nextSegmentId
            let orphan = Format.segmentFileName(newId)
            try EngineTest.writeFile(dir + "/" + orphan, SegmentHeader(
                segmentId: newId, salt: 0xFEED_F00D_1234, firstLSN: nextLSN, createdAtMillis: 1,
                kind: Format.segmentKindLog).encode())
            let activeId = Format.segmentId(fromFileName: URL(fileURLWithPath: active).lastPathComponent)!
            let next = Manifest(version: older.manifest.version + 1, nextSegmentId: newId + 1, segments: [
                .init(id: activeId, sealed: true, sealedLength: UInt64(activeBytes.count), firstLSN: 1),
                .init(id: newId, sealed: false, sealedLength: 0, firstLSN: nextLSN),
            ]).encode()
            let newestPath = dir + "/" + Format.manifestSlotNames[Int((older.manifest.version + 1) % 2)]
            #expect(newestPath != older.path)
            try EngineTest.writeFile(newestPath, Array(next.prefix(next.count - 7)))   // torn

            let reopened = try Engine.open(at: dir, options: Self.options())
            #expect(reopened.recoveryReport.removedFiles.contains(orphan), "\(reopened.recoveryReport.removedFiles)")
            #expect(!EngineTest.fileExists(dir + "/" + orphan), "the orphan is removed")
            #expect(reopened.statistics.segments == 1)
            #expect(try EngineTest.differences(reopened, model).isEmpty)
            #expect(try reopened.verify().ok)
            // The store goes on: write enough to roll for real, reopen, and everything is there.
            for i in 0..<10 {
                let ops: [EngineTest.Op] = [.put(keyspace: "s", key: [UInt8(i)], value: rng.bytes(120_000))]
                try reopened.commitAndWait(EngineTest.batch(ops))
                model.apply(ops)
            }
            #expect(reopened.statistics.segments >= 2)
            try reopened.close()
            let again = try Engine.open(at: dir, options: Self.options())
            defer { try? again.close() }
            #expect(try EngineTest.differences(again, model).isEmpty)
            #expect(try again.verify().ok)
        }
    }

    @Test("a corrupt older slot is ignored")
    func olderSlotCorruptIsIgnored() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let (model, _) = try Self.makeRolledStore(dir, extra: 2, seed: 2)
            try Self.corruptSlot(try Self.olderSlot(dir))
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            #expect(try EngineTest.differences(engine, model).isEmpty)
            #expect(engine.statistics.segments == 2)
        }
    }

    @Test("a corrupt newest slot after a roll followed by commits is refused: the older slot lost track of data")
    func newestSlotCorruptWithDataInUnlistedSegment() throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.makeRolledStore(dir, extra: 3, seed: 3)
            let newest = try EngineTest.newestManifestSlot(dir)
            try Self.corruptSlot(newest.path)
            let unlisted = dir + "/" + Format.segmentFileName(2)
            let before = try EngineTest.directoryContents(dir, excluding: ["LOCK"])
            let error = EngineTest.expectLucidError(.corruption) { try Engine.open(at: dir, options: Self.options()) }
            #expect(error?.file == unlisted, "\(String(describing: error))")
            #expect(try EngineTest.directoryContents(dir, excluding: ["LOCK"]) == before, "nothing is removed")
        }
    }

    @Test("an unlisted segment whose first page is damaged but which holds later valid pages is not removed")
    func unlistedSegmentWithDamagedFirstPage() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let (_, groups) = try Self.makeRolledStore(dir, extra: 3, seed: 4)
            let newest = try EngineTest.newestManifestSlot(dir)
            try Self.corruptSlot(newest.path)
            let unlisted = dir + "/" + Format.segmentFileName(2)
            let first = try #require(groups.first { $0.segment == unlisted })
            try EngineTest.flipBit(unlisted, byte: first.start + 100, bit: 0)
            // FORMAT.md: an orphan is removed "only if it holds no valid page"; this one holds three.
            EngineTest.expectLucidError(.corruption) { try Engine.open(at: dir, options: Self.options()) }
            #expect(EngineTest.fileExists(unlisted), "a segment holding valid pages must never be deleted")
        }
    }

    @Test("both slots corrupt with data present is corruption, never an empty store")
    func bothSlotsCorrupt() throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.makeRolledStore(dir, extra: 1, seed: 5)
            for name in Format.manifestSlotNames { try Self.corruptSlot(dir + "/" + name) }
            let before = try EngineTest.directoryContents(dir, excluding: ["LOCK"])
            for options in [Self.options(), Self.options(.strict), Self.options(create: false)] {
                EngineTest.expectLucidError(.corruption, "\(options.recoveryMode) create \(options.createIfMissing)") {
                    try Engine.open(at: dir, options: options)
                }
            }
            #expect(try EngineTest.directoryContents(dir, excluding: ["LOCK"]) == before, "nothing is modified")
        }
    }

    @Test("no valid manifest and a segment whose first page is damaged but later pages hold data: corruption")
    func bothSlotsCorruptAndFirstPageDamaged() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            for i in 0..<5 { try engine.commitAndWait(EngineTest.batch([.put(keyspace: "x", key: [UInt8(i)], value: [UInt8(i)])])) }
            try engine.close()
            for name in Format.manifestSlotNames where EngineTest.fileExists(dir + "/" + name) {
                try Self.corruptSlot(dir + "/" + name)
            }
            let segment = try EngineTest.activeSegmentPath(dir)
            try EngineTest.flipBit(segment, byte: Format.segmentHeaderLength + Format.pageHeaderLength + 2, bit: 4)
            EngineTest.expectLucidError(.corruption) { try Engine.open(at: dir, options: Self.options()) }
            #expect(try EngineTest.fileSize(segment) > Format.segmentHeaderLength, "the data must not be wiped")
        }
    }

    @Test("no valid manifest and no page anywhere: an interrupted create, initialised afresh")
    func interruptedCreateIsInitialisedAfresh() throws {
        try EngineTest.withTemporaryDirectory { dir in
            try Engine.open(at: dir, options: Self.options()).close()
            for name in Format.manifestSlotNames where EngineTest.fileExists(dir + "/" + name) {
                try Self.corruptSlot(dir + "/" + name)
            }
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            #expect(engine.recoveryReport.created)
            #expect(engine.keyspaces().isEmpty)
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "x", key: [1], value: [2])]))
            #expect(try engine.get([1], in: "x") == [2])
        }
    }

    @Test("a newer format version in the newest manifest slot is unsupportedFormatVersion")
    func manifestVersionTwo() throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.makeRolledStore(dir, extra: 1, seed: 6)
            let newest = try EngineTest.newestManifestSlot(dir)
            var bytes = try EngineTest.readFile(newest.path)
            EngineTest.put32(&bytes, 8, Format.formatVersion + 1)   // version 3 today
            EngineTest.refreshManifestCRC(&bytes)
            try EngineTest.writeFile(newest.path, bytes)
            for mode in [EngineOptions.RecoveryMode.pointInTime, .strict] {
                EngineTest.expectLucidError(.unsupportedFormatVersion, "\(mode)") { try Engine.open(at: dir, options: Self.options(mode)) }
            }
            #expect(try EngineTest.readFile(newest.path) == bytes, "the slot is not rewritten")
        }
    }

    @Test("damaged version bytes (the checksum no longer holds) in the older manifest slot: it is ignored, and the store opens whole")
    func olderSlotVersionBytesDamaged() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let (model, _) = try Self.makeRolledStore(dir, extra: 1, seed: 9)
            let older = try Self.olderSlot(dir)
            var bytes = try EngineTest.readFile(older)
            EngineTest.put32(&bytes, 8, 0xF3F3_F3F3)   // reads as a far newer version; the CRC is left as it was
            try EngineTest.writeFile(older, bytes)
            for mode in [EngineOptions.RecoveryMode.strict, .pointInTime] {
                let engine = try Engine.open(at: dir, options: Self.options(mode))
                #expect(try EngineTest.differences(engine, model).isEmpty, "\(mode)")
                #expect(try engine.verify().ok)
                try engine.close()
            }
        }
    }

    @Test("damaged version bytes in a segment header (the checksum no longer holds) are corruption, not a newer format")
    func segmentVersionBytesDamaged() throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.makeRolledStore(dir, extra: 1, seed: 10)
            let segment = dir + "/" + Format.segmentFileName(1)
            var bytes = try EngineTest.readFile(segment)
            EngineTest.put32(&bytes, 8, Format.formatVersion + 1)   // the CRC is left as it was
            try EngineTest.writeFile(segment, bytes)
            let error = EngineTest.expectLucidError(.corruption) { try Engine.open(at: dir, options: Self.options()) }
            #expect(error?.file == segment, "\(String(describing: error))")
        }
    }

    @Test("a newer format version in a segment header is unsupportedFormatVersion", arguments: [false, true])
    func segmentVersionTwo(sealed: Bool) throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.makeRolledStore(dir, extra: 1, seed: 7)
            let segment = dir + "/" + Format.segmentFileName(sealed ? 1 : 2)
            var bytes = try EngineTest.readFile(segment)
            EngineTest.put32(&bytes, 8, Format.formatVersion + 1)   // version 3 today
            EngineTest.refreshSegmentHeaderCRC(&bytes)
            try EngineTest.writeFile(segment, bytes)
            let error = EngineTest.expectLucidError(.unsupportedFormatVersion) { try Engine.open(at: dir, options: Self.options()) }
            #expect(error?.file == segment, "\(String(describing: error))")
            #expect(try EngineTest.readFile(segment) == bytes, "the segment is not modified")
        }
    }

    @Test("a listed segment that is missing is corruption", arguments: [1, 2] as [UInt64])
    func listedSegmentMissing(id: UInt64) throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.makeRolledStore(dir, extra: 1, seed: 8)
            let segment = dir + "/" + Format.segmentFileName(id)
            try FileManager.default.removeItem(atPath: segment)
            let error = EngineTest.expectLucidError(.corruption) { try Engine.open(at: dir, options: Self.options()) }
            #expect(error?.file == segment, "\(String(describing: error))")
        }
    }

    @Test("a sealed segment one byte short or long is corruption naming it", arguments: [-1, 1])
    func sealedSegmentWrongLength(delta: Int) throws {
        try EngineTest.withTemporaryDirectory { dir in
            _ = try Self.makeRolledStore(dir, extra: 1, seed: 9)
            let sealed = dir + "/" + Format.segmentFileName(1)
            let size = try EngineTest.fileSize(sealed)
            if delta < 0 { try EngineTest.truncateFile(sealed, to: size - 1) } else { try EngineTest.append(sealed, [0]) }
            for mode in [EngineOptions.RecoveryMode.pointInTime, .strict] {
                let error = EngineTest.expectLucidError(.corruption, "\(mode)") { try Engine.open(at: dir, options: Self.options(mode)) }
                #expect(error?.file == sealed, "\(String(describing: error))")
            }
            #expect(try EngineTest.fileSize(sealed) == size + delta, "sealed segments are never modified")
        }
    }

    @Test("an orphan segment holding only a header (an interrupted roll) is removed and reported")
    func orphanWithOnlyHeaderIsRemoved() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            var model = EngineTest.Model()
            for i in 0..<4 {
                let ops: [EngineTest.Op] = [.put(keyspace: "o", key: [UInt8(i)], value: [UInt8](repeating: UInt8(i), count: 100))]
                try engine.commitAndWait(EngineTest.batch(ops))
                model.apply(ops)
            }
            try engine.close()
            let manifest = try EngineTest.newestManifestSlot(dir).manifest
            let nextId = manifest.nextSegmentId
            let active = try EngineTest.readFile(try EngineTest.activeSegmentPath(dir))
            let lastLSN = EngineTest.pages(ofSegment: active).last!.lsn
            let header = SegmentHeader(segmentId: nextId, salt: 0x1234_5678_9ABC, firstLSN: lastLSN + 1,
                                       createdAtMillis: 1, kind: Format.segmentKindLog).encode()
            let orphan = Format.segmentFileName(nextId)
            try EngineTest.writeFile(dir + "/" + orphan, header)
            // Strict recovery never modifies the store: the orphan stays.
            if let strict = try? Engine.open(at: dir, options: Self.options(.strict)) { try strict.close() }
            #expect(EngineTest.fileExists(dir + "/" + orphan), "strict recovery must not remove files")

            let reopened = try Engine.open(at: dir, options: Self.options())
            #expect(reopened.recoveryReport.removedFiles.contains(orphan), "\(reopened.recoveryReport.removedFiles)")
            #expect(!EngineTest.fileExists(dir + "/" + orphan))
            #expect(try EngineTest.differences(reopened, model).isEmpty)
            // The next roll can create that id again.
            try reopened.commitAndWait(EngineTest.batch([.put(keyspace: "o", key: [9], value: [9])]))
            try reopened.close()
            let again = try Engine.open(at: dir, options: Self.options())
            defer { try? again.close() }
            #expect(again.recoveryReport.removedFiles.isEmpty)
            #expect(try again.get([9], in: "o") == [9])
        }
    }

    @Test("orphans without a valid header (empty, garbage) are removed too")
    func orphanGarbageIsRemoved() throws {
        try EngineTest.withTemporaryDirectory { dir in
            try Engine.open(at: dir, options: Self.options()).close()
            let names = [Format.segmentFileName(7), Format.segmentFileName(0xABC)]
            try EngineTest.writeFile(dir + "/" + names[0], [])
            try EngineTest.writeFile(dir + "/" + names[1], Array("LUCIDSEG garbage".utf8))
            let engine = try Engine.open(at: dir, options: Self.options())
            defer { try? engine.close() }
            #expect(Set(engine.recoveryReport.removedFiles).isSuperset(of: names), "\(engine.recoveryReport.removedFiles)")
            for name in names { #expect(!EngineTest.fileExists(dir + "/" + name)) }
        }
    }

    @Test("*.tmp files are removed on open and reported")
    func temporaryFilesAreRemoved() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options())
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "t", key: [1], value: [1])]))
            try engine.close()
            let names = ["MANIFEST-0.tmp", "checkpoint.tmp", "0000000000000009.seg.tmp"]
            for name in names { try EngineTest.writeFile(dir + "/" + name, [1, 2, 3]) }
            let reopened = try Engine.open(at: dir, options: Self.options())
            defer { try? reopened.close() }
            #expect(Set(reopened.recoveryReport.removedFiles) == Set(names), "\(reopened.recoveryReport.removedFiles)")
            for name in names { #expect(!EngineTest.fileExists(dir + "/" + name)) }
            #expect(try reopened.get([1], in: "t") == [1])
        }
    }

    @Test("an empty directory or a missing one with createIfMissing = false is notFound")
    func missingStoreIsNotFound() throws {
        try EngineTest.withTemporaryDirectory { dir in
            EngineTest.expectLucidError(.notFound, "empty directory") {
                try Engine.open(at: dir, options: Self.options(create: false))
            }
            #expect(try EngineTest.fileNames(dir).allSatisfy { $0 == Format.lockFileName }, "nothing is created")
            let missing = dir + "/does-not-exist"
            EngineTest.expectLucidError(.notFound, "missing directory") {
                try Engine.open(at: missing, options: Self.options(create: false))
            }
            #expect(!EngineTest.fileExists(missing), "the directory is not created")
            EngineTest.expectLucidError(.notFound, "salvage of a missing store") {
                try Engine.salvage(from: missing, to: dir + "/dest", options: Self.options())
            }
            // With creation allowed, the missing directory becomes a store.
            let engine = try Engine.open(at: missing, options: Self.options())
            #expect(engine.recoveryReport.created)
            try engine.close()
        }
    }
}
