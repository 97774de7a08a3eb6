import Foundation
import Testing
@testable import LucidEngine

/// Randomized model test of secondary indexes: random puts with terms (several per index, duplicates, none),
/// overwrites, deletes, multi-operation batches (the same key several times in one batch), rejected batches and
/// reopens (clean, without the checkpoint, and from a crash image), checked against a model of key → (value,
/// terms) through every query API, in both directions and with offset/limit windows, ending with `verify()`.
///
/// The model's order is the documented order (`IndexTest.compare`), not the encoding.
@Suite("Secondary indexes: randomized model")
struct IndexModelTests {
    struct Run: Sendable, CustomTestStringConvertible {
        var name: String
        var seed: UInt64
        var steps: Int
        var sync: EngineOptions.SyncMode = .none
        var segmentSize: UInt64? = nil
        var pageCacheBytes: Int? = nil
        /// Value sizes of the puts.
        var valueSizes: ClosedRange<Int> = 0...48
        var checkEvery = 60
        var reopenEvery = 150
        var minimumSegments = 1
        var testDescription: String { "\(name) seed 0x\(String(seed, radix: 16))" }
    }

    static let runs: [Run] = [
        Run(name: "mixed", seed: 0x1DE0_0001, steps: 700, checkEvery: 70, reopenEvery: 140),
        Run(name: "durable", seed: 0x1DE0_0002, steps: 150, sync: .always, checkEvery: 40, reopenEvery: 50),
        // 1 MiB segments and values of a few KiB (larger than the 4 KiB pages): the store rolls several times, so
        // replaced records' terms are read back from sealed segments by the writer, by replay and by verify.
        Run(name: "rolling", seed: 0x1DE0_0003, steps: 650, segmentSize: 1 << 20, valueSizes: 2000...7000,
            checkEvery: 80, reopenEvery: 130, minimumSegments: 3),
        // No page cache: every read of a replaced record's terms goes to disk.
        Run(name: "uncached", seed: 0x1DE0_0004, steps: 600, segmentSize: 1 << 20, pageCacheBytes: 0,
            valueSizes: 500...4000, checkEvery: 70, reopenEvery: 120, minimumSegments: 2),
    ]

    static let keyspaces = ["books", "films"]
    static let indexes = ["genre", "rating", "tags", "year"]
    /// Query targets: the real indexes and one that never holds an entry.
    static let queriedIndexes = indexes + ["missing"]
    static let genres = ["sf", "sfx", "sf\0x", "sf\0", "fantasy", "", "horror", "日本", "ß"]
    static let tags = ["a", "b", "b\0", "ab", "c", "long-tag", "z", "\0"]
    static let prefixes = ["", "s", "sf", "sf\0", "sf\0x", "f", "h", "日", "a", "b", "b\0", "zz", "\0", "ß"]

    // MARK: Model

    struct Term { var index: String; var value: IndexValue }
    struct Record { var value: [UInt8]; var terms: [Term] }
    /// keyspace → key → record.
    typealias Model = [String: [[UInt8]: Record]]

    struct Entry { var value: IndexValue; var key: [UInt8] }

    /// The entries of one index in (term, key) order; a record's equal terms collapse into one entry.
    static func modelEntries(_ model: Model, _ keyspace: String, _ index: String) -> [Entry] {
        var all: [Entry] = []
        for (key, record) in model[keyspace] ?? [:] {
            for term in record.terms where term.index == index { all.append(Entry(value: term.value, key: key)) }
        }
        all.sort { a, b in
            let c = IndexTest.compare(a.value, b.value)
            return c != 0 ? c < 0 : IndexTest.compareBytes(a.key, b.key) < 0
        }
        var out: [Entry] = []
        for e in all {
            if let last = out.last, last.key == e.key, IndexTest.compare(last.value, e.value) == 0 { continue }
            out.append(e)
        }
        return out
    }

    static func inBound(_ v: IndexValue, lower: IndexBound?, upper: IndexBound?) -> Bool {
        switch lower {
        case .none: break
        case .included(let b): if IndexTest.compare(v, b) < 0 { return false }
        case .excluded(let b): if IndexTest.compare(v, b) <= 0 { return false }
        }
        switch upper {
        case .none: break
        case .included(let b): if IndexTest.compare(v, b) > 0 { return false }
        case .excluded(let b): if IndexTest.compare(v, b) >= 0 { return false }
        }
        return true
    }

