// The check of the `FuzzQuery` libFuzzer target in Fuzz/, and the test that replays its inputs without a sanitizer
// build. Compiled twice, like EntityCodecFuzzChecks.swift: here (the replay test at the bottom) and in the Fuzz
// package's `FuzzLucidCommon` library through the symlink `Fuzz/Sources/FuzzLucidCommon/QueryChecks.swift`.

import Foundation
import Lucid
import LucidEngine
import LucidEngineTestSupport
#if !LUCID_FUZZ_HARNESS
import Testing
#endif

/// A broken invariant of the query layer.
public struct QueryCheckFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Input: a program of writes, removals and queries over a small entity type. Queries are built from the bytes,
/// including regex patterns taken verbatim from them (the only text the query layer parses). Checks:
/// - nothing traps, whatever the pattern;
/// - the disk store (an engine on the in-memory FaultFileSystem), preloaded with a few hundred entities for one
///   input length in five, answers every query exactly as the query
///   evaluated in memory over a model of what was written (the same entities, every field, in the same order, as
///   many groups), with its entity cache off, tiny or the default (by the input's length), or
///   both refuse it as an invalid query;
/// - the engine verifies clean at the end.
public enum QueryChecks {
    public struct Item: LocalEntity {
        public typealias Identifier = EntityIdentifier<Item, Int>
        public var identifier: Identifier
        public var name: String
        public var group: String?
        public var score: Double
        public var rank: Int
        public var tags: [String]

        public enum IndexName: String, EntityIndexName { case name, group, score, rank, tags }

        /// Whether `other` holds the same values, the score's bits included (NaN and -0.0 are among the scores).
        func sameFields(as other: Item) -> Bool {
            identifier.storageKey == other.identifier.storageKey && name == other.name && group == other.group
                && score.bitPattern == other.score.bitPattern && rank == other.rank && tags == other.tags
        }

        public func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
            switch indexName {
            case .name: .string(name)
            case .group: .optional(group) { .string($0) }
            case .score: .double(score)
            case .rank: .int(rank)
            case .tags: .array(tags.map { .string($0) })
            }
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var position = 0
        var isAtEnd: Bool { position >= bytes.count }
        mutating func byte() -> UInt8 {
            defer { position += 1 }
            return position < bytes.count ? bytes[position] : 0
        }
        mutating func int(_ n: Int) -> Int { Int(byte()) % n }
        mutating func text(upTo n: Int) -> String {
            let count = int(n + 1)
            return String(decoding: (0..<count).map { _ in byte() }, as: UTF8.self)
        }
    }

    static let words = ["", "a", "ab", "b", "ba", "é", "e\u{301}", "z"]

    static func identifier(_ r: inout Reader) -> Item.Identifier {
        let n = r.int(12) - 2
        return switch r.int(3) {
        case 0: .local("l\(n)")
        case 1: .remote(n, local: "l\(n)")
        default: .remote(n)
        }
    }

    static func item(_ r: inout Reader) -> Item {
        Item(identifier: identifier(&r), name: words[r.int(words.count)] + words[r.int(words.count)],
             group: r.int(4) == 0 ? nil : words[r.int(4)], score: [-0.0, 0, 1.5, -2, .infinity, .nan][r.int(6)],
             rank: r.int(7) - 3, tags: (0..<r.int(3)).map { _ in words[r.int(words.count)] })
    }

    static func value(_ r: inout Reader) -> EntityIndexValue {
        switch r.int(8) {
        case 0: .none
        case 1: .int(r.int(7) - 3)
        case 2: .double([-0.0, 0, 1.5, -2, .infinity, .nan][r.int(6)])
        case 3: .bool(r.int(2) == 0)
        case 4: .date(Date(timeIntervalSince1970: Double(r.int(5))))
        default: .string(words[r.int(words.count)])
        }
    }

    static func filter(_ r: inout Reader, depth: Int = 0) -> Query<Item>.Filter {
        let name = Item.IndexName.allCases[r.int(Item.IndexName.allCases.count)]
        let ops: [Query<Item>.Operator] = [.equalTo, .greaterThan, .greaterThanOrEqual, .lessThan, .lessThanOrEqual]
        switch r.int(depth < 3 ? 10 : 5) {
        case 0, 1: return .comparison(.index(name), ops[r.int(ops.count)], .index(value(&r)))
        case 2: return .containedIn(.index(name), (0..<r.int(4)).map { _ in .index(value(&r)) })
        case 3: return .comparison(.index(name), .match, .index(.string(r.text(upTo: 8))))   // a raw pattern
        case 4: return .containedIn(.identifier, (0..<r.int(4)).map { _ in .identifier(identifier(&r)) })
        case 5: return .comparison(.identifier, ops[r.int(ops.count)], .identifier(identifier(&r)))
        case 6: return .and(filter(&r, depth: depth + 1), filter(&r, depth: depth + 1))
        case 7: return .or(filter(&r, depth: depth + 1), filter(&r, depth: depth + 1))
        case 8: return .not(filter(&r, depth: depth + 1))
        default: return .constant(r.int(2) == 0)
        }
    }

