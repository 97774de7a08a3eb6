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
