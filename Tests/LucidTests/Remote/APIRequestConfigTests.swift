import Foundation
import Testing
import Lucid

extension Book: RemoteEntity {
    static func requestConfig(for remotePath: RemotePath<Book>) -> APIRequestConfig? {
        switch remotePath {
        case .get(let id): APIRequestConfig(method: .get, path: .path("books") / id)
        case .search(let query) where query.context == "discover":
            APIRequestConfig(method: .get, path: .path("discover") / "books",
                             query: [.init("offset", .value(query.offset.map(String.init))), .init("limit", .value(query.limit.map(String.init)))])
        case .create(let book): APIRequestConfig(method: .post, path: .path("books"), body: try? .json(encoding: BookBody(book)))
        case .update(let book):
            APIRequestConfig(method: .put, path: .path("books") / book.identifier, body: try? .json(encoding: BookBody(book)))
        case .search(let query):
            APIRequestConfig(method: .get, path: .path("books"),
                             query: [.init("genre", .value(Self.genre(in: query.filter)))])
        case .remove(let id): APIRequestConfig(method: .delete, path: .path("books") / id)
        case .removeAll: APIRequestConfig(method: .delete, path: .path("books"))
        }
    }

    static func endpoint(for remotePath: RemotePath<Book>) -> RemoteEndpoint<Book>? {
        switch remotePath {
        case .get, .create, .update: .entity(BookPayload.self, at: ["data"]) { $0.book }
        case .search: .list(BookPayload.self, at: ["data"]) { $0.book }
        case .remove, .removeAll: nil
        }
    }

    /// The genre an equality filter asks for (the fake server can filter by it).
    static func genre(in filter: Query<Book>.Filter?) -> String? {
        if case .comparison(.index(.genre), .equalTo, .index(.string(let g)))? = filter { return g }
        return nil
    }
}

/// What a client sends to create or update a book.
struct BookBody: Codable, Sendable {
    var title: String
    var genre: String?
    var rating: Double
    var pageCount: Int
    init(_ book: Book) {
        title = book.title
        genre = book.genre
        rating = book.rating
        pageCount = book.pages
    }
}

/// The server's JSON shape of a book (snake_case on the wire).
struct BookPayload: Codable, Sendable {
    var id: Int
    var title: String
    var genre: String?
    var rating: Double
    var pageCount: Int

    var book: Book { Book.remote(id, title, genre: genre, rating: rating, pages: pageCount) }
    init(_ book: BookBody, id: Int) {
        self.id = id
        title = book.title
        genre = book.genre
        rating = book.rating
        pageCount = book.pageCount
    }
}

@Suite("API request configuration")
struct APIRequestConfigTests {
    @Test("paths with identifiers, percent-encoding, query arrays")
    func urls() throws {
        let get = try #require(Book.requestConfig(for: .get(.remote(42))))
        #expect(get.relativeURL == "books/42")
        #expect(try get.url(defaultHost: "http://127.0.0.1:8080/").absoluteString == "http://127.0.0.1:8080/books/42")
        #expect(get.deduplicate)
        let odd = APIRequestConfig(method: .get, path: .path("a b") / "ü/x",
                                   query: [.init("q", .value("x&y=z")), .init("none", .value(nil)),
                                           .init("tags", .array(["sci fi", "a+b"]))])
        #expect(odd.relativeURL == "a%20b/%C3%BC%2Fx?q=x%26y%3Dz&tags%5B%5D=sci%20fi&tags%5B%5D=a%2Bb")
        let discover = try #require(Book.requestConfig(for: .search(Query.all.with(offset: 20).with(limit: 10).with(context: "discover"))))
        #expect(discover.relativeURL == "discover/books?offset=20&limit=10")
        #expect(Book.requestConfig(for: .search(.filter(.genre == .string("sf"))))?.relativeURL == "books?genre=sf")
        #expect(Book.requestConfig(for: .search(.all))?.relativeURL == "books")
    }

    @Test("a local id is a placeholder until the server's id is known")
    func placeholders() throws {
        let local = Book.Identifier.local("draft 1")
        let update = try #require(Book.requestConfig(for: .remove(local)))
        #expect(update.hasUnsyncedIdentifier)
        #expect(update.relativeURL == "books/:identifier_Book:draft 1")
        #expect(throws: APIError.self) { _ = try update.url(defaultHost: "http://127.0.0.1") }
        let rewritten = update.rewritingIdentifier(typeID: "Book", local: "draft 1", remote: "77")
        #expect(!rewritten.hasUnsyncedIdentifier)
        #expect(rewritten.relativeURL == "books/77")
        // Another type's or another local id's placeholder is left alone.
        #expect(update.rewritingIdentifier(typeID: "Author", local: "draft 1", remote: "77").hasUnsyncedIdentifier)
        #expect(update.rewritingIdentifier(typeID: "Book", local: "draft 2", remote: "77").hasUnsyncedIdentifier)
        // Both halves known: the remote value is written.
        #expect(Book.requestConfig(for: .get(.remote(5, local: "draft 1")))?.relativeURL == "books/5")
    }

    @Test("create or update by sync state; writes are barriers, not deduplicated; bodies")
    func writes() throws {
        let draft = Book(.local("d"), title: "Draft")
        guard case .create = RemotePath<Book>.set(draft) else { Issue.record("a local entity is not created"); return }
        guard case .update = RemotePath<Book>.set(Book.remote(3, "x")) else { Issue.record("a synced entity is not updated"); return }
        let create = try #require(Book.requestConfig(for: .set(draft)))
        #expect(create.method == .post && create.method.isWrite && !create.deduplicate)
        let body = try #require(create.body?.encoded)
        #expect(body.contentType == "application/json")
        let json = try JSONSerialization.jsonObject(with: body.data) as? [String: Any]
        #expect(json?["title"] as? String == "Draft")
        #expect(json?["page_count"] as? Int == 100)
        let form = APIRequestConfig.Body.formURLEncoded([.init("a", .value("1 2")), .init("b", .array(["x", "y"]))]).encoded
        #expect(String(decoding: form.data, as: UTF8.self) == "a=1%202&b%5B%5D=x&b%5B%5D=y")
        #expect(form.contentType == "application/x-www-form-urlencoded")
    }

    @Test("configurations survive a JSON round trip (the request queue persists them)")
    func codable() throws {
        let config = APIRequestConfig(method: .put, path: .path("books") / Book.Identifier.local("l1"), host: "http://127.0.0.1:1",
                                      query: [.init("x", .array(["1"]))], headers: ["Authorization": "Bearer t"],
                                      body: .raw(Data([0, 1, 2]), contentType: "application/octet-stream"),
                                      timeoutInterval: 2.5, tag: "t")
        let decoded = try JSONDecoder().decode(APIRequestConfig.self, from: JSONEncoder().encode(config))
        #expect(decoded == config)
    }
}
