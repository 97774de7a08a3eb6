// FuzzRecovery's store: written once per process, then damaged by each input (shared
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

/// A small store written by the engine (built once per process, on a `FaultFileSystem`): a sealed segment and an
/// active one, both manifest slots, commits 1...10 synced (`SyncMode.always`) and 11...14 written with
/// `SyncMode.none` and never synced (the image is taken with `crash(policy: .keepAll)`).
public final class RecoveryFixture: Sendable {
    public static let directory = "/store"
    public static let shared: RecoveryFixture = {
        do { return try RecoveryFixture() } catch { fatalError("building the recovery fixture failed: \(error)") }
    }()

    let image: FaultFileSystem
    /// Model after commit i (index 0: empty store).
    let states: [StoreModel]
    /// Paths: sealed segment, active segment, MANIFEST-0, MANIFEST-1, and CHECKPOINT when the engine wrote one
    /// (it covers commits 1...10: written when the synced session closed).
    let paths: [String]
    static let checkpointName = "CHECKPOINT"
    let original: [[UInt8]]
    /// End offset in the active segment of commit i, for every commit whose group is in it; the last commit of
    /// the sealed segment maps to the header length.
    let activeEnds: [Int: Int]
    let firstActiveCommit: Int
    let lastSyncedCommit: Int
    var lastSyncedEnd: Int { activeEnds[lastSyncedCommit]! }
    /// Index in `paths` of the manifest slot with the newest version.
    let newestSlot: Int
    let activeSalt: UInt32

    /// Every (keyspace, key, version) the store was ever given.
    let written: Set<String>

    init() throws {
        let fs = FaultFileSystem()
        let dir = Self.directory
        var model = StoreModel()
        var states = [model]
        var written = Set<String>()
        var version = 0
        var ends: [Int: Int] = [:]

        func commit(_ engine: Engine, _ ops: [(String, String, Int, Bool)]) throws {
            // (keyspace, key, value size or -1 for a delete, compressible)
            var batch = WriteBatch()
            for (ks, keyString, size, compressible) in ops {
                let key = Array(keyString.utf8)
                if size < 0 {
                    batch.delete(key, in: ks)
                    model[ks]?[key] = nil
                    if model[ks]?.isEmpty == true { model[ks] = nil }
                } else {
                    version += 1
                    let v = FuzzHelpers.value(ks, key, version: version, size: size, compressible: compressible)
                    batch.put(v, forKey: key, in: ks,
                              indexTerms: size % 3 == 0 ? [IndexTerm(index: "by-size", value: .int(Int64(size)))] : [])
                    model[ks, default: [:]][key] = v
                    written.insert("\(ks)/\(keyString)/\(version)")
                }
            }
            try engine.commitAndWait(batch)
            states.append(model)
        }
        /// Where the log ends in the active segment: the log's bytes less the sealed segments' (while the engine
        /// is open, the file may go on with filler after its last group, FORMAT.md "Filler").
        func activeSize(_ engine: Engine) throws -> Int {
            let segments = try fs.contentsOfDirectory(at: dir).filter { $0.hasSuffix(".seg") }.sorted()
            let sealed = try segments.dropLast().reduce(0) { $0 + (try FuzzHelpers.readFile(fs, dir + "/" + $1)!.count) }
            return Int(engine.statistics.totalBytes) - sealed
        }

        var engine: Engine? = try Engine.open(at: dir, options: FuzzHelpers.options(fs))
        try commit(engine!, [("a", "k1", 10, false), ("a", "k2", 20, true), ("b", "k1", 30, false)])
        try commit(engine!, [("a", "k3", 6000, false)])                      // a page of its own
        try commit(engine!, [("a", "k2", -1, false), ("a", "k1", 40, false)])
        try commit(engine!, (0..<20).map { ("c", "m\($0)", 300, true) })      // a multi-page group
        try commit(engine!, [("big", "k", 1 << 20, false)])                  // passes 1 MiB: rolls
        let firstActive = states.count
        ends[firstActive - 1] = FuzzingSupport.segmentHeaderLength
        try commit(engine!, [("a", "k4", 50, false), ("b", "k1", -1, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, (0..<16).map { ("d", "n\($0)", 400, false) })     // multi-page, incompressible
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("a", "k1", 5000, true)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("c", "m3", -1, false), ("c", "m4", 70, false), ("e", "", 0, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("a", "k5", 80, false)])
        ends[states.count - 1] = try activeSize(engine!)
        let lastSynced = states.count - 1
        try engine!.close()
        engine = nil

        // Commits written but never synced: their pages carry syncedLSN = the last synced page.
        engine = try Engine.open(at: dir, options: FuzzHelpers.options(fs, sync: .none))
        try commit(engine!, [("a", "k6", 90, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, (0..<12).map { ("f", "p\($0)", 500, $0 % 2 == 0) })
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("a", "k1", -1, false), ("a", "k7", 100, false)])
        ends[states.count - 1] = try activeSize(engine!)
        try commit(engine!, [("b", "k2", 110, true)])
        ends[states.count - 1] = try activeSize(engine!)
        let image = fs.crash(policy: .keepAll)
        self.image = image
        try engine!.close()

        let segments = try image.contentsOfDirectory(at: dir).filter { $0.hasSuffix(".seg") }.sorted()
        guard segments.count == 2 else { throw FuzzCheckFailure("fixture: expected 2 segments, found \(segments)") }
        var paths = [dir + "/" + segments[0], dir + "/" + segments[1], dir + "/MANIFEST-0", dir + "/MANIFEST-1"]
        if image.fileExists(at: dir + "/" + Self.checkpointName) { paths.append(dir + "/" + Self.checkpointName) }
        let original = try paths.map { try FuzzHelpers.readFile(image, $0)! }
        self.paths = paths
        self.original = original
        self.states = states
        self.written = written
        activeEnds = ends
        firstActiveCommit = firstActive
        lastSyncedCommit = lastSynced
        newestSlot = FuzzHelpers.le64(original[2], 16) > FuzzHelpers.le64(original[3], 16) ? 2 : 3
        guard let salt = FuzzingSupport.pageSalt(ofSegmentHeader: original[1]) else {
            throw FuzzCheckFailure("fixture: active segment header does not decode")
        }
        activeSalt = salt
        guard ends[states.count - 1] == original[1].count else {
            throw FuzzCheckFailure("fixture: active segment is \(original[1].count) bytes, commits end at \(ends[states.count - 1]!)")
        }
    }

    /// The last commit whose group ends at or before `offset` of the active segment.
    func lastCommit(endingBy offset: Int) -> Int {
        activeEnds.filter { $0.value <= offset }.keys.max() ?? (firstActiveCommit - 1)
    }
}
