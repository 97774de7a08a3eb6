import Foundation
import Testing
import Lucid
import LucidEngineTestSupport

/// Random writes and random queries against every store, compared with the query evaluated in memory over a
/// model of what was written (the disk store's index plans must give exactly the reference results).
@Suite("Store model")
struct StoreModelTests {
    struct Generator {
        var rng: SplitMix64
        let genres = ["scifi", "romance", "essay", "poetry", "crime"]
        let words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]

        mutating func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        mutating func pick<T>(_ list: [T]) -> T { list[int(list.count)] }

        mutating func identifier() -> Book.Identifier {
            // A remote id and its local id always pair the same way, as with a real server.
            let r = int(60)
            return switch int(4) {
            case 0: .local("l\(r)")
            case 1: .remote(r, local: "l\(r)")
            default: .remote(r)
            }
        }

        mutating func book() -> Book {
            var tags: [String] = []
            for _ in 0..<int(3) { tags.append(pick(words)) }
            return Book(identifier(), title: "\(pick(words)) \(int(30))", genre: int(5) == 0 ? nil : pick(genres),
                        rating: Double(int(10)) / 2, pages: int(500),
                        published: Date(timeIntervalSince1970: Double(1_600_000_000 + int(1000) * 3600)), tags: tags)
        }

        mutating func value(for name: Book.IndexName) -> EntityIndexValue {
            if int(12) == 0 { return .none }
            switch name {
            case .title: return .string("\(pick(words)) \(int(30))")
            case .genre: return .string(pick(genres))
            case .rating: return int(6) == 0 ? .int(int(5)) : .double(Double(int(10)) / 2)
            case .pages: return .int(int(500))
            case .published: return .date(Date(timeIntervalSince1970: Double(1_600_000_000 + int(1000) * 3600)))
            case .tags: return .string(pick(words))
            }
        }

        mutating func filter(depth: Int = 0) -> Query<Book>.Filter {
            let name = pick(Book.IndexName.allCases)
            switch depth < 3 ? int(10) : int(5) {
            case 0: return .comparison(.index(name), .equalTo, .index(value(for: name)))
            case 1: return .comparison(.index(name), pick([.greaterThan, .greaterThanOrEqual, .lessThan, .lessThanOrEqual]),
                                       .index(value(for: name)))
            case 2: return .containedIn(.index(name), (0..<(1 + int(3))).map { _ in .index(value(for: name)) })
            case 3: return .title ~= .string(pick(["^a", "ta ", "[0-9]$", "e.a"]))
            case 4: return .identifier >> (0..<(1 + int(4))).map { _ in identifier() }
            case 5, 6: return .and(filter(depth: depth + 1), filter(depth: depth + 1))
            case 7, 8: return .or(filter(depth: depth + 1), filter(depth: depth + 1))
            default: return .not(filter(depth: depth + 1))
            }
        }

        mutating func query() -> Query<Book> {
            var q = int(6) == 0 ? Query<Book>.all : Query<Book>.filter(filter())
            var order: [Query<Book>.Order] = []
            for _ in 0..<int(3) {
                let property: Query<Book>.Property = int(4) == 0 ? .identifier : .index(pick(Book.IndexName.allCases))
                order.append(int(2) == 0 ? .asc(by: property) : .desc(by: property))
            }
            if !order.isEmpty { q = q.order(order) }
            if int(3) == 0 { q = q.with(offset: int(10)) }
            if int(2) == 0 { q = q.with(limit: int(15)) }
            if int(8) == 0 { q = q.grouped(by: .genre) }
            return q
        }
    }

    @Test("random writes and queries give the reference result", arguments: StoreKind.allCases)
    func randomQueries(_ kind: StoreKind) async throws {
        for seed in UInt64(1)...3 {
            var gen = Generator(rng: SplitMix64(seed: seed &* 7919 &+ UInt64(kind.rawValue.count)))
            var (store, holder) = try kind.make()
            let model = InMemoryStore<Book>()   // unbounded reference, same merge rules
            for round in 0..<25 {
                var batch: [Book] = []
                for _ in 0..<(1 + gen.int(20)) { batch.append(gen.book()) }
                _ = try await store.set(batch)
                model.setNow(batch)
                if gen.int(3) == 0 {
                    let ids = (0..<gen.int(6)).map { _ in gen.identifier() }
                    try await store.remove(ids)
                    try await model.remove(ids)
                }
                if round % 8 == 7, let holder, kind == .disk {
                    try holder.reopen()
                    store = DiskStore<Book>(engine: holder.engine)
                    try await checkReopened(holder, model: model, gen: &gen)
                }
                let everything = try await model.search(.all).entities
                let stored = try await store.search(.all).entities
                #expect(stored.map(\.identifier.storageKey) == everything.map(\.identifier.storageKey),
                        "seed \(seed) round \(round): contents differ")
                for _ in 0..<12 {
                    let query = gen.query()
                    let expected = try query.evaluate(over: everything)
                    let actual = try await store.search(query)
                    #expect(actual.entities.map(\.identifier.storageKey) == expected.entities.map(\.identifier.storageKey),
                            "seed \(seed) round \(round): \(query)")
                    #expect(actual.groupKeys == expected.groupKeys)
                }
            }
            _ = holder
        }
    }

    /// After a reopen the disk store answers from the recovered indexes.
    private func checkReopened(_ holder: TemporaryStore, model: InMemoryStore<Book>, gen: inout Generator) async throws {
        let store = DiskStore<Book>(engine: holder.engine)
        let everything = try await model.search(.all).entities
        #expect(try await store.search(.all).entities == everything)
        for _ in 0..<40 {
            let query = gen.query()
            let expected = try query.evaluate(over: everything)
            #expect(try await store.search(query).entities.map(\.identifier.storageKey)
                    == expected.entities.map(\.identifier.storageKey), "after reopen: \(query)")
        }
        #expect(try holder.engine.verify().ok)
    }
}