    static func query(_ r: inout Reader) -> Query<Item> {
        var q = r.int(5) == 0 ? Query<Item>.all : Query<Item>.filter(filter(&r))
        var order: [Query<Item>.Order] = []
        for _ in 0..<r.int(3) {
            let p: Query<Item>.Property = r.int(4) == 0 ? .identifier : .index(Item.IndexName.allCases[r.int(5)])
            order.append(r.int(2) == 0 ? .asc(by: p) : .desc(by: p))
        }
        if !order.isEmpty { q = q.order(order) }
        if r.int(3) == 0 { q = q.with(offset: r.int(8) - 1) }
        if r.int(2) == 0 { q = q.with(limit: r.int(10) - 1) }
        if r.int(6) == 0 { q = q.grouped(by: .group) }
        if r.int(8) == 0 { q = q.uniquelyIdentified() }
        return q
    }

    /// A query of the shape the planner answers by walking an index and filtering what it reads: a filter with a
    /// pattern match (which no index decides), ordered by an index, with a window of at most 25.
    static func walkQuery(_ r: inout Reader) -> Query<Item> {
        let name = Item.IndexName.allCases[r.int(Item.IndexName.allCases.count)]
        let pattern = Query<Item>.Filter.comparison(.index(name), .match, .index(.string(r.text(upTo: 3))))
        let filter: Query<Item>.Filter = switch r.int(4) {
        case 0: pattern
        case 1: .and(pattern, filter(&r, depth: 2))
        case 2: .or(pattern, filter(&r, depth: 2))
        default: .not(pattern)
        }
        var order: [Query<Item>.Order] = []
        for _ in 0..<(1 + r.int(2)) {
            let p: Query<Item>.Property = order.isEmpty || r.int(3) > 0
                ? .index(Item.IndexName.allCases[r.int(5)]) : .identifier
            order.append(r.int(2) == 0 ? .asc(by: p) : .desc(by: p))
        }
        var q = Query<Item>.filter(filter).order(order).with(limit: 1 + r.int(20))
        if r.int(3) == 0 { q = q.with(offset: r.int(6)) }
        return q
    }

    public static func check(_ bytes: [UInt8]) throws {
        var r = Reader(bytes: bytes)
        var options = EngineOptions()
        options.fileSystem = FaultFileSystem()
        options.syncMode = .none
        options.autoCompaction = nil
        let engine = try Engine.open(at: "/query", options: options)
        defer { try? engine.close() }
        // The entity cache off, tiny (full after a few items, so its admission rules run: second miss, a small
        // query's first miss, the recheck of a large one) or the default, by the input's length (no byte read, so
        // saved inputs keep their meaning).
        let disk = DiskStore<Item>(engine: engine, entityCacheBytes: [0, 2 << 10, DiskStore<Item>.defaultEntityCacheBytes][bytes.count % 3])
        let model = InMemoryStore<Item>()
        // One input length in five starts from a few hundred entities (no byte read, so saved inputs keep their
        // meaning): enough for the planner's ordered walks over filters the indexes cannot decide, which give up
        // below a few hundred candidates.
        let preloaded = bytes.count % 5 == 0
        if preloaded {
            let bulk = bulkItems(seed: bytes)
            try runBlocking { _ = try await disk.set(bulk) }
            model.setNow(bulk)
        }
        var steps = 0
        while !r.isAtEnd && steps < 32 {
            steps += 1
            switch r.int(4) {
            case 0, 1:
                let batch = (0..<(1 + r.int(6))).map { _ in item(&r) }
                try runBlocking { _ = try await disk.set(batch) }
                model.setNow(batch)
            case 2:
                let ids = (0..<r.int(4)).map { _ in identifier(&r) }
                try runBlocking { try await disk.remove(ids) }
                try runBlocking { try await model.remove(ids) }
            default:
                let q = preloaded && r.int(2) == 0 ? walkQuery(&r) : query(&r)
                let everything = try runBlocking { try await model.search(.all).entities }
                let expected: Result<QueryResult<Item>, QueryError> = Result { () throws(QueryError) in try q.evaluate(over: everything) }
                let actual: Result<QueryResult<Item>, StoreError> = Result { () throws(StoreError) in try disk.searchNow(q) }
                switch (expected, actual) {
                case (.failure, .failure(.invalidQuery)):
                    continue
                case (.success(let e), .success(let a)):
                    let ek = e.entities.map(\.identifier.storageKey), ak = a.entities.map(\.identifier.storageKey)
                    guard ek == ak, e.groupKeys.count == a.groupKeys.count,
                          zip(e.entities, a.entities).allSatisfy({ $0.sameFields(as: $1) }) else {
                        let stored = (try? disk.searchNow(.all).entities.map(\.identifier)) ?? []
                        throw QueryCheckFailure("disk \(ak) != reference \(ek) for \(q); "
                                                + "model holds \(everything.map(\.identifier)), disk \(stored)")
                    }
                default:
                    throw QueryCheckFailure("disk \(actual) vs reference \(expected) for \(q)")
                }
            }
        }
        let report = try engine.verify()
        guard report.ok else { throw QueryCheckFailure("verify: \(report.problems.prefix(3))") }
    }