    static func matches(_ v: IndexValue, _ condition: IndexCondition) -> Bool {
        switch condition {
        case .equals(let x): return IndexTest.compare(v, x) == 0
        case .oneOf(let xs): return xs.contains { IndexTest.compare(v, $0) == 0 }
        case .stringPrefix(let p):
            guard case .string(let s) = v else { return false }
            return Array(s.utf8).starts(with: Array(p.utf8))
        case .any: return true
        case .range(let lower, let upper): return inBound(v, lower: lower, upper: upper)
        }
    }

    /// Matching entries in query order.
    static func ordered(_ entries: [Entry], _ condition: IndexCondition, reverse: Bool) -> [Entry] {
        let matching = entries.filter { matches($0.value, condition) }
        return reverse ? matching.reversed() : matching
    }

    /// Each record once, at its first matching entry in query order, then the window.
    static func windowKeys(_ entries: [Entry], offset: Int, limit: Int?) -> [[UInt8]] {
        var seen = Set<[UInt8]>()
        var keys: [[UInt8]] = []
        for e in entries where seen.insert(e.key).inserted { keys.append(e.key) }
        let after = keys.dropFirst(max(0, offset))
        return Array(limit.map { after.prefix(max(0, $0)) } ?? after)
    }

    static func windowEntries(_ entries: [Entry], offset: Int, limit: Int?) -> [Entry] {
        let after = entries.dropFirst(max(0, offset))
        return Array(limit.map { after.prefix(max(0, $0)) } ?? after)
    }

    static func filterKeys(_ model: Model, _ keyspace: String, _ filter: IndexFilter) -> Set<[UInt8]> {
        switch filter {
        case .match(let index, let condition):
            var keys = Set<[UInt8]>()
            for (key, record) in model[keyspace] ?? [:]
            where record.terms.contains(where: { $0.index == index && matches($0.value, condition) }) {
                keys.insert(key)
            }
            return keys
        case .and(let parts):
            var result = filterKeys(model, keyspace, parts[0])
            for part in parts.dropFirst() { result.formIntersection(filterKeys(model, keyspace, part)) }
            return result
        case .or(let parts):
            return parts.reduce(into: Set<[UInt8]>()) { $0.formUnion(filterKeys(model, keyspace, $1)) }
        }
    }

    // MARK: Random data

    static func randomTerms(_ rng: inout IndexTest.SplitMix64) -> [Term] {
        var terms: [Term] = []
        if rng.chance(0.75) { terms.append(Term(index: "genre", value: .string(rng.pick(genres)))) }
        if rng.chance(0.7) {
            let rating = rng.chance(0.05) ? -0.0 : Double(rng.int(0...10)) / 2
            terms.append(Term(index: "rating", value: .double(rating)))
        }
        for _ in 0..<rng.int(0...3) { terms.append(Term(index: "tags", value: .string(rng.pick(tags)))) }
        if rng.chance(0.7) {
            let year: IndexValue
            switch rng.int(0..<100) {
            case 0..<3: year = .null
            case 3..<5: year = .int(rng.pick([.min, .max, -1, 0]))
            default: year = .int(Int64(rng.int(1995...2005)))
            }
            terms.append(Term(index: "year", value: year))
        }
        // A record may list one index's terms in any order and repeat a term.
        if rng.chance(0.1), let t = terms.first { terms.append(t) }
        terms.shuffle(using: &rng)
        return terms
    }

