import Foundation
import Synchronization
import Testing
import Lucid

@Suite("API client against a loopback HTTP server")
struct APIClientTests {
    @Test("a GET with prepared headers, query and path; JSON and form bodies reach the server")
    func requests() async throws {
        let server = try LoopbackHTTPServer { request in
            .json(#"{"path":"\#(request.path)","auth":"\#(request.headers["authorization"] ?? "")","body":"\#(String(decoding: request.body, as: UTF8.self))"}"#)
        }
        defer { server.stop() }
        let client = URLSessionAPIClient(host: server.host) { $0.setValue("Bearer secret", forHTTPHeaderField: "Authorization") }
        let response = try await client.send(APIRequestConfig(method: .get, path: .path("books") / Book.Identifier.remote(42),
                                                               query: [.init("tags", .array(["a b", "c"]))]))
        #expect(response.status == 200)
        let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String]
        #expect(json?["path"] == "/books/42?tags%5B%5D=a%20b&tags%5B%5D=c")
        #expect(json?["auth"] == "Bearer secret")
        let posted = try await client.send(APIRequestConfig(method: .post, path: .path("books"),
                                                            body: .formURLEncoded([.init("title", .value("Dune"))])))
        #expect((try JSONSerialization.jsonObject(with: Data(posted.body)) as? [String: String])?["body"] == "title=Dune")
        #expect(server.received.map(\.method) == ["GET", "POST"])
        #expect(server.received.last?.headers["content-type"] == "application/x-www-form-urlencoded")
    }

    @Test("statuses: 404 and 500 carry the body, 304 is a success, a closed port is unreachable, a slow server times out")
    func failures() async throws {
        let server = try LoopbackHTTPServer { request in
            switch request.path {
            case "/missing": .json(#"{"error":"no such book"}"#, status: 404)
            case "/broken": .json("oops", status: 500)
            case "/cached": LoopbackHTTPServer.Response(status: 304)
            default: LoopbackHTTPServer.Response(status: 200, body: Array("late".utf8), delay: 2)
            }
        }
        defer { server.stop() }
        let client = URLSessionAPIClient(host: server.host)
        do {
            _ = try await client.send(APIRequestConfig(method: .get, path: .path("missing")))
            Issue.record("a 404 succeeded")
        } catch {
            #expect(error == .httpStatus(code: 404, body: Array(#"{"error":"no such book"}"#.utf8)))
        }
        await #expect(throws: APIError.httpStatus(code: 500, body: Array("oops".utf8))) {
            _ = try await client.send(APIRequestConfig(method: .get, path: .path("broken")))
        }
        #expect(try await client.send(APIRequestConfig(method: .get, path: .path("cached"))).isNotModified)
        await #expect(throws: APIError.timeout) {
            _ = try await client.send(APIRequestConfig(method: .get, path: .path("slow"), timeoutInterval: 0.3))
        }
        let closed = try LoopbackHTTPServer { _ in .json("{}") }
        let closedHost = closed.host
        closed.stop()
        do {
            _ = try await URLSessionAPIClient(host: closedHost).send(APIRequestConfig(method: .get, path: .path("x")))
            Issue.record("a closed port answered")
        } catch {
            guard case .networkUnreachable = error else { Issue.record("unexpected \(error)"); return }
        }
        // A request naming an entity the server does not know yet is refused before any I/O.
        await #expect(throws: APIError.self) {
            _ = try await client.send(APIRequestConfig(method: .get, path: .path("books") / Book.Identifier.local("l")))
        }
    }

    @Test("identical in-flight GETs share one network call; writes are never merged")
    func deduplication() async throws {
        let server = try LoopbackHTTPServer { _ in LoopbackHTTPServer.Response(status: 200, body: Array("{}".utf8), delay: 0.3) }
        defer { server.stop() }
        let client = URLSessionAPIClient(host: server.host)
        let get = APIRequestConfig(method: .get, path: .path("books"))
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await client.send(get).status } }
            for try await status in group { #expect(status == 200) }
        }
        #expect(client.requestsSent == 1)
        #expect(server.received.count == 1)
        let post = APIRequestConfig(method: .post, path: .path("books"))
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<3 { group.addTask { try await client.send(post).status } }
            for try await _ in group {}
        }
        #expect(client.requestsSent == 4)
    }
}