    /// 400 to 799 entities of remote ids 1000 and up (some with a local id), outside the programs' own ids, their
    /// fields drawn as ``item(_:)`` draws them from bytes a generator seeded by the whole input gives.
    static func bulkItems(seed input: [UInt8]) -> [Item] {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in input { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        var rng = SplitMix64(seed: hash)
        let count = 400 + Int(rng.next() % 400)
        var r = Reader(bytes: (0..<(count * 12)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        return (0..<count).map { k in
            var entity = item(&r)
            entity.identifier = k % 3 == 0 ? .remote(1000 + k, local: "b\(k)") : .remote(1000 + k)
            return entity
        }
    }

    /// Runs async store calls from the synchronous fuzz entry point.
    static func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { box.result = .success(try await body()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }

    final class ResultBox<T>: @unchecked Sendable { var result: Result<T, any Error>? }

    /// Seeds: programs that write a few items and run several queries.
    public static func seeds() -> [(name: String, bytes: [UInt8])] {
        var out: [(String, [UInt8])] = []
        for seed in UInt64(1)...6 {
            var rng = SplitMix64(seed: seed)
            out.append(("program-\(seed)", (0..<(60 + Int(seed) * 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))
        }
        return out
    }
}

extension QueryChecks.Item: EntityTypeIdentifying {}

#if !LUCID_FUZZ_HARNESS
/// Replays `Fuzz/FailCases/FuzzQuery/` and `Fuzz/Corpus/FuzzQuery/` through the check, plus generated programs.
@Suite("Fuzz FailCases replay (queries)")
struct QueryFailCasesReplayTests {
    @Test("saved and generated programs: disk answers equal the reference")
    func replay() async throws {
        var inputs = QueryChecks.seeds().map(\.bytes)
        for folder in ["FailCases", "Corpus"] {
            let dir = LucidFailCasesReplayTests.fuzzDirectory.appendingPathComponent(folder).appendingPathComponent("FuzzQuery")
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() where !name.hasPrefix(".") {
                inputs.append(try [UInt8](Data(contentsOf: dir.appendingPathComponent(name))))
            }
        }
        await Self.check(inputs, "input")
    }

    @Test("random programs: disk answers equal the reference with the entity cache off, tiny and default")
    func randomPrograms() async throws {
        var rng = SplitMix64(seed: 21)
        // Lengths cycle through the three cache sizes the check picks by length.
        let inputs = (0..<300).map { program in (0..<(150 + program)).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        await Self.check(inputs, "program")
    }

    /// Runs the check on each input on a thread of its own: the check blocks its thread on each store call (as the
    /// fuzz entry point does), which on a thread of the concurrency pool could starve the tasks it waits for.
    private static func check(_ inputs: [[UInt8]], _ what: String) async {
        let failures = await withCheckedContinuation { (done: CheckedContinuation<[String], Never>) in
            Thread {
                var failures: [String] = []
                for (i, bytes) in inputs.enumerated() {
                    do { try QueryChecks.check(bytes) } catch { failures.append("\(what) \(i): \(error)") }
                }
                done.resume(returning: failures)
            }.start()
        }
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
    }
}
#endif
