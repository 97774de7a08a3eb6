import Foundation
import Lucid
import LucidEngine

/// The test entity: a plain Codable struct plus a small conformance.
struct Book: LocalEntity, MutableEntity {
    typealias Identifier = EntityIdentifier<Book, Int>
    var identifier: Identifier
    var title: String
    var genre: String?
    var rating: Double
    var pages: Int
    var published: Date
    var tags: [String]

    enum IndexName: String, EntityIndexName { case title, genre, rating, pages, published, tags }

    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
        switch indexName {
        case .title: .string(title)
        case .genre: .optional(genre) { .string($0) }
        case .rating: .double(rating)
        case .pages: .int(pages)
        case .published: .date(published)
        case .tags: .array(tags.map { .string($0) })
        }
    }

    mutating func merge(identifier: Identifier) throws { try self.identifier.merge(with: identifier) }

    init(_ id: Identifier, title: String, genre: String? = nil, rating: Double = 3, pages: Int = 100,
         published: Date = Date(timeIntervalSince1970: 1_600_000_000), tags: [String] = []) {
        identifier = id
        self.title = title
        self.genre = genre
        self.rating = rating
        self.pages = pages
        self.published = published
        self.tags = tags
    }

    static func remote(_ id: Int, _ title: String, genre: String? = nil, rating: Double = 3, pages: Int = 100,
                       tags: [String] = []) -> Book {
        Book(.remote(id), title: title, genre: genre, rating: rating, pages: pages,
             published: Date(timeIntervalSince1970: 1_600_000_000 + Double(id) * 86_400), tags: tags)
    }
}

/// A fresh engine directory under the temporary directory, removed by `cleanup()`.
final class TemporaryStore: @unchecked Sendable {
    let path: String
    private(set) var engine: Engine

    init(_ name: String = #function) throws {
        let base = FileManager.default.temporaryDirectory.path
        path = "\(base)/lucid-tests-\(getpid())-\(UUID().uuidString.prefix(8))"
        var options = EngineOptions()
        options.syncMode = .none
        engine = try Engine.open(at: path, options: options)
    }

    func reopen() throws {
        try engine.close()
        var options = EngineOptions()
        options.syncMode = .none
        engine = try Engine.open(at: path, options: options)
    }

    deinit {
        try? engine.close()
        try? FileManager.default.removeItem(atPath: path)
    }
}