    /// Values to compare against: the index's own domain, values between and outside it, other types.
    static func candidates(_ index: String) -> [IndexValue] {
        let common: [IndexValue] = [.null, .bool(true), .int(3), .double(2.5), .string(""), .string("sf"),
                                    .identifier([0x00])]
        switch index {
        case "genre": return genres.map { .string($0) } + ["s", "sf\0", "sf\0y", "zzz", "a", "日"].map { .string($0) }
            + common
        case "rating":
            return (0...10).map { .double(Double($0) / 2) } + [0.25, -1, 6, -0.0, .nan, .infinity, -.infinity]
                .map { .double($0) } + common
        case "tags": return tags.map { .string($0) } + ["aa", "b\0\0", "bb", "\0\0"].map { .string($0) } + common
        case "year":
            return (1994...2006).map { .int(Int64($0)) } + [Int64.min, .max, -1, 0].map { .int($0) }
                + [.double(2000), .date(microsecondsSince1970: 0)] + common
        default: return common
        }
    }

    static func randomBound(_ rng: inout IndexTest.SplitMix64, _ index: String, kind: Int) -> IndexBound? {
        switch kind {
        case 0: return nil
        case 1: return .included(rng.pick(candidates(index)))
        default: return .excluded(rng.pick(candidates(index)))
        }
    }

    /// A sample of conditions: every form, every one of the nine bound combinations of `.range`, and the
    /// convenience constructors.
    static func conditions(_ rng: inout IndexTest.SplitMix64, _ index: String) -> [IndexCondition] {
        let c = candidates(index)
        var out: [IndexCondition] = [.any]
        for _ in 0..<3 { out.append(.equals(rng.pick(c))) }
        out.append(.oneOf([]))
        for _ in 0..<2 { out.append(.oneOf((0..<rng.int(1...5)).map { _ in rng.pick(c) })) }
        for _ in 0..<2 { out.append(.stringPrefix(rng.pick(prefixes))) }
        for lowerKind in 0..<3 {
            for upperKind in 0..<3 {
                out.append(.range(lower: randomBound(&rng, index, kind: lowerKind),
                                  upper: randomBound(&rng, index, kind: upperKind)))
            }
        }
        // The same value on both ends, and ends in the wrong order.
        let v = rng.pick(c)
        out.append(.range(lower: .included(v), upper: .included(v)))
        out.append(.range(lower: .excluded(v), upper: .included(v)))
        out.append(.range(lower: .included(v), upper: .excluded(v)))
        out += [.greaterThan(rng.pick(c)), .atLeast(rng.pick(c)), .lessThan(rng.pick(c)), .atMost(rng.pick(c)),
                .between(rng.pick(c), rng.pick(c))]
        return out
    }

    static func randomFilter(_ rng: inout IndexTest.SplitMix64, depth: Int) -> IndexFilter {
        if depth == 0 || rng.chance(0.35) {
            let index = rng.pick(queriedIndexes)
            return .match(index: index, rng.pick(conditions(&rng, index)))
        }
        let parts = (0..<rng.int(1...3)).map { _ in randomFilter(&rng, depth: depth - 1) }
        return rng.chance(0.5) ? .and(parts) : .or(parts)
    }

    // MARK: Checking

    static func describe(_ e: [IndexEntry]) -> String {
        "\(e.count) entries: " + e.prefix(8).map { "(\(IndexTest.describe($0.value)), [\(IndexTest.hex($0.key, max: 8))])" }
            .joined(separator: ", ")
    }

    static func entriesEqual(_ got: [IndexEntry], _ expected: [Entry]) -> Bool {
        got.count == expected.count && zip(got, expected).allSatisfy {
            $0.key == $1.key && IndexTest.sameValue($0.value, $1.value)
        }
    }

    /// Compares every query API with the model; returns the differences found (empty when all agree).
    static func differences(_ engine: Engine, _ model: Model, rng: inout IndexTest.SplitMix64,
                            thorough: Bool) throws -> [String] {
        try differences(engine.snapshot(), model, engine: engine, rng: &rng, thorough: thorough)
    }

