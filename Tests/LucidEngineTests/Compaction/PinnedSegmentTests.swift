import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// engine-notes §9.8: a long-lived snapshot pins the segments compaction removes (their files stay open, their
/// space taken); the engine shows how many, how large and for how long, and warns once per segment past
/// ``EngineOptions/pinnedSegmentWarningAge``.
@Suite("Pinned segments")
struct PinnedSegmentTests {
    /// A store whose sealed segments hold some overwritten records, ready to compact; returns the sealed
    /// segments' ids and their total length.
    static func prepare(_ engine: Engine) throws -> (ids: [UInt64], bytes: UInt64) {
        try CheckpointTests.populate(engine, rounds: 20, seed: 11)
        try engine.sealActiveSegment()
        let sealed = engine.core.currentState().manifest.segments.filter(\.sealed)
        return (sealed.map(\.id), sealed.reduce(0) { $0 + $1.sealedLength })
    }

    /// Open descriptors of this process on unlinked files of `directory` (`/proc/self/fd` links ending in
    /// "(deleted)"): the disk space a pinned segment keeps.
    static func unlinkedDescriptors(in directory: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)
            else { return false }
            return target.hasPrefix(directory + "/") && target.hasSuffix("(deleted)")
        }.count
    }

    /// Polls `engine.statistics` until `done` holds (a released snapshot's last references may be dropped on
    /// another thread), for at most 5 s; returns the last statistics read.
    static func statistics(of engine: Engine, until done: (EngineStatistics) -> Bool) -> EngineStatistics {
        var stats = engine.statistics
        _ = eventually {
            stats = engine.statistics
            return done(stats)
        }
        return stats
    }

    /// Whether `condition` holds within 5 s (checked every 10 ms).
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    @Test("a snapshot taken before a compaction pins its inputs, shown in the statistics until it is released")
    func snapshotPinsInputs() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "pinned")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: CompactionTests.options)
        let (inputs, inputBytes) = try Self.prepare(engine)
        #expect(inputs.count >= 2)
        #expect(engine.statistics.pinnedSegments == 0)
        #expect(engine.statistics.oldestPinnedSegmentAge == nil)

        do {
            let snapshot = engine.snapshot()
            let before = try snapshot.scan(in: "books")
            _ = try engine.compactAndWait()
            let stats = engine.statistics
            #expect(stats.pinnedSegments == inputs.count)
            #expect(stats.pinnedSegmentBytes == inputBytes)
            #expect(stats.oldestPinnedSegmentAge.map { $0 >= .zero && $0 < .seconds(60) } == true)
            #expect(Self.unlinkedDescriptors(in: directory) == inputs.count)
            // Still readable through the unlinked files.
            for id in inputs { engine.core.cache.removeAll(segment: id) }
            #expect(try snapshot.scan(in: "books") == before)
        }

        let released = Self.statistics(of: engine) { $0.pinnedSegments == 0 }
        #expect(released.pinnedSegments == 0)
        #expect(released.pinnedSegmentBytes == 0)
        #expect(released.oldestPinnedSegmentAge == nil)
        // A weak reference reads nil once deinitialization starts, a moment before the file closes.
        #expect(Self.eventually { Self.unlinkedDescriptors(in: directory) == 0 })
        try engine.close()
    }

    @Test("a compaction with no snapshot held pins nothing")
    func nothingPinnedWithoutSnapshots() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "pinned-none")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: CompactionTests.options)
        _ = try Self.prepare(engine)
        _ = try engine.compactAndWait()
        let stats = Self.statistics(of: engine) { $0.pinnedSegments == 0 }
        #expect(stats.pinnedSegments == 0)
        #expect(Self.eventually { Self.unlinkedDescriptors(in: directory) == 0 })
        try engine.close()
    }

    @Test("a segment pinned past the warning age is logged once, by the writer or by a statistics read")
    func warningOncePerSegment() throws {
        for byWriter in [false, true] {
            let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "pinned-warn")
            defer { try? CorruptionHelpers.removeDirectory(directory) }
            let log = CapturedLog()
            var options = CompactionTests.options
            options.pinnedSegmentWarningAge = .milliseconds(50)
            options.logger = log.logger
            let engine = try Engine.open(at: directory, options: options)
            let (inputs, _) = try Self.prepare(engine)
            let snapshot = engine.snapshot()
            _ = try engine.compactAndWait()
            #expect(log.warnings(containing: "snapshot still holds").isEmpty)   // not yet 50 ms old

            Thread.sleep(forTimeInterval: 0.1)
            if byWriter {
                _ = try engine.commitAndWait(CompactionTests.put("v", "after"))
            } else {
                _ = engine.statistics
            }
            let warned = log.warnings(containing: "snapshot still holds")
            #expect(warned.count == inputs.count, "by writer: \(byWriter)")
            for id in inputs {
                #expect(warned.contains { $0.contains(Format.segmentFileName(id)) }, "segment \(id) named")
            }
            // Once each: neither more commits nor statistics reads warn again.
            _ = try engine.commitAndWait(CompactionTests.put("w", "again"))
            _ = engine.statistics
            #expect(log.warnings(containing: "snapshot still holds").count == inputs.count)
            withExtendedLifetime(snapshot) {}
            try engine.close()
        }
    }

    @Test("a warning age that is not positive is refused")
    func warningAgeValidated() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "pinned-option")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        var options = CompactionTests.options
        options.pinnedSegmentWarningAge = .zero
        #expect(throws: LucidError.self) { try Engine.open(at: directory, options: options) }
    }
}
