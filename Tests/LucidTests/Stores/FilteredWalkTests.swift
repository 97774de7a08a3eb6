import Foundation
@testable import Lucid
import LucidEngine
import Testing

/// The disk planner's filtered walk (`DiskQueryPlanner.walkIndexFiltered`): it answers a filter the indexes cannot
/// decide, ordered by an index with a window, by walking that index, and gives up past its budget; and the
/// candidate sets it walks with (`CandidateKeys`), whose negations hold the keys they leave out. The results
/// themselves are checked against the in-memory evaluation in DiskQueryPlannerTests.
@Suite("Disk query planner: filtered walk and candidate sets")
struct FilteredWalkTests {
    /// 2,000 books: titles `t0` ... `t39` in turn, 50 page counts, one day apart.
    private static func store() async throws -> (TemporaryStore, DiskStore<Book>) {
        let holder = try TemporaryStore()
        let store = DiskStore<Book>(engine: holder.engine)
        let books = (0..<2_000).map { i in Book.remote(i, "t\(i % 40)", pages: i % 50) }
        for start in stride(from: 0, to: books.count, by: 500) { _ = try await store.set(Array(books[start..<start + 500])) }
        return (holder, store)
    }

    private static func walk(_ query: Query<Book>, on store: DiskStore<Book>) throws -> [Book]? {
        let planner = DiskQueryPlanner(store: store, snapshot: try store.openSnapshot(), evaluator: try QueryEvaluator(query))
        let window = (query.offset ?? 0) + (query.limit ?? 0)
        return try planner.walkIndexFiltered(query.orderShape.firstIndex!, keys: nil, window: window)?.entities
    }

    @Test("a common pattern is answered by the walk, reading a few records; a rare one gives up for the scan")
    func walkOrGiveUp() async throws {
        let (holder, store) = try await Self.store()
        defer { _ = holder }
        // `t1` and `t10` ... `t19`: 11 titles in 40. Descending by pages, 10 of them: the walk stops at the end of
        // the tie the 10th match is in (40 records of 2,000 per page count), well before its budget of 296.
        let common = Query<Book>.filter(.title ~= .string("^t1")).order([.desc(by: .pages)]).with(limit: 10)
        let walked = try #require(try Self.walk(common, on: store))
        #expect(walked.count >= 10 && walked.count < 296)
        #expect(walked.allSatisfy { $0.title.hasPrefix("t1") && $0.pages == 49 })
        #expect(try await store.search(common).entities == (try common.evaluate(over: store.search(.all).entities)).entities)
        // Nothing matches: the walk reads its budget and returns nil, and the search still answers (by the scan).
        let rare = Query<Book>.filter(.title ~= .string("zz")).order([.desc(by: .pages)]).with(limit: 10)
        #expect(try Self.walk(rare, on: store) == nil)
        #expect(try await store.search(rare).entities.isEmpty)
    }

    @Test("CandidateKeys intersection, union, complement and count agree with plain sets", arguments: [UInt64(1), 2, 3])
    func candidateAlgebra(seed: UInt64) {
        let universe = (0..<12).map { [UInt8($0)] }
        var state = seed
        func subset() -> Set<[UInt8]> {
            Set(universe.filter { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return (state >> 40) & 1 == 1
            })
        }
        func members(_ c: CandidateKeys) -> Set<[UInt8]> { Set(universe.filter(c.contains)) }
        func random() -> (CandidateKeys, Set<[UInt8]>) {
            let s = subset()
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (state >> 41) & 1 == 1 ? (.only(s), s) : (.allBut(s), Set(universe).subtracting(s))
        }
        for _ in 0..<200 {
            let (a, sa) = random(), (b, sb) = random()
            #expect(members(a) == sa)
            #expect(a.count(of: universe.count) == sa.count)
            #expect(members(a.intersection(b)) == sa.intersection(sb))
            #expect(members(a.union(b)) == sa.union(sb))
            #expect(members(a.complement) == Set(universe).subtracting(sa))
        }
    }
}
