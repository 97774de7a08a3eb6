import Benchmark
import Foundation
import Lucid
import LucidEngine
import MicroSupport

// Hot paths of Lucid's data layer through its public API: EntityCodec, index terms, and a CoreManager over a
// DiskStore on a LucidEngine (sync mode .none: the CPU path, not the disk's fdatasync latency). Stores are opened
// and preloaded in setup, outside the measurement, and removed in teardown. Every measured body is deterministic:
// fixed entities, and identifiers and query values drawn from a fixed-seed generator.

/// A realistic entity: a plain Codable struct with a remote Int identifier and ten fields (strings, ints, a Date),
/// indexed on genre (string), rating (int) and published (date). The same shape as lucid-compare's BookEntity.
struct Book: LocalEntity {
    typealias Identifier = EntityIdentifier<Book, Int>
    static var identifierTypeID: String { "books" }

    var identifier: Identifier
    var number: Int
    var title: String
    var author: String
    var year: Int
    var pages: Int
    var rating: Int
    var published: Date
    var genre: String
    var lang: String
    var stock: Int

    enum IndexName: String, EntityIndexName { case genre, rating, published }

    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
        switch indexName {
        case .genre: .string(genre)
        case .rating: .int(rating)
        case .published: .date(published)
        }
    }

    static let genres = ["mystery", "fantasy", "history", "poetry", "romance", "science", "travel", "horror"]

    init(_ i: Int) {
        let h = UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15
        identifier = .remote(i)
        number = i
        title = "The Silent Harbor of Glass, volume \(i % 97)"
        author = ["Mara Okafor", "Jun Tanaka", "Ines Duarte", "Tomas Novak"][i % 4]
        year = 1900 + Int(h >> 40) % 125
        pages = 80 + Int(h >> 20) % 900
        rating = Int(h >> 33) % 1001
        published = Date(timeIntervalSince1970: 1_600_000_000 + Double(i) * 3_600)
        genre = Self.genres[i % Self.genres.count]
        lang = "en"
        stock = Int(h >> 50) % 50
    }
}

/// The index terms DiskStore stores with an entity, built the way its (internal) `terms(of:)` builds them for
/// scalar indexes: one ``IndexTerm`` per index name, the typed value encoded byte-comparably by the engine's
/// public ``IndexValue`` encoding.
private func indexTerms(of book: Book, names: [Book.IndexName]) -> [IndexTerm] {
    var terms: [IndexTerm] = []
    terms.reserveCapacity(names.count)
    for name in names {
        terms.append(IndexTerm(index: name.rawValue, value: book.entityIndexValue(for: name).indexValue))
    }
    return terms
}

private let records = 10_000

/// A fixed-seed generator of indexes in 0..<bound (a 64-bit LCG), so every run asks for the same sequence.
private struct Draws {
    private var state: UInt64 = 0x2545_F491_4F6C_DD1D
    mutating func next(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int(state >> 33) % bound
    }
}

/// A CoreManager over a DiskStore on an engine under a fresh temporary directory, preloaded with `records` books
/// (in batches of 1000); closed and removed by `dispose()`.
private final class Store: @unchecked Sendable {
    let directory: String
    let engine: Engine
    let manager: CoreManager<Book>

    init() async throws {
        directory = NSTemporaryDirectory() + "lucid-data-micro-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        var options = EngineOptions()
        options.syncMode = .none
        engine = try Engine.open(at: directory, options: options)
        manager = CoreManager(store: DiskStore<Book>(engine: engine))
        for start in stride(from: 0, to: records, by: 1000) {
            let stored = try await manager.set((start..<min(start + 1000, records)).map(Book.init)).count
            precondition(stored == min(1000, records - start), "preload stored \(stored) books")
        }
    }

    func dispose() {
        try? engine.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Holds a benchmark's state between its setup and teardown hooks (teardown takes no state).
private final class Holder: @unchecked Sendable {
    var store: Store?
    var manager: CoreManager<Book> { store!.manager }
    /// Counts the iterations of the query benchmarks, which cycle through genres and ratings with it.
    var round = 0
    /// The continuous-query benchmark's observer, registered in setup (its first result already read).
    var observer: ContinuousQuery<Book>.AsyncIterator?
    /// The book the continuous-query benchmark rewrites (a member of the observed result).
    var target: Book?

    func open() async throws {
        store = try await Store()
        round = 0
    }

    func dispose() {
        observer = nil
        target = nil
        store?.dispose()
        store = nil
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = micro()

    let book = Book(4242)
    let encoded = try! EntityCodec.encode(book)

    Benchmark("codec-encode-book", configuration: micro(.kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try EntityCodec.encode(book))
        }
    }

    Benchmark("codec-decode-book", configuration: micro(.kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try EntityCodec.decode(Book.self, from: encoded))
        }
    }

    let names = Array(Book.IndexName.allCases)
    Benchmark("index-terms-book", configuration: micro(.kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(indexTerms(of: book, names: names))
        }
    }

    let holder = Holder()

    // CoreManager over a DiskStore of 10k books.
    Benchmark("manager-get-by-id", configuration: micro(.kilo)) { benchmark in
        var draws = Draws()
        let manager = holder.manager
        for _ in benchmark.scaledIterations {
            blackHole(try await manager.get(byID: .remote(draws.next(records))))
        }
    } setup: {
        try await holder.open()
    } teardown: {
        holder.dispose()
    }

    // Index queries returning 20 books, a new value each round.
    func searches(_ name: String, _ query: @escaping @Sendable (Int) -> Query<Book>) {
        Benchmark(name) { benchmark in
            let manager = holder.manager
            for _ in benchmark.scaledIterations {
                holder.round += 1
                let result = try await manager.search(withQuery: query(holder.round)).once
                precondition(result.count == 20)
                blackHole(result)
            }
        } setup: {
            try await holder.open()
        } teardown: {
            holder.dispose()
        }
    }
    searches("manager-search-genre-limit20") { round in
        .filter(.genre == .string(Book.genres[round % Book.genres.count])).with(limit: 20)
    }
    searches("manager-search-rating-range-limit20") { round in
        .filter(.rating >= .int(round * 97 % 900)).order([.asc(by: .rating)]).with(limit: 20)
    }

    // One write and its delivery: set() of a book inside an observed query's result (a new stock value each time,
    // so the result changes), then the observer's next() returns the new result. The query is the genre search
    // above (20 books through the genre index), so its re-evaluation is as cheap as that search; a query that must
    // sort every match (e.g. ordered by rating) re-reads all 1250 books of the genre on each write.
    let observed = Query<Book>.filter(.genre == .string("mystery")).with(limit: 20)
    Benchmark("continuous-query-update") { benchmark in
        let manager = holder.manager
        var observer = holder.observer!
        var target = holder.target!
        for _ in benchmark.scaledIterations {
            target.stock += 1
            _ = try await manager.set(target)
            guard let result = await observer.next(), result.entities.contains(target) else {
                preconditionFailure("the observer did not receive the write")
            }
            blackHole(result)
        }
        holder.observer = observer
        holder.target = target
    } setup: {
        try await holder.open()
        var observer = try await holder.manager.search(withQuery: observed).continuous.makeAsyncIterator()
        guard let first = await observer.next(), first.count == 20 else { preconditionFailure("no initial result") }
        holder.observer = observer
        holder.target = first.entities[0]
    } teardown: {
        holder.dispose()
    }
}
