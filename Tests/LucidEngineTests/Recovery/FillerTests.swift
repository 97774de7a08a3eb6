import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// FORMAT.md "Filler": small durable commits overwrite filler written ahead of the log's end; a crash leaves a
/// filler tail that every recovery mode reads as the clean end; roll and close cut it.
@Suite("Recovery: filler ahead of the log")
struct FillerTests {
    static func smallBatch(_ i: Int) -> WriteBatch {
        EngineTest.batch([.put(keyspace: "f", key: Array("key-\(i)".utf8), value: [UInt8](repeating: UInt8(i & 0xFF), count: 100))])
    }

    /// A store at `dir` with durable commits of `smallBatch(0 ..< count)`, still open.
    static func storeWithCommits(_ dir: String, count: Int) throws -> Engine {
        let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .always))
        for i in 0..<count { try engine.commitAndWait(smallBatch(i)) }
        return engine
    }

    static func checkAll(_ engine: Engine, count: Int, _ tag: String) throws {
        for i in 0..<count {
            #expect(try engine.get(Array("key-\(i)".utf8), in: "f") == [UInt8](repeating: UInt8(i & 0xFF), count: 100),
                    "\(tag) key-\(i)")
        }
    }

    @Test("small durable commits overwrite filler: the file stops growing while the log grows")
    func commitsOverwriteFiller() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .always))
            defer { try? engine.close() }
            try engine.commitAndWait(Self.smallBatch(0))
            let segment = try EngineTest.activeSegmentPath(dir)
            let size = try EngineTest.fileSize(segment)
            let logEnd = EngineTest.logLengths(engine, dir: dir)[segment]!
            #expect(size == logEnd + Format.defaultLogPreallocationBytes, "the first commit lays down the filler")
            for i in 1..<40 { try engine.commitAndWait(Self.smallBatch(i)) }
            let grown = EngineTest.logLengths(engine, dir: dir)[segment]!
            #expect(grown >= logEnd + 39 * Format.pageHeaderLength, "the log grew by a page a commit")
            #expect(try EngineTest.fileSize(segment) == size, "the file did not: the commits overwrote filler")
            let bytes = try EngineTest.readFile(segment)
            #expect(bytes[grown...].allSatisfy { $0 == Format.fillerByte }, "filler after the log")
            try engine.close()
            #expect(try EngineTest.fileSize(segment) == grown, "close cuts the filler")
        }
    }

    @Test("a crash image with a filler tail opens in every mode with nothing dropped, and salvage loses nothing")
    func crashImageWithFiller() throws {
        try EngineTest.withTemporaryDirectory { root in
            let dir = root + "/live"
            let engine = try Self.storeWithCommits(dir, count: 25)
            let segment = try EngineTest.activeSegmentPath(dir)
            #expect(try EngineTest.fileSize(segment) > EngineTest.logLengths(engine, dir: dir)[segment]!)
            // A crash image: the files as a kill -9 leaves them (every write here was synced).
            for name in ["strict", "pointInTime", "salvage-source"] { try EngineTest.copyDirectory(dir, to: root + "/" + name) }
            try engine.close()

            let strictDir = root + "/strict"
            let before = try EngineTest.directoryContents(strictDir, excluding: ["LOCK"])
            var options = EngineTest.options(recoveryMode: .strict)
            options.checkpointOnClose = false
            let strict = try Engine.open(at: strictDir, options: options)
            #expect(strict.recoveryReport.droppedBytes == 0 && strict.recoveryReport.truncatedFile == nil)
            try Self.checkAll(strict, count: 25, "strict")
            try strict.close()
            #expect(try EngineTest.directoryContents(strictDir, excluding: ["LOCK"]) == before,
                    "strict open and close change no file")

            let reopened = try Engine.open(at: root + "/pointInTime", options: EngineTest.options())
            #expect(reopened.recoveryReport.droppedBytes == 0)
            try Self.checkAll(reopened, count: 25, "pointInTime")
            #expect(try reopened.verify().ok)
            try reopened.close()

            let report = try Engine.salvage(from: root + "/salvage-source", to: root + "/salvaged",
                                            options: EngineTest.options())
            #expect(report.groupsLost == 0 && report.damagedRanges.isEmpty, "\(report)")
            #expect(report.groupsCopied == 25)
        }
    }

    @Test("salvage reads 0xFF as filler only at the end of the active segment; in a sealed one it is damage")
    func salvageSealedFillerIsDamage() throws {
        try EngineTest.withTemporaryDirectory { root in
            let dir = root + "/store"
            let engine = try Self.storeWithCommits(dir, count: 10)
            try engine.sealActiveSegment()
            for i in 10..<12 { try engine.commitAndWait(Self.smallBatch(i)) }
            try engine.close()
            let sealed = try EngineTest.segmentPaths(dir)[0]
            var bytes = try EngineTest.readFile(sealed)
            for i in Format.segmentHeaderLength..<bytes.count { bytes[i] = Format.fillerByte }
            try EngineTest.writeFile(sealed, bytes)
            let report = try Engine.salvage(from: dir, to: root + "/out", options: EngineTest.options())
            #expect(report.groupsCopied == 2)
            #expect(report.groupsLost >= 1 && report.damagedRanges.contains { $0.file == sealed }, "\(report)")
        }
    }

    @Test("a torn last group followed by filler is a dropped tail (strict refuses), not a clean end")
    func tornGroupBeforeFiller() throws {
        try EngineTest.withTemporaryDirectory { root in
            let dir = root + "/store"
            let engine = try Self.storeWithCommits(dir, count: 4)
            let segment = try EngineTest.activeSegmentPath(dir)
            let before = EngineTest.logLengths(engine, dir: dir)[segment]!
            var rng = EngineTest.SplitMix64(seed: 7)
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "f", key: Array("torn".utf8), value: rng.bytes(600))]))
            let after = EngineTest.logLengths(engine, dir: dir)[segment]!
            try EngineTest.copyDirectory(dir, to: root + "/image")
            try engine.close()
            // The image's last group is torn: its second half reads as the filler it overwrote.
            let image = root + "/image"
            let imageSegment = image + "/" + URL(fileURLWithPath: segment).lastPathComponent
            try EngineTest.overwrite(imageSegment, at: (before + after) / 2,
                                     with: [UInt8](repeating: Format.fillerByte, count: after - (before + after) / 2))
            try EngineTest.removeCheckpoints(image)
            let error = EngineTest.expectLucidError(.corruption, "strict") {
                try Engine.open(at: image, options: EngineTest.options(recoveryMode: .strict))
            }
            #expect(error?.offset == UInt64(before), "\(String(describing: error))")
            let reopened = try Engine.open(at: image, options: EngineTest.options())
            #expect(reopened.recoveryReport.droppedBytes > 0)
            #expect(reopened.recoveryReport.truncatedAtOffset == UInt64(before))
            #expect(try reopened.get(Array("torn".utf8), in: "f") == nil)
            try Self.checkAll(reopened, count: 4, "before the torn group")
            try reopened.close()
        }
    }

    @Test("a roll seals the segment at its exact length, also when the filler came from before a crash")
    func rollCutsFiller() throws {
        try EngineTest.withTemporaryDirectory { root in
            let dir = root + "/store"
            let options = EngineTest.options(sync: .always, segmentSize: 1 << 20)
            let engine = try Engine.open(at: dir, options: options)
            for i in 0..<10 { try engine.commitAndWait(Self.smallBatch(i)) }
            try EngineTest.copyDirectory(dir, to: root + "/image")
            try engine.close()

            // The crash image's filler is kept by recovery; the writer must still cut it when it rolls, even
            // before it has written anything (sealing for a compaction).
            let image = root + "/image"
            let reopened = try Engine.open(at: image, options: options)
            try reopened.sealActiveSegment()
            let first = try EngineTest.segmentPaths(image)[0]
            #expect(try EngineTest.fileSize(first) == EngineTest.logLengths(reopened, dir: image)[first]!,
                    "sealed at its exact length")
            var rng = EngineTest.SplitMix64(seed: 0xF177)
            let big = rng.bytes(200_000)   // incompressible: a few of them fill a 1 MiB segment
            var i = 10
            while try EngineTest.segmentPaths(image).count < 4 {
                try reopened.commitAndWait(EngineTest.batch([.put(keyspace: "f", key: Array("key-\(i)".utf8), value: big)]))
                try reopened.commitAndWait(Self.smallBatch(i + 1))
                i += 2
            }
            let sealed = try EngineTest.segmentPaths(image).dropLast()
            let lengths = EngineTest.logLengths(reopened, dir: image)
            for path in sealed {
                #expect(try EngineTest.fileSize(path) == lengths[path]!, "\(path) is sealed at its exact length")
            }
            try reopened.close()
            let again = try Engine.open(at: image, options: options)
            #expect(try again.verify().ok)
            #expect(try again.get(Array("key-3".utf8), in: "f") == [UInt8](repeating: 3, count: 100))
            try again.close()
        }
    }

    @Test("a filler write that fails half-way (disk full) fails no commit, and the roll still seals at the exact length")
    func failedFillerWrite() throws {
        let fs = FaultFileSystem()
        var options = EngineOptions()
        options.fileSystem = fs
        options.segmentSize = 1 << 20
        options.logger.logLevel = .critical
        let engine = try Engine.open(at: "/store", options: options)
        try engine.commitAndWait(Self.smallBatch(0))
        // A group larger than a quarter of the filler appends past it; the small commit after it writes filler,
        // whose first write fills the disk half-way.
        var rng = EngineTest.SplitMix64(seed: 0xF11E)
        try engine.commitAndWait(EngineTest.batch([.put(keyspace: "f", key: Array("big".utf8), value: rng.bytes(300_000))]))
        fs.failOperation([.write], nth: 2, errno: ENOSPC, shortWrite: true)
        for i in 1..<20 { try engine.commitAndWait(Self.smallBatch(i)) }
        try engine.sealActiveSegment()
        try engine.close()
        let reopened = try Engine.open(at: "/store", options: options)
        #expect(try reopened.verify().ok)
        try Self.checkAll(reopened, count: 20, "after the failed filler write")
        try reopened.close()
    }

    @Test("no filler when preallocation is off, for large groups, or without sync")
    func noFillerCases() throws {
        try EngineTest.withTemporaryDirectory { root in
            func fillerAfter(_ name: String, _ options: EngineOptions, _ batch: WriteBatch) throws -> Int {
                let dir = root + "/" + name
                let engine = try Engine.open(at: dir, options: options)
                defer { try? engine.close() }
                try engine.commitAndWait(batch)
                let segment = try EngineTest.activeSegmentPath(dir)
                return try EngineTest.fileSize(segment) - EngineTest.logLengths(engine, dir: dir)[segment]!
            }
            var off = EngineTest.options(sync: .always)
            off.logPreallocationBytes = 0
            let offFiller = try fillerAfter("off", off, Self.smallBatch(1))
            #expect(offFiller == 0)
            var rng = EngineTest.SplitMix64(seed: 0xF111)
            let large = EngineTest.batch((0..<200).map {
                .put(keyspace: "f", key: Array("big-\($0)".utf8), value: rng.bytes(400))
            })
            let largeFiller = try fillerAfter("large", EngineTest.options(sync: .always), large)
            #expect(largeFiller == 0, "a group over a quarter of the filler appends")
            let unsyncedFiller = try fillerAfter("unsynced", EngineTest.options(sync: .none), Self.smallBatch(1))
            #expect(unsyncedFiller == 0)
            let smallFiller = try fillerAfter("small", EngineTest.options(sync: .always), Self.smallBatch(1))
            #expect(smallFiller == Format.defaultLogPreallocationBytes, "the control")
            var odd = EngineOptions()
            odd.logPreallocationBytes = 100
            let error = EngineTest.expectLucidError(.invalidArgument, "100 bytes of filler") {
                try Engine.open(at: root + "/odd", options: odd)
            }
            #expect(error != nil)
        }
    }
}