    /// Compares the queries of `snapshot` (and, when `engine` is given, the Engine conveniences, which read a
    /// fresh snapshot and so must be idle) with the model.
    static func differences(_ snapshot: Snapshot, _ model: Model, engine: Engine?, rng: inout IndexTest.SplitMix64,
                            thorough: Bool) throws -> [String] {
        var diffs: [String] = []
        for keyspace in keyspaces {
            let expectedNames = indexes.filter { !modelEntries(model, keyspace, $0).isEmpty }
            if snapshot.indexNames(in: keyspace) != expectedNames {
                diffs.append("\(keyspace): indexNames \(snapshot.indexNames(in: keyspace)), expected \(expectedNames)")
            }
            if snapshot.count(in: keyspace) != (model[keyspace]?.count ?? 0) {
                diffs.append("\(keyspace): count \(snapshot.count(in: keyspace)), expected \(model[keyspace]?.count ?? 0)")
            }
            for index in queriedIndexes {
                let all = modelEntries(model, keyspace, index)
                let what = "\(keyspace).\(index)"
                if snapshot.entryCount(keyspace: keyspace, index: index) != all.count {
                    diffs.append("\(what): entryCount \(snapshot.entryCount(keyspace: keyspace, index: index)), "
                                 + "expected \(all.count)")
                }
                var conds = conditions(&rng, index)
                if !thorough { conds = (0..<5).map { _ in rng.pick(conds) } + [.any] }
                for condition in conds {
                    let expectedCount = windowKeys(ordered(all, condition, reverse: false), offset: 0, limit: nil).count
                    let count = snapshot.count(keyspace: keyspace, index: index, condition: condition)
                    if count != expectedCount {
                        diffs.append("\(what) \(condition): count \(count), expected \(expectedCount)")
                    }
                    for reverse in [false, true] {
                        let matching = ordered(all, condition, reverse: reverse)
                        var windows: [(Int, Int?)] = [(0, nil)]
                        windows.append((rng.int(0...matching.count + 1),
                                        rng.chance(0.2) ? nil : rng.int(0...matching.count + 1)))
                        if thorough { windows.append(rng.pick([(0, 0), (0, 1), (1, 1), (matching.count + 5, nil)])) }
                        for (offset, limit) in windows {
                            let query = IndexQuery(keyspace: keyspace, index: index, condition: condition,
                                                   reverse: reverse, offset: offset, limit: limit)
                            let label = "\(what) \(condition) reverse \(reverse) offset \(offset) limit \(String(describing: limit))"
                            let keys = snapshot.keys(matching: query)
                            let expectedKeys = windowKeys(matching, offset: offset, limit: limit)
                            if keys != expectedKeys {
                                diffs.append("\(label): keys \(IndexTest.describe(keys)), expected "
                                             + IndexTest.describe(expectedKeys))
                            }
                            // Stopping the raw walk early gives the first keys, each once.
                            let stopAfter = rng.int(1...3)
                            var walked: [[UInt8]] = []
                            snapshot.forEachKey(matching: query) { key in
                                walked.append(Array(key))
                                return walked.count < stopAfter
                            }
                            if walked != Array(expectedKeys.prefix(stopAfter)) {
                                diffs.append("\(label): forEachKey stopped after \(stopAfter) gave "
                                             + "\(IndexTest.describe(walked)), expected \(IndexTest.describe(Array(expectedKeys.prefix(stopAfter))))")
                            }
                            let entries = snapshot.entries(matching: query)
                            let expectedEntries = windowEntries(matching, offset: offset, limit: limit)
                            if !entriesEqual(entries, expectedEntries) {
                                diffs.append("\(label): entries \(describe(entries)), expected \(expectedEntries.count) "
                                             + "entries: " + expectedEntries.prefix(8).map {
                                                 "(\(IndexTest.describe($0.value)), [\(IndexTest.hex($0.key, max: 8))])"
                                             }.joined(separator: ", "))
                            }
                        }
                    }
                }
                // Records come with their current values.
                let condition = rng.pick(conds)
                let query = IndexQuery(keyspace: keyspace, index: index, condition: condition,
                                       reverse: rng.chance(0.5), offset: rng.int(0...2), limit: rng.int(0...20))
                let records = try snapshot.records(matching: query)
                let expectedKeys = windowKeys(ordered(all, condition, reverse: query.reverse),
                                              offset: query.offset, limit: query.limit)
                let expectedRecords = expectedKeys.map { KeyValue(key: $0, value: model[keyspace]![$0]!.value) }
                if records != expectedRecords {
                    diffs.append("\(what) records(matching: \(condition)): \(records.count) records, expected "
                                 + "\(expectedRecords.count); keys \(IndexTest.describe(records.map(\.key)))")
                }
                // The Engine conveniences read a fresh snapshot: the same answers while nothing is written.
                if let engine, engine.keys(matching: query) != expectedKeys {
                    diffs.append("\(what) Engine.keys(matching: \(condition)) differs from the model")
                }
                if let engine, try engine.records(matching: query) != expectedRecords {
                    diffs.append("\(what) Engine.records(matching: \(condition)) differs from the model")
                }
            }
            // AND / OR combinations.
            for i in 0..<(thorough ? 30 : 8) {
                let filter = randomFilter(&rng, depth: 3)
                let expected = filterKeys(model, keyspace, filter).sorted { IndexTest.compareBytes($0, $1) < 0 }
                let got = i % 4 == 0 && engine != nil ? engine!.keys(in: keyspace, where: filter)
                    : snapshot.keys(in: keyspace, where: filter)
                if got != expected {
                    diffs.append("\(keyspace) keys(where: \(filter)): \(IndexTest.describe(got)), expected "
                                 + IndexTest.describe(expected))
                }
            }
        }
        return diffs
    }

