import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// Randomized model test of secondary indexes across compactions: puts of new keys, updates that change, add or
/// drop terms (several terms per index, none at all), deletions, multi-operation batches, seals of the active
/// segment, full compactions, compactions of random adjacent runs of sealed segments (most not from the start of
/// the log, so deletions must be kept), and reopens from the checkpoint, without it, with it damaged (both a full
/// scan of the log) and from a crash image. After every step every query API (equality, range, prefix, IN-set,
/// ascending and descending with offset/limit windows, counts, entry counts, AND/OR filters, records) is compared
/// with a model of key → (value, terms) (`IndexModelTests.differences`); after compactions and reopens also the
/// segment files against the manifest, the store statistics' index entry counts, and `verify()`.
///
/// The runs with `multiOutput` use 1 MiB segments (the least) and values large enough that compactions write
/// several output segments (which all replace the same stretch of log), and their adjacent-run compactions often
/// start at a later output of an earlier compaction (so the new output starts inside the stretch the outputs
/// before it replaced); such a run must show both. Some runs read segments through memory mappings
/// (`EngineOptions.memoryMappedReads`), before and after compactions and reopens, one of them with uncompressed pages
/// read in place once checked (`EngineOptions.pageCompression = .none`). Two runs compress records one by one
/// against their segment's dictionary (`.lz4Records`), one of them mapped (checked pages read in place).
@Suite("Secondary indexes: randomized model with compactions and reopens")
struct IndexCompactionModelTests {
    typealias Model = IndexModelTests.Model
    typealias Record = IndexModelTests.Record

    struct Run: Sendable, CustomTestStringConvertible {
        var name: String
        var seed: UInt64
        var steps: Int
        var valueSizes: ClosedRange<Int> = 0...160
        /// 1 MiB segments, and the run must show compactions with several outputs and compactions that start at a
        /// later output of an earlier one (values must be large enough: the pool holds about 120 keys a keyspace).
        var multiOutput = false
        /// `EngineOptions.memoryMappedReads`.
        var mapped = false
        /// `EngineOptions.pageCompression` (`.none` and `.lz4Records` with `mapped`: checked pages read in place).
        var compression: EngineOptions.PageCompression = .lz4
        var testDescription: String { "\(name) seed 0x\(String(seed, radix: 16))" }
    }

    static let runs: [Run] = [
        Run(name: "small values", seed: 0xC0_1DE0_0001, steps: 300),
        Run(name: "values past a page", seed: 0xC0_1DE0_0002, steps: 250, valueSizes: 1000...6000),
        Run(name: "mixed, mapped", seed: 0xC0_1DE0_0003, steps: 300, valueSizes: 0...2500, mapped: true),
        Run(name: "several outputs, mapped", seed: 0xC0_1DE0_0004, steps: 200, valueSizes: 8000...40000,
            multiOutput: true, mapped: true),
        Run(name: "mixed, mapped, uncompressed", seed: 0xC0_1DE0_0005, steps: 250, valueSizes: 0...2500, mapped: true,
            compression: .none),
        Run(name: "mixed, records compressed", seed: 0xC0_1DE0_0006, steps: 250, valueSizes: 0...2500,
            compression: .lz4Records),
        Run(name: "several outputs, mapped, records compressed", seed: 0xC0_1DE0_0007, steps: 200,
            valueSizes: 8000...40000, multiOutput: true, mapped: true, compression: .lz4Records),
    ]

    enum Reopen: String, CaseIterable {
        case checkpoint, withoutCheckpoint, damagedCheckpoint, crashImage
    }

    struct Counts: CustomStringConvertible {
        var seals = 0, fullCompactions = 0, partialCompactions = 0, notFromStart = 0, tombstonesKept = 0
        var recordsMoved = 0
        /// Compactions that wrote more than one output segment.
        var multiOutput = 0
        /// Partial compactions whose first input is a later output of an earlier compaction (a compacted segment
        /// that starts inside the stretch of log the one before it replaced), and those of them that also take
        /// in a segment after that stretch.
        var fromLaterOutput = 0, fromLaterOutputOnward = 0
        var reopens: [Reopen: Int] = [:]
        var description: String {
            "\(seals) seals, \(fullCompactions) full and \(partialCompactions) partial compactions "
                + "(\(notFromStart) not from the log start, \(tombstonesKept) deletions kept, \(recordsMoved) records "
                + "moved, \(multiOutput) with several outputs, \(fromLaterOutput) from a later output of an earlier "
                + "one, \(fromLaterOutputOnward) of them past its stretch), reopens: "
                + Reopen.allCases.map { "\($0.rawValue) \(reopens[$0] ?? 0)" }.joined(separator: ", ")
        }
    }

