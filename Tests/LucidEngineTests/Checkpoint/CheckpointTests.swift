import Foundation
import Testing
import LucidEngineTestSupport
@_spi(Fuzzing) @testable import LucidEngine

/// A checkpoint only accelerates open: whatever happens to it, open gives the same state as a full scan.
@Suite("Checkpoints")
struct CheckpointTests {
    struct Dump: Equatable {
        var records: [String: [KeyValue]] = [:]
        var indexes: [String: [IndexEntry]] = [:]
        var sequence: UInt64 = 0
    }

    static func dump(_ engine: Engine) throws -> Dump {
        let snapshot = engine.snapshot()
        var dump = Dump(sequence: snapshot.sequence)
        for keyspace in snapshot.keyspaces() {
            dump.records[keyspace] = try snapshot.scan(in: keyspace)
            for index in snapshot.indexNames(in: keyspace) {
                dump.indexes["\(keyspace)/\(index)"] = snapshot.entries(
                    matching: IndexQuery(keyspace: keyspace, index: index, condition: .any))
            }
        }
        return dump
    }

    static var options: EngineOptions {
        var options = EngineOptions()
        options.segmentSize = 1 << 20
        options.pageSize = 4096
        options.syncMode = .none
        return options
    }

    /// Writes several segments' worth of puts, overwrites and deletes with index terms.
    static func populate(_ engine: Engine, rounds: Int, seed: Int) throws {
        for round in 0..<rounds {
            var batch = WriteBatch()
            for i in 0..<200 {
                let n = (i * 7919 + round * 104_729 + seed) % 3000
                let key = Array("k\(n)".utf8)
                if (i + round) % 11 == 0 {
                    batch.delete(key, in: "books")
                } else {
                    // Incompressible bytes, so that the log really rolls segments.
                    var state = UInt64(n * 1_000_003 + round)
                    let value = (0..<(200 + n % 600)).map { _ -> UInt8 in
                        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        return UInt8(truncatingIfNeeded: state >> 56)
                    }
                    batch.put(value, forKey: key, in: n % 3 == 0 ? "authors" : "books", indexTerms: [
                        IndexTerm(index: "genre", value: .string(["sf", "poetry", "history"][n % 3])),
                        IndexTerm(index: "rating", value: .double(Double(n % 10) / 2)),
                    ])
                }
            }
            try engine.commitAndWait(batch)
        }
    }

