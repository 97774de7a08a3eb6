import Foundation
import Testing
import Lucid
import LucidEngine

/// The README's "Using Lucid" example, compiled and run (the entity under another name).
struct ReadmeBook: LocalEntity {
    typealias Identifier = EntityIdentifier<ReadmeBook, Int>
    var identifier: Identifier
    var title: String
    var genre: String?
    var rating: Double
    var tags: [String]

    enum IndexName: String, EntityIndexName { case title, genre, rating, tags }

    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
        switch indexName {
        case .title: .string(title)
        case .genre: .optional(genre) { .string($0) }
        case .rating: .double(rating)
        case .tags: .array(tags.map { .string($0) })
        }
    }
}

@Suite("README example")
struct ReadmeExampleTests {
    @Test("the example runs as written")
    func example() async throws {
        let temp = try TemporaryStore()
        let engine = temp.engine
        let books = CoreManager(store: CacheStore(memory: InMemoryStore<ReadmeBook>(limit: 10_000),
                                                  disk: DiskStore<ReadmeBook>(engine: engine)))
        try await books.set(ReadmeBook(identifier: .remote(42), title: "Dune", genre: "scifi", rating: 4.5, tags: ["classic"]))
        let dune = try await books.get(byID: .remote(42))
        #expect(dune?.title == "Dune")
        let (top, updates) = try await books.search(withQuery: .filter(.genre == .string("scifi") && .rating >= .double(4))
            .order([.desc(by: .rating), .asc(by: .title)]).with(limit: 20))
        #expect(top.map(\.title) == ["Dune"])
        for await result in updates {
            #expect(result.map(\.title) == ["Dune"])
            break
        }
    }
}

/// The README's hand-written record, on a twin of `ReadmeBook` (the same keyspace and fields).
struct ReadmeFastBook: EntityRecordCodable {
    typealias Identifier = EntityIdentifier<ReadmeFastBook, Int>
    static var identifierTypeID: String { ReadmeBook.identifierTypeID }
    var identifier: Identifier
    var title: String
    var genre: String?
    var rating: Double
    var tags: [String]
    enum IndexName: String, EntityIndexName { case title, genre, rating, tags }
    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
        ReadmeBook(identifier: .remote(identifier.remoteValue ?? 0), title: title, genre: genre, rating: rating, tags: tags)
            .entityIndexValue(for: ReadmeBook.IndexName(rawValue: indexName.rawValue)!)
    }
}

extension ReadmeFastBook {
    func encode(to record: inout EntityRecordWriter) throws {
        try record.encode(identifier, forKey: "identifier")   // the keys and order Codable would use
        record.encode(title, forKey: "title")
        record.encodeIfPresent(genre, forKey: "genre")
        record.encode(rating, forKey: "rating")
        try record.encode(tags, forKey: "tags")                // anything Encodable
    }
    init(from record: inout EntityRecordReader) throws {
        let identifier = try record.decode(Identifier.self, forKey: "identifier")   // in the order written
        let title = try record.decode(String.self, forKey: "title")
        let genre = try record.decodeIfPresent(String.self, forKey: "genre")
        let rating = try record.decode(Double.self, forKey: "rating")
        let tags = try record.decode([String].self, forKey: "tags")
        self.identifier = identifier; self.title = title; self.genre = genre
        self.rating = rating; self.tags = tags
    }
}

@Suite("README example: hand-written records")
struct ReadmeRecordTests {
    @Test("the README's hand-written record reads what Codable wrote, and back")
    func interchangeable() async throws {
        let temp = try TemporaryStore()
        let codable = DiskStore<ReadmeBook>(engine: temp.engine)
        let fast = DiskStore<ReadmeFastBook>(engine: temp.engine)
        _ = try await codable.set([ReadmeBook(identifier: .remote(1), title: "Dune", genre: nil, rating: 4.5, tags: ["a"])])
        let read = try #require(try await fast.get(byID: .remote(1)))
        #expect(read.title == "Dune" && read.genre == nil && read.tags == ["a"])
        _ = try await fast.set([ReadmeFastBook(identifier: .remote(2), title: "Emma", genre: "classic", rating: 4, tags: [])])
        #expect(try await codable.search(.filter(.genre == .string("classic"))).map(\.title) == ["Emma"])
        #expect(try ReadmeFastBook(identifier: .remote(2), title: "Emma", genre: "classic", rating: 4, tags: []).encodeRecord()
            == EntityCodec.encode(ReadmeBook(identifier: .remote(2), title: "Emma", genre: "classic", rating: 4, tags: [])))
    }
}