    // MARK: The test

    /// In this order: a crash image after a clean reopen replays the log on top of the checkpoint written at close.
    enum Reopen: CaseIterable { case clean, crashImage, withoutCheckpoint }

    @Test("random index operations and reopens match the model", .heavy, arguments: runs)
    func randomOperationsMatchModel(run: Run) throws {
        try IndexTest.withTemporaryDirectory { root in
            var rng = IndexTest.SplitMix64(seed: run.seed)
            let tag = "[\(run.name) seed 0x\(String(run.seed, radix: 16))]"
            let options = IndexTest.options(sync: run.sync, segmentSize: run.segmentSize,
                                            pageCacheBytes: run.pageCacheBytes)
            var generation = 0
            var dir = root + "/store-0"
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }

            // Keys with shared prefixes, 0x00 and 0xFF bytes, and the empty key.
            var pool: [[UInt8]] = [[]]
            for _ in 0..<140 {
                pool.append((0..<rng.int(1...6)).map { _ in rng.pick([0x00, 0x01, 0x41, 0x42, 0x7F, 0x80, 0xFE, 0xFF]) })
            }
            pool = Array(Set(pool)).sorted { IndexTest.compareBytes($0, $1) < 0 }

            var model: Model = [:]
            var reopens = 0, rejected = 0
            // How reopens rebuilt the indexes: replay on top of a checkpoint, and replay of the whole log.
            var replayedOnCheckpoint = 0, replayedWholeLog = 0

            func check(_ when: String, thorough: Bool) throws {
                let diffs = try Self.differences(engine, model, rng: &rng, thorough: thorough)
                #expect(diffs.isEmpty, "\(tag) \(when): \(diffs.count) differences: \(diffs.prefix(6).joined(separator: " | "))")
                if !diffs.isEmpty { throw IndexTest.Stop("\(tag) stopped at the first difference") }
            }

            func reopen(_ how: Reopen, _ when: String) throws {
                switch how {
                case .clean:
                    try engine.close()
                    engine = try Engine.open(at: dir, options: options)
                case .withoutCheckpoint:
                    try engine.close()
                    try? FileManager.default.removeItem(atPath: dir + "/CHECKPOINT")
                    engine = try Engine.open(at: dir, options: options)
                    #expect(!engine.recoveryReport.checkpointUsed, "\(tag) \(when): the checkpoint was removed")
                case .crashImage:
                    // An image of the idle, synced store: what a crash right now would leave.
                    generation += 1
                    dir = try IndexTest.replaceWithCrashImage(engine, dir: dir, copy: root + "/store-\(generation)")
                    engine = try Engine.open(at: dir, options: options)
                }
                reopens += 1
                let recovery = engine.recoveryReport
                if recovery.recordsReplayed > 0 {
                    if recovery.checkpointUsed { replayedOnCheckpoint += 1 } else { replayedWholeLog += 1 }
                }
                #expect(engine.recoveryReport.droppedBytes == 0, "\(tag) \(when): reopen dropped bytes")
            }

            func randomValue() -> [UInt8] { rng.bytes(rng.int(run.valueSizes)) }
            func randomKey(_ keyspace: String, existing: Bool) -> [UInt8] {
                if existing, let keys = model[keyspace]?.keys, !keys.isEmpty, rng.chance(0.85) {
                    return Array(keys)[rng.int(0..<keys.count)]
                }
                return rng.pick(pool)
            }

            for step in 0..<run.steps {
                var batch = WriteBatch()
                var next = model
                var invalid = false
                func addPut(_ keyspace: String, _ key: [UInt8]) {
                    let value = randomValue()
                    let terms = Self.randomTerms(&rng)
                    batch.put(value, forKey: key, in: keyspace,
                              indexTerms: terms.map { IndexTerm(index: $0.index, value: $0.value) })
                    next[keyspace, default: [:]][key] = Record(value: value, terms: terms)
                }
                func addDelete(_ keyspace: String, _ key: [UInt8]) {
                    batch.delete(key, in: keyspace)
                    next[keyspace]?[key] = nil
                }
                let keyspace = rng.chance(0.8) ? "books" : "films"
                switch rng.int(0..<100) {
                case 0..<55:
                    addPut(keyspace, randomKey(keyspace, existing: rng.chance(0.5)))
                case 55..<70:
                    addDelete(keyspace, randomKey(keyspace, existing: true))
                case 70..<97:
                    // Several operations, sometimes on the same key (later ones see earlier ones' terms).
                    let first = randomKey(keyspace, existing: true)
                    for _ in 0..<rng.int(2...6) {
                        let ks = rng.chance(0.8) ? keyspace : rng.pick(Self.keyspaces)
                        let key = rng.chance(0.3) ? first : randomKey(ks, existing: true)
                        if rng.chance(0.75) { addPut(ks, key) } else { addDelete(ks, key) }
                    }
                default:
                    // A batch with one term that is not an IndexValue encoding: rejected as a whole.
                    addPut(keyspace, randomKey(keyspace, existing: true))
                    batch.put([1], forKey: randomKey(keyspace, existing: true), in: keyspace,
                              indexTerms: [IndexTerm(index: "genre", value: .string("ok")),
                                           IndexTerm(index: "genre", term: [0x06, 0x61])])
                    invalid = true
                }
                if invalid {
                    do {
                        try engine.commitAndWait(batch)
                        Issue.record("\(tag) step \(step): a batch with an invalid term was accepted")
                        model = next   // keep going with what the engine did
                    } catch {
                        #expect(IndexTest.lucidErrorCode(error) == .invalidArgument, "\(tag) step \(step): \(error)")
                        rejected += 1
                    }
                } else {
                    try engine.commitAndWait(batch)
                    model = next
                }

                if step % run.checkEvery == run.checkEvery - 1 {
                    try check("after step \(step)", thorough: false)
                }
                if step % run.reopenEvery == run.reopenEvery - 1 {
                    let how = Reopen.allCases[reopens % Reopen.allCases.count]
                    try reopen(how, "step \(step)")
                    try check("after reopen (\(how)) at step \(step)", thorough: true)
                }
            }

            let segments = try IndexTest.segmentCount(dir)
            #expect(segments >= run.minimumSegments, "\(tag) expected at least \(run.minimumSegments) segments, got \(segments)")
            #expect(rejected > 0, "\(tag) the run should include rejected batches")
            try check("at the end", thorough: true)
            let report = try engine.verify()
            #expect(report.ok, "\(tag) verify: \(report.problems.prefix(5).map(\.description).joined(separator: "; "))")
            for how in Reopen.allCases {
                try reopen(how, "final \(how)")
                try check("after the final reopen (\(how))", thorough: how == .withoutCheckpoint)
            }
            let final = try engine.verify()
            #expect(final.ok, "\(tag) final verify: \(final.problems.prefix(5).map(\.description).joined(separator: "; "))")
            #expect(reopens >= 4, "\(tag) reopens: \(reopens)")
            #expect(replayedOnCheckpoint > 0 && replayedWholeLog > 0,
                    "\(tag) reopens should replay both on a checkpoint (\(replayedOnCheckpoint)) and the whole log (\(replayedWholeLog))")
        }
    }
}