    /// A store closed cleanly (so with a checkpoint), and the state a full scan gives.
    static func makeStore() throws -> (directory: String, reference: Dump) {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "ckpt")
        let engine = try Engine.open(at: directory, options: options)
        try populate(engine, rounds: 40, seed: 1)
        #expect(engine.statistics.segments > 2)
        try engine.close()
        #expect(FileManager.default.fileExists(atPath: directory + "/CHECKPOINT"))
        let scanned = try CorruptionHelpers.makeTemporaryDirectory(prefix: "ckpt-scan")
        defer { try? CorruptionHelpers.removeDirectory(scanned) }
        try CorruptionHelpers.copyDirectory(from: directory, to: scanned)
        try FileManager.default.removeItem(atPath: scanned + "/CHECKPOINT")
        let fullScan = try Engine.open(at: scanned, options: options)
        #expect(!fullScan.recoveryReport.checkpointUsed)
        let reference = try dump(fullScan)
        #expect(try fullScan.verify().ok)
        try fullScan.close()
        return (directory, reference)
    }

    /// Opens a copy of `directory` after `damage`, and checks it equals `reference`.
    static func openDamaged(_ directory: String, reference: Dump, expectCheckpoint: Bool, _ tag: String,
                            damage: (String) throws -> Void) throws {
        let copy = try CorruptionHelpers.makeTemporaryDirectory(prefix: "ckpt-copy")
        defer { try? CorruptionHelpers.removeDirectory(copy) }
        try CorruptionHelpers.copyDirectory(from: directory, to: copy)
        try damage(copy + "/CHECKPOINT")
        let engine = try Engine.open(at: copy, options: options)
        #expect(engine.recoveryReport.checkpointUsed == expectCheckpoint, "\(tag)")
        #expect(try dump(engine) == reference, "\(tag)")
        #expect(try engine.verify().ok, "\(tag)")
        try engine.close()
    }

    @Test("an intact checkpoint is used and gives the scanned state")
    func intactCheckpoint() throws {
        let (directory, reference) = try Self.makeStore()
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        try Self.openDamaged(directory, reference: reference, expectCheckpoint: true, "intact") { _ in }
    }

    @Test("truncated, bit-flipped, deleted and foreign checkpoints fall back to a scan with the same state", .heavy)
    func damagedCheckpoints() throws {
        let (directory, reference) = try Self.makeStore()
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let size = try CorruptionHelpers.fileSize(path: directory + "/CHECKPOINT")
        for cut in [0, 1, 11, 12, 60, size / 3, size / 2, size - 13, size - 1] {
            try Self.openDamaged(directory, reference: reference, expectCheckpoint: false, "truncated to \(cut)") {
                try CorruptionHelpers.truncate(path: $0, to: cut)
            }
        }
        for offset in [0, 9, 20, 40, 70, size / 4, size / 2, size - 5, size - 1] {
            try Self.openDamaged(directory, reference: reference, expectCheckpoint: false, "flip at \(offset)") {
                try CorruptionHelpers.flipBit(path: $0, offset: offset, bit: Int(offset % 8))
            }
        }
        try Self.openDamaged(directory, reference: reference, expectCheckpoint: false, "deleted") {
            try FileManager.default.removeItem(atPath: $0)
        }
        // A checkpoint of another store, with the same segment ids but other salts.
        let other = try CorruptionHelpers.makeTemporaryDirectory(prefix: "ckpt-other")
        defer { try? CorruptionHelpers.removeDirectory(other) }
        let foreign = try Engine.open(at: other, options: Self.options)
        try Self.populate(foreign, rounds: 40, seed: 2)
        try foreign.close()
        try Self.openDamaged(directory, reference: reference, expectCheckpoint: false, "foreign") {
            try FileManager.default.removeItem(atPath: $0)
            try FileManager.default.copyItem(atPath: other + "/CHECKPOINT", toPath: $0)
        }
        // Garbage with a valid-looking name.
        try Self.openDamaged(directory, reference: reference, expectCheckpoint: false, "garbage") {
            try CorruptionHelpers.writeFile(path: $0, bytes: (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        }
    }

    @Test("a checkpoint of another version (its CRC valid) is ignored: open scans the log and writes a current one",
          .heavy)
    func otherVersionIgnored() throws {
        let (directory, reference) = try Self.makeStore()
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        for version in [UInt32(2), Format.checkpointVersion - 1, Format.checkpointVersion + 1] {
            try Self.openDamaged(directory, reference: reference, expectCheckpoint: false, "version \(version)") { path in
                var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
                withUnsafeBytes(of: version.littleEndian) { bytes.replaceSubrange(8..<12, with: $0) }
                try CorruptionHelpers.writeFile(path: path, bytes: FuzzingSupport.withValidCheckpointChecksum(bytes))
            }
        }
    }

    @Test("checkpoint entries are prefix-coded: an index of few terms costs little more than the keys' unshared bytes")
    func prefixCoded() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "ckpt-size")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: Self.options)
        var random = EngineTest.SplitMix64(seed: 5)
        let count = 20_000
        var batch = WriteBatch()
        for _ in 0..<count {
            var key = [UInt8](repeating: 0, count: 16)
            for i in 0..<16 { key[i] = UInt8(truncatingIfNeeded: random.next()) }
            batch.put([1, 2, 3], forKey: key, in: "ks",
                      indexTerms: [IndexTerm(index: "genre", value: .string(["scifi", "essay", "poetry"][Int(random.next() % 3)]))])
        }
        _ = try engine.commitAndWait(batch)
        try engine.close()   // writes the checkpoint
        let size = try CorruptionHelpers.fileSize(path: directory + "/CHECKPOINT")
        // Stored in full (version 2), a record cost ~30 bytes and its index entry ~26 more. Prefix-coded: a key
        // shares ~2 bytes with its neighbour; an index entry shares its term and ~2 bytes of its key (version 3:
        // ~43 bytes a record). Version 4 also drops the key lengths, term lengths and segment numbers that repeat
        // the previous entry's: 38.8 bytes a record here.
        #expect(size < count * 40, "\(size) bytes for \(count) records with one index")
        let reopened = try Engine.open(at: directory, options: Self.options)
        defer { try? reopened.close() }
        #expect(reopened.recoveryReport.checkpointUsed)
        #expect(try reopened.verify().ok)
        #expect(reopened.snapshot().entries(matching: IndexQuery(keyspace: "ks", index: "genre", condition: .any)).count == count)
    }

    @Test("a stale checkpoint covers a prefix; the log after it is replayed")
    func staleCheckpoint() throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "ckpt-stale")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        var engine = try Engine.open(at: directory, options: Self.options)
        try Self.populate(engine, rounds: 10, seed: 3)
        try engine.close()
        let stale = try CorruptionHelpers.readFile(path: directory + "/CHECKPOINT")
        engine = try Engine.open(at: directory, options: Self.options)
        #expect(engine.recoveryReport.checkpointUsed)
        try Self.populate(engine, rounds: 30, seed: 4)
        let expected = try Self.dump(engine)
        try engine.close()
        // Put the old checkpoint back, as if the last close had crashed before writing its own.
        try CorruptionHelpers.writeFile(path: directory + "/CHECKPOINT", bytes: stale)
        engine = try Engine.open(at: directory, options: Self.options)
        #expect(engine.recoveryReport.checkpointUsed)
        #expect(engine.recoveryReport.recordsReplayed > 0)
        #expect(try Self.dump(engine) == expected)
        #expect(try engine.verify().ok)
        try engine.close()
    }

    @Test("a crash after a checkpoint keeps every commit made after it")
    func crashAfterCheckpoint() throws {
        let fs = FaultFileSystem()
        var options = Self.options
        options.fileSystem = fs
        options.syncMode = .always
        var engine = try Engine.open(at: "/store", options: options)
        try Self.populate(engine, rounds: 10, seed: 5)
        try engine.close()
        engine = try Engine.open(at: "/store", options: options)
        try Self.populate(engine, rounds: 5, seed: 6)
        let expected = try Self.dump(engine)
        // Power loss without close: the checkpoint on disk is the older one.
        let crashed = fs.crash(policy: .dropUnsynced)
        options.fileSystem = crashed
        let reopened = try Engine.open(at: "/store", options: options)
        #expect(reopened.recoveryReport.checkpointUsed)
        #expect(try Self.dump(reopened) == expected)
        #expect(try reopened.verify().ok)
        try reopened.close()
        _ = engine
    }
}