    @Test("random writes, seals, compactions and reopens keep every index query equal to the model",
          .heavy, arguments: runs)
    func randomCompactionsMatchModel(run: Run) throws {
        try IndexTest.withTemporaryDirectory { root in
            var rng = IndexTest.SplitMix64(seed: run.seed)
            // Queries draw from their own generator, so the operations do not depend on what was checked.
            var queryRng = IndexTest.SplitMix64(seed: run.seed ^ 0x5EED)
            let tag = "[\(run.name) seed 0x\(String(run.seed, radix: 16))]"
            var options = IndexTest.options()
            options.autoCompaction = nil
            options.memoryMappedReads = run.mapped
            options.pageCompression = run.compression
            if run.multiOutput { options.segmentSize = 1 << 20 }
            var generation = 0
            var dir = root + "/store-0"
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            let started = ContinuousClock.now

            var pool: [[UInt8]] = [[]]
            for _ in 0..<120 {
                pool.append((0..<rng.int(1...6)).map { _ in rng.pick([0x00, 0x01, 0x41, 0x42, 0x7F, 0x80, 0xFE, 0xFF]) })
            }
            pool = Array(Set(pool)).sorted { IndexTest.compareBytes($0, $1) < 0 }

            var model: Model = [:]
            var counts = Counts()

            /// Every query API against the model (`IndexModelTests.differences`; many queries per index, so not
            /// after every step in a debug build), or, when `quick`, `quickDifferences`.
            func check(_ when: String, thorough: Bool, quick: Bool = false) throws {
                let diffs = quick ? try Self.quickDifferences(engine, model, rng: &queryRng)
                    : try IndexModelTests.differences(engine, model, rng: &queryRng, thorough: thorough)
                #expect(diffs.isEmpty, "\(tag) \(when): \(diffs.count) differences: \(diffs.prefix(6).joined(separator: " | "))")
                if !diffs.isEmpty { throw IndexTest.Stop("\(tag) stopped at the first difference") }
            }

            /// Files against the manifest, statistics against the model, and verify.
            func checkStore(_ when: String) throws {
                let listed = Set(engine.core.currentState().manifest.segments.map { Format.segmentFileName($0.id) })
                let files = try FileManager.default.contentsOfDirectory(atPath: dir)
                let onDisk = Set(files.filter { $0.hasSuffix(".seg") })
                #expect(onDisk == listed, "\(tag) \(when): segment files \(onDisk.sorted()), manifest \(listed.sorted())")
                #expect(!files.contains { $0.hasSuffix(Format.temporarySuffix) }, "\(tag) \(when): leftover .tmp files")
                let stats = try engine.storeStatistics()
                for keyspace in IndexModelTests.keyspaces {
                    let entries = stats.keyspaces.first { $0.name == keyspace }?.indexes
                        .reduce(into: [String: Int]()) { $0[$1.name] = $1.entries } ?? [:]
                    for index in IndexModelTests.indexes {
                        let expected = IndexModelTests.modelEntries(model, keyspace, index).count
                        #expect(entries[index, default: 0] == expected,
                                "\(tag) \(when): statistics give \(keyspace).\(index) \(entries[index, default: 0]) entries, expected \(expected)")
                    }
                }
                let report = try engine.verify()
                #expect(report.ok, "\(tag) \(when): verify: \(report.problems.prefix(5).map(\.description).joined(separator: "; "))")
                if !report.ok || onDisk != listed { throw IndexTest.Stop("\(tag) stopped at \(when)") }
            }

            func reopen(_ how: Reopen, _ when: String) throws {
                let checkpoint = dir + "/" + Format.checkpointFileName
                switch how {
                case .checkpoint:
                    let sequence = engine.statistics.lastSequence
                    try engine.close()
                    // A clean close leaves a checkpoint (none when nothing was ever committed).
                    let exists = EngineTest.fileExists(checkpoint)
                    #expect(exists || sequence == 0, "\(tag) \(when): no checkpoint after a clean close")
                    engine = try Engine.open(at: dir, options: options)
                    #expect(engine.recoveryReport.checkpointUsed == exists, "\(tag) \(when): checkpoint not used")
                case .withoutCheckpoint:
                    try engine.close()
                    try? FileManager.default.removeItem(atPath: checkpoint)
                    engine = try Engine.open(at: dir, options: options)
                    #expect(!engine.recoveryReport.checkpointUsed, "\(tag) \(when): the checkpoint was removed")
                case .damagedCheckpoint:
                    try engine.close()
                    if EngineTest.fileExists(checkpoint) {
                        let size = try EngineTest.fileSize(checkpoint)
                        try EngineTest.flipBit(checkpoint, byte: rng.int(0..<size), bit: rng.int(0..<8))
                    }
                    engine = try Engine.open(at: dir, options: options)
                    #expect(!engine.recoveryReport.checkpointUsed, "\(tag) \(when): a damaged checkpoint was used")
                case .crashImage:
                    // What a crash of the idle, synced store would leave (the checkpoint of the last compaction,
                    // if any, and the log after it).
                    generation += 1
                    dir = try IndexTest.replaceWithCrashImage(engine, dir: dir, copy: root + "/store-\(generation)")
                    engine = try Engine.open(at: dir, options: options)
                }
                counts.reopens[how, default: 0] += 1
                #expect(engine.recoveryReport.droppedBytes == 0, "\(tag) \(when): reopen dropped bytes")
            }

            func sealedSegments() -> [Manifest.Segment] { engine.core.currentState().manifest.segments.filter(\.sealed) }
            func sealedIds() -> [UInt64] { sealedSegments().map(\.id) }

            func randomKey(_ keyspace: String, existing: Bool) -> [UInt8] {
                if existing, let keys = model[keyspace]?.keys, !keys.isEmpty, rng.chance(0.85) {
                    // Sorted: a dictionary's order changes from process to process, the run must not.
                    return keys.sorted { IndexTest.compareBytes($0, $1) < 0 }[rng.int(0..<keys.count)]
                }
                return rng.pick(pool)
            }

            // A first load, so that queries have something to find from the start.
            var load = WriteBatch()
            for key in pool where rng.chance(0.4) {
                let keyspace = rng.chance(0.8) ? "books" : "films"
                let value = rng.bytes(rng.int(run.valueSizes))
                let terms = IndexModelTests.randomTerms(&rng)
                load.put(value, forKey: key, in: keyspace, indexTerms: terms.map { IndexTerm(index: $0.index, value: $0.value) })
                model[keyspace, default: [:]][key] = Record(value: value, terms: terms)
            }
            try engine.commitAndWait(load)

            for step in 0..<run.steps {
                let keyspace = rng.chance(0.8) ? "books" : "films"
                var batch = WriteBatch()
                var next = model
                func addPut(_ keyspace: String, _ key: [UInt8]) {
                    let value = rng.bytes(rng.int(run.valueSizes))
                    let terms = IndexModelTests.randomTerms(&rng)
                    batch.put(value, forKey: key, in: keyspace,
                              indexTerms: terms.map { IndexTerm(index: $0.index, value: $0.value) })
                    next[keyspace, default: [:]][key] = Record(value: value, terms: terms)
                }
                func addDelete(_ keyspace: String, _ key: [UInt8]) {
                    batch.delete(key, in: keyspace)
                    next[keyspace]?[key] = nil
                }
                let roll = rng.int(0..<100)
                var what: String
                var storeCheck = false
                switch roll {
                case 0..<28:
                    what = "put"
                    addPut(keyspace, randomKey(keyspace, existing: false))
                case 28..<42:
                    what = "update"   // new value and new terms (possibly none) for a live key
                    addPut(keyspace, randomKey(keyspace, existing: true))
                case 42..<50:
                    what = "delete"
                    addDelete(keyspace, randomKey(keyspace, existing: true))
                case 50..<62:
                    what = "batch"
                    let first = randomKey(keyspace, existing: true)
                    for _ in 0..<rng.int(2...6) {
                        let ks = rng.chance(0.8) ? keyspace : rng.pick(IndexModelTests.keyspaces)
                        let key = rng.chance(0.3) ? first : randomKey(ks, existing: rng.chance(0.6))
                        if rng.chance(0.75) { addPut(ks, key) } else { addDelete(ks, key) }
                    }
                case 62..<76:
                    what = "seal"
                    try engine.sealActiveSegment()
                    counts.seals += 1
                case 76..<81:
                    what = "full compaction"
                    let sealed = sealedIds()
                    let summary = try engine.compactAndWait()
                    #expect(summary.inputSegments == sealed, "\(tag) step \(step): inputs \(summary.inputSegments)")
                    #expect(summary.tombstonesKept == 0, "\(tag) step \(step): a compaction of the log start keeps no deletion")
                    counts.fullCompactions += 1
                    counts.recordsMoved += summary.recordsMoved
                    if summary.outputSegments.count > 1 { counts.multiOutput += 1 }
                    storeCheck = true
                case 81..<90:
                    let segments = sealedSegments()
                    let sealed = segments.map(\.id)
                    guard !sealed.isEmpty else {
                        what = "nothing to compact"
                        break
                    }
                    // Later outputs of earlier compactions (none in runs whose compactions write one output, and
                    // then no draw, so those runs' sequences do not depend on this): half the time the run starts
                    // at one of them, so that its output starts inside the stretch the outputs before replaced;
                    // half of those times at the last of them, so that the run may also take in the log after it.
                    let laterOutputs = segments.indices.filter { $0 > 0 && Self.startsInside(segments[$0 - 1], segments[$0]) }
                    let lastOutputs = laterOutputs.filter { !laterOutputs.contains($0 + 1) }
                    // Otherwise mostly a run after the first segment: its deletions may hide values older segments
                    // hold.
                    let start = !laterOutputs.isEmpty && rng.chance(0.5) ? rng.pick(rng.chance(0.5) ? lastOutputs : laterOutputs)
                        : sealed.count > 1 && rng.chance(0.75) ? rng.int(1..<sealed.count) : 0
                    let end = rng.int((start + 1)...sealed.count)
                    let ids = Array(sealed[start..<end])
                    what = "compaction of \(ids.count) of \(sealed.count) sealed segments from position \(start)"
                    let summary = try engine.compactAndWait(CompactionOptions(segments: ids))
                    #expect(summary.inputSegments == ids, "\(tag) step \(step): inputs \(summary.inputSegments)")
                    counts.partialCompactions += 1
                    if start > 0 { counts.notFromStart += 1 }
                    if summary.outputSegments.count > 1 { counts.multiOutput += 1 }
                    if laterOutputs.contains(start) {
                        what += " (a later output of an earlier compaction)"
                        counts.fromLaterOutput += 1
                        if segments[start..<end].contains(where: { $0.endLSN > segments[start].endLSN }) {
                            counts.fromLaterOutputOnward += 1
                        }
                    }
                    counts.tombstonesKept += summary.tombstonesKept
                    counts.recordsMoved += summary.recordsMoved
                    storeCheck = true
                default:
                    let how = Reopen.allCases[rng.int(0..<Reopen.allCases.count)]
                    what = "reopen (\(how.rawValue))"
                    try reopen(how, "step \(step)")
                    storeCheck = true
                }
                if !batch.isEmpty {
                    try engine.commitAndWait(batch)
                    model = next
                }
                // Every step: the quick comparison; after one compaction or reopen in three, every query API; after
                // each of them the store.
                try check("after step \(step) (\(what))", thorough: false, quick: !storeCheck || step % 3 != 0)
                if storeCheck { try checkStore("after step \(step) (\(what))") }
            }

            // The end: everything compacted, then every way of reopening.
            try engine.sealActiveSegment()
            if try engine.compactAndWait().outputSegments.count > 1 { counts.multiOutput += 1 }
            try check("after the final compaction", thorough: true)
            try checkStore("after the final compaction")
            for how in Reopen.allCases {
                try reopen(how, "final \(how.rawValue)")
                try check("after the final reopen (\(how.rawValue))", thorough: true)
                try checkStore("after the final reopen (\(how.rawValue))")
            }
            print("\(tag) \(run.steps) steps in \(crashElapsedMilliseconds(since: started)) ms: \(counts); "
                  + IndexModelTests.keyspaces.map { "\($0) \(model[$0]?.count ?? 0) keys" }.joined(separator: ", "))
            #expect(counts.notFromStart > 0 && counts.tombstonesKept > 0 && counts.fullCompactions > 0,
                    "\(tag) the run should compact runs that keep deletions, and everything: \(counts)")
            #expect(Reopen.allCases.allSatisfy { (counts.reopens[$0] ?? 0) > 1 }, "\(tag) reopens: \(counts)")
            if run.multiOutput {
                #expect(counts.multiOutput > 0 && counts.fromLaterOutputOnward > 0,
                        "\(tag) the run should write compactions with several outputs, and compact a later output of one with the segments after it: \(counts)")
            }
        }
    }

    /// True when compacted segment `next`, which follows `previous` in the log, starts inside the stretch of log
    /// `previous` (compacted too) replaced: a later output of the same compaction, or the output of compacting
    /// such a segment with what follows it.
    static func startsInside(_ previous: Manifest.Segment, _ next: Manifest.Segment) -> Bool {
        previous.kind == .compacted && next.kind == .compacted && next.firstLSN < previous.endLSN
    }

    /// A cheap comparison for every step: each index's whole content in both orders and its entry count, one
    /// random condition with a random offset/limit window (keys, entries and count), one random AND/OR filter,
    /// and the record counts.
    static func quickDifferences(_ engine: Engine, _ model: Model, rng: inout IndexTest.SplitMix64) throws -> [String] {
        var diffs: [String] = []
        let snapshot = engine.snapshot()
        for keyspace in IndexModelTests.keyspaces {
            if snapshot.count(in: keyspace) != (model[keyspace]?.count ?? 0) {
                diffs.append("\(keyspace): count \(snapshot.count(in: keyspace)), expected \(model[keyspace]?.count ?? 0)")
            }
            for index in IndexModelTests.indexes {
                let all = IndexModelTests.modelEntries(model, keyspace, index)
                for reverse in [false, true] {
                    let query = IndexQuery(keyspace: keyspace, index: index, condition: .any, reverse: reverse)
                    let expected = reverse ? Array(all.reversed()) : all
                    if !IndexModelTests.entriesEqual(snapshot.entries(matching: query), expected) {
                        diffs.append("\(keyspace).\(index) all entries (reverse \(reverse)) differ from the model")
                    }
                }
                if snapshot.entryCount(keyspace: keyspace, index: index) != all.count {
                    diffs.append("\(keyspace).\(index): entryCount \(snapshot.entryCount(keyspace: keyspace, index: index)), "
                                 + "expected \(all.count)")
                }
                let condition = rng.pick(IndexModelTests.conditions(&rng, index))
                let reverse = rng.chance(0.5)
                let matching = IndexModelTests.ordered(all, condition, reverse: reverse)
                let offset = rng.int(0...3), limit: Int? = rng.chance(0.3) ? nil : rng.int(0...12)
                let query = IndexQuery(keyspace: keyspace, index: index, condition: condition, reverse: reverse,
                                       offset: offset, limit: limit)
                let label = "\(keyspace).\(index) \(condition) reverse \(reverse) offset \(offset) limit \(String(describing: limit))"
                if snapshot.keys(matching: query) != IndexModelTests.windowKeys(matching, offset: offset, limit: limit) {
                    diffs.append("\(label): keys differ from the model")
                }
                if !IndexModelTests.entriesEqual(snapshot.entries(matching: query),
                                                 IndexModelTests.windowEntries(matching, offset: offset, limit: limit)) {
                    diffs.append("\(label): entries differ from the model")
                }
                let count = IndexModelTests.windowKeys(IndexModelTests.ordered(all, condition, reverse: false),
                                                       offset: 0, limit: nil).count
                if snapshot.count(keyspace: keyspace, index: index, condition: condition) != count {
                    diffs.append("\(label): count differs from the model (\(count))")
                }
            }
            let filter = IndexModelTests.randomFilter(&rng, depth: 2)
            let expected = IndexModelTests.filterKeys(model, keyspace, filter).sorted { IndexTest.compareBytes($0, $1) < 0 }
            if snapshot.keys(in: keyspace, where: filter) != expected {
                diffs.append("\(keyspace) keys(where: \(filter)) differ from the model")
            }
        }
        return diffs
    }
}
