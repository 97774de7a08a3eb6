import Foundation
import Lucid
import LucidEngine

// Hot paths of Lucid's data layer through its public API: EntityCodec, index terms, and a CoreManager over a
// DiskStore on a LucidEngine (sync mode .none: the CPU path, not the disk's fdatasync latency). Stores are opened
// and preloaded in `make`, outside the measurement, and removed in `dispose`. Every measured body is deterministic:
// fixed entities, and identifiers and query values drawn from a fixed-seed generator.

/// A realistic entity: a plain Codable struct with a remote Int identifier and ten fields (strings, ints, a Date),
/// indexed on genre (string), rating (int) and published (date). The same shape as lucid-compare's BookEntity.
public struct Book: LocalEntity {
    public typealias Identifier = EntityIdentifier<Book, Int>
    public static var identifierTypeID: String { "books" }

    public var identifier: Identifier
    var number: Int
    var title: String
    var author: String
    var year: Int
    var pages: Int
    var rating: Int
    var published: Date
    var genre: String
    var lang: String
    public var stock: Int

    public enum IndexName: String, EntityIndexName { case genre, rating, published }

    public func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
        switch indexName {
        case .genre: .string(genre)
        case .rating: .int(rating)
        case .published: .date(published)
        }
    }

    static let genres = ["mystery", "fantasy", "history", "poetry", "romance", "science", "travel", "horror"]

    public init(_ i: Int) {
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

/// The record written and read by hand, as lucid-compare's BookEntity and an app's hot entity would be (the disk
/// store's fast path); `codec-*` measure the `Codable` path, which writes the same record.
extension Book: EntityRecordCodable {
    public func encode(to record: inout EntityRecordWriter) throws {
        try record.encode(identifier, forKey: "identifier")
        record.encode(number, forKey: "number")
        record.encode(title, forKey: "title")
        record.encode(author, forKey: "author")
        record.encode(year, forKey: "year")
        record.encode(pages, forKey: "pages")
        record.encode(rating, forKey: "rating")
        record.encode(published, forKey: "published")
        record.encode(genre, forKey: "genre")
        record.encode(lang, forKey: "lang")
        record.encode(stock, forKey: "stock")
    }

    public init(from record: inout EntityRecordReader) throws {
        let identifier = try record.decode(Identifier.self, forKey: "identifier")
        let number = try record.decode(Int.self, forKey: "number")
        let title = try record.decode(String.self, forKey: "title")
        let author = try record.decode(String.self, forKey: "author")
        let year = try record.decode(Int.self, forKey: "year")
        let pages = try record.decode(Int.self, forKey: "pages")
        let rating = try record.decode(Int.self, forKey: "rating")
        let published = try record.decode(Date.self, forKey: "published")
        let genre = try record.decode(String.self, forKey: "genre")
        let lang = try record.decode(String.self, forKey: "lang")
        let stock = try record.decode(Int.self, forKey: "stock")
        self.identifier = identifier
        self.number = number
        self.title = title
        self.author = author
        self.year = year
        self.pages = pages
        self.rating = rating
        self.published = published
        self.genre = genre
        self.lang = lang
        self.stock = stock
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

/// A CoreManager over a DiskStore on an engine under a fresh temporary directory, preloaded with `records` books
/// (in batches of 1000); `body` is the measured loop, `round` counts the query workloads' operations (they cycle
/// through genres and ratings with it). With `cachedLimit`, the manager's store is a CacheStore of an InMemoryStore
/// keeping that many books over the DiskStore; `entityCacheBytes` bounds the DiskStore's decoded-entity cache.
private final class ManagerRunner: MicroRunner, @unchecked Sendable {
    let directory: String
    let engine: Engine
    let manager: CoreManager<Book>
    var round = 0
    /// The continuous-query workload's observer (its first result already read) and the book it rewrites.
    var observer: ContinuousQuery<Book>.AsyncIterator?
    var target: Book?
    let body: @Sendable (ManagerRunner, Int) async throws -> Void

    init(cachedLimit: Int? = nil, entityCacheBytes: Int = DiskStore<Book>.defaultEntityCacheBytes,
         _ body: @escaping @Sendable (ManagerRunner, Int) async throws -> Void) async throws {
        directory = NSTemporaryDirectory() + "lucid-data-micro-\(getpid())-\(UInt64.random(in: 0 ... .max))"
        var options = EngineOptions()
        options.syncMode = .none
        engine = try Engine.open(at: directory, options: options)
        let disk = DiskStore<Book>(engine: engine, entityCacheBytes: entityCacheBytes)
        if let cachedLimit {
            manager = CoreManager(store: CacheStore(memory: InMemoryStore(limit: cachedLimit), disk: disk))
        } else {
            manager = CoreManager(store: disk)
        }
        self.body = body
        for start in stride(from: 0, to: records, by: 1000) {
            let stored = try await manager.set((start..<min(start + 1000, records)).map(Book.init)).count
            precondition(stored == min(1000, records - start), "preload stored \(stored) books")
        }
    }

    func run(_ operations: Int) async throws { try await body(self, operations) }

    func dispose() {
        observer = nil
        try? engine.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension MicroWorkload {
    /// Lucid's data-layer workloads (target `LucidDataMicro`).
    public static let data: [MicroWorkload] = {
        let book = Book(4242)
        // Gets of ids drawn from a fixed-seed generator.
        func gets(_ name: String, cachedLimit: Int? = nil,
                  entityCacheBytes: Int = DiskStore<Book>.defaultEntityCacheBytes) -> MicroWorkload {
            MicroWorkload(name, operationsPerIteration: 1000) {
                try await ManagerRunner(cachedLimit: cachedLimit, entityCacheBytes: entityCacheBytes) { runner, count in
                    var draws = Draws()
                    for _ in 0..<count { consume(try await runner.manager.get(byID: .remote(draws.next(records)))) }
                }
            }
        }
        let ratingRange: @Sendable (Int) -> Query<Book> = { round in
            .filter(.rating >= .int(round * 97 % 900)).order([.asc(by: .rating)]).with(limit: 20)
        }
        // Index queries returning 20 books, a new value each round.
        func searches(_ name: String, entityCacheBytes: Int = DiskStore<Book>.defaultEntityCacheBytes,
                      _ query: @escaping @Sendable (Int) -> Query<Book>) -> MicroWorkload {
            MicroWorkload(name) {
                try await ManagerRunner(entityCacheBytes: entityCacheBytes) { runner, operations in
                    for _ in 0..<operations {
                        runner.round += 1
                        let result = try await runner.manager.search(withQuery: query(runner.round)).once
                        precondition(result.count == 20)
                        consume(result)
                    }
                }
            }
        }
        // One write and its delivery: set() of a book inside an observed query's result (a new stock value each
        // time, so the result changes), then the observer's next() returns the new result. The query is the genre
        // search below (20 books through the genre index), so its re-evaluation is as cheap as that search; a query
        // that must sort every match (e.g. ordered by rating) re-reads all 1250 books of the genre on each write.
        let observed = Query<Book>.filter(.genre == .string("mystery")).with(limit: 20)
        return [
            .synchronous("codec-encode-book", operationsPerIteration: 1000) {
                ClosureRunner { operations in for _ in 0..<operations { consume(try EntityCodec.encode(book)) } }
            },
            .synchronous("codec-decode-book", operationsPerIteration: 1000) {
                let encoded = try EntityCodec.encode(book)
                return ClosureRunner { operations in
                    for _ in 0..<operations { consume(try EntityCodec.decode(Book.self, from: encoded)) }
                }
            },
            .synchronous("record-decode-book", operationsPerIteration: 1000) {
                let encoded = try book.encodeRecord()
                return ClosureRunner { operations in
                    for _ in 0..<operations { consume(try Book.decodeRecord(encoded)) }
                }
            },
            .synchronous("index-terms-book", operationsPerIteration: 1000) {
                let names = Array(Book.IndexName.allCases)
                return ClosureRunner { operations in
                    for _ in 0..<operations { consume(indexTerms(of: book, names: names)) }
                }
            },
            // CoreManager over a DiskStore of 10k books.
            gets("manager-get-by-id"),
            // The same without the DiskStore's decoded-entity cache: each get looks its key up in the engine's
            // B-tree, reads the record from its page (the page cache holds every page) and decodes the book, as a
            // get does in a store many times larger than the entity cache (lucid-compare's 1M records).
            gets("manager-get-uncached", entityCacheBytes: 0),
            // CoreManager over a CacheStore keeping 1000 of the 10k books in memory: nine gets in ten miss memory,
            // read the disk store and put the book in memory, evicting the least recently used one.
            gets("manager-cached-get-by-id", cachedLimit: 1000),
            searches("manager-search-genre-limit20") { round in
                .filter(.genre == .string(Book.genres[round % Book.genres.count])).with(limit: 20)
            },
            searches("manager-search-rating-range-limit20", ratingRange),
            // The same range query with the entity cache off: each of the 20 books is looked up, read and decoded
            // (the index query's batched read), as on a first read in a store many times the cache.
            searches("manager-search-rating-range-uncached", entityCacheBytes: 0, ratingRange),
            MicroWorkload("continuous-query-update", countedOperations: 200) {
                let runner = try await ManagerRunner { runner, operations in
                    var observer = runner.observer!
                    var target = runner.target!
                    for _ in 0..<operations {
                        target.stock += 1
                        _ = try await runner.manager.set(target)
                        guard let result = await observer.next(), result.entities.contains(target) else {
                            preconditionFailure("the observer did not receive the write")
                        }
                        consume(result)
                    }
                    runner.observer = observer
                    runner.target = target
                }
                var observer = try await runner.manager.search(withQuery: observed).continuous.makeAsyncIterator()
                guard let first = await observer.next(), first.count == 20 else { preconditionFailure("no initial result") }
                runner.observer = observer
                runner.target = first.entities[0]
                return runner
            },
        ]
    }()
}
