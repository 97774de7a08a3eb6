import Foundation
import Testing
import Lucid

struct Author: LocalEntity {
    typealias Identifier = EntityIdentifier<Author, Int>
    var identifier: Identifier
    var name: String
    enum IndexName: String, EntityIndexName { case name }
    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .string(name) }
}

struct Novel: RemoteEntity {
    typealias Identifier = EntityIdentifier<Novel, Int>
    var identifier: Identifier
    var title: String
    var authorID: Int
    enum IndexName: String, EntityIndexName { case author }
    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(authorID) }

    struct Payload: Decodable, Sendable {
        struct AuthorPayload: Decodable, Sendable { var id: Int; var name: String }
        var id: Int
        var title: String
        var author: AuthorPayload
    }

    static func requestConfig(for remotePath: RemotePath<Novel>) -> APIRequestConfig? {
        if case .search = remotePath { return APIRequestConfig(method: .get, path: .path("novels")) }
        return nil
    }

    static func endpoint(for remotePath: RemotePath<Novel>) -> RemoteEndpoint<Novel>? {
        .list(Payload.self, at: ["data"], { Novel(identifier: .remote($0.id), title: $0.title, authorID: $0.author.id) },
              related: { [RelatedEntities([Author(identifier: .remote($0.author.id), name: $0.author.name)])] })
    }
}

@Suite("Nested entities in payloads")
struct NestedPayloadTests {
    @Test("authors nested in a list of novels are persisted through their own manager and update its observers")
    func nested() async throws {
        let server = try LoopbackHTTPServer { _ in
            .json(#"{"meta":{"page":1},"data":[{"id":1,"title":"Dune","author":{"id":7,"name":"Frank Herbert"}},{"id":2,"title":"Emma","author":{"id":8,"name":"Jane Austen"}},{"id":"bad"}]}"#)
        }
        defer { server.stop() }
        let temp = try TemporaryStore()
        let authors = CoreManager(store: DiskStore<Author>(engine: temp.engine))
        let novels = CoreManager(stores: [RemoteStore<Novel>(client: URLSessionAPIClient(host: server.host)),
                                          DiskStore<Novel>(engine: temp.engine)])
        let registry = ManagerRegistry()
        registry.register(authors)
        registry.register(novels)
        var observed = try await authors.search(withQuery: .all).continuous.makeAsyncIterator()
        #expect(await observed.next()?.isEmpty == true)

        let result = try await novels.search(withQuery: .all, in: ReadContext(dataSource: .remote(), payloadPersistence: registry)).once
        #expect(result.map(\.title) == ["Dune", "Emma"])   // the malformed element is dropped
        #expect(try await authors.all().map(\.name) == ["Frank Herbert", "Jane Austen"])
        #expect(await observed.next()?.map(\.name) == ["Frank Herbert", "Jane Austen"])
        #expect(try await novels.all().count == 2)

        // Without payload persistence the nested entities are dropped, the root ones still persisted.
        let (other, otherTemp) = try Self.freshManagers(temp: try TemporaryStore(), host: server.host)
        _ = try await other.search(withQuery: .all, in: ReadContext(dataSource: .remote())).once
        #expect(try await other.all().count == 2)
        #expect(otherTemp.engine.count(in: Author.identifierTypeID) == 0)
    }

    @Test("malformed JSON and a missing base key are typed errors; remoteOrLocal does not hide them")
    func malformed() async throws {
        for body in ["not json at all", #"{"items":[]}"#, #"{"data":{"id":1}}"#] {
            let server = try LoopbackHTTPServer { _ in .json(body) }
            defer { server.stop() }
            let temp = try TemporaryStore()
            let novels = CoreManager(stores: [RemoteStore<Novel>(client: URLSessionAPIClient(host: server.host)),
                                              DiskStore<Novel>(engine: temp.engine)])
            do {
                _ = try await novels.search(withQuery: .all, in: ReadContext(dataSource: .remoteOrLocal())).once
                Issue.record("\(body) was accepted")
            } catch {
                guard case .store(.api(.undecodableBody)) = error else { Issue.record("unexpected \(error)"); continue }
            }
        }
    }

    static func freshManagers(temp: TemporaryStore, host: String) throws -> (CoreManager<Novel>, TemporaryStore) {
        (CoreManager(stores: [RemoteStore<Novel>(client: URLSessionAPIClient(host: host)), DiskStore<Novel>(engine: temp.engine)]), temp)
    }
}
