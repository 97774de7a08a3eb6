import Foundation
import Synchronization
@testable import Lucid

/// A small REST backend on a real loopback HTTP server: `GET /books/:id`, `GET /books[?genre=]` (a list under
/// `data` with `meta`), `POST /books` (assigns ids from 1000), `PUT /books/:id`, `DELETE /books/:id`,
/// `DELETE /books`. Switches make it fail on purpose.
final class FakeBackend: @unchecked Sendable {
    struct State {
        var books: [Int: BookPayload] = [:]
        var nextID = 1000
        var failWrites = false
        var malformedListElement = false
        var ignoreFilter = false
    }
    final class Box: Sendable { let state = Mutex(State()) }
    let box = Box()
    /// Changes the backend's state.
    func update(_ body: (inout State) -> Void) { box.state.withLock { body(&$0) } }
    /// The books it holds, by id.
    var books: [Int: BookPayload] { box.state.withLock { $0.books } }
    private(set) var server: LoopbackHTTPServer!

    init(_ books: [Book] = [], port: UInt16 = 0) throws {
        box.state.withLock { s in for b in books { s.books[b.identifier.remoteValue!] = BookPayload(BookBody(b), id: b.identifier.remoteValue!) } }
        server = try LoopbackHTTPServer(port: port) { [box] request in Self.handle(request, box) }
    }

    var host: String { server.host }
    var requests: [LoopbackHTTPServer.Request] { server.received }

    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return Array((try? encoder.encode(value)) ?? Data())
    }

    static func handle(_ request: LoopbackHTTPServer.Request, _ box: Box) -> LoopbackHTTPServer.Response {
        let url = URLComponents(string: "http://x" + request.path)
        let parts = (url?.path ?? "").split(separator: "/").map(String.init)
        let genre = url?.queryItems?.first { $0.name == "genre" }?.value
        return box.state.withLock { s -> LoopbackHTTPServer.Response in
            switch (request.method, parts.count) {
            case ("GET", 2):
                guard let id = Int(parts[1]), let book = s.books[id] else { return .json(#"{"error":"not found"}"#, status: 404) }
                return LoopbackHTTPServer.Response(status: 200, body: Array(#"{"data":"#.utf8) + encode(book) + Array("}".utf8))
            case ("GET", 1):
                var list = s.books.values.sorted { $0.id < $1.id }
                if let genre, !s.ignoreFilter { list = list.filter { $0.genre == genre } }
                var elements = list.map { encode($0) }
                if s.malformedListElement { elements.append(Array(#"{"id":"not a number"}"#.utf8)) }
                let body = Array(#"{"meta":{"total":\#(list.count)},"data":["#.utf8) + Array(elements.joined(separator: Array(",".utf8))) + Array("]}".utf8)
                return LoopbackHTTPServer.Response(status: 200, body: body)
            case ("POST", 1), ("PUT", 2):
                if s.failWrites { return .json(#"{"error":"maintenance"}"#, status: 503) }
                let decoder = JSONDecoder()
                decoder.keyDecodingStrategy = .convertFromSnakeCase
                guard let book = try? decoder.decode(BookBody.self, from: Data(request.body)) else {
                    return .json(#"{"error":"bad body"}"#, status: 400)
                }
                let id = parts.count == 2 ? Int(parts[1]) ?? 0 : { s.nextID += 1; return s.nextID - 1 }()
                s.books[id] = BookPayload(book, id: id)
                return LoopbackHTTPServer.Response(status: 200, body: Array(#"{"data":"#.utf8) + encode(s.books[id]!) + Array("}".utf8))
            case ("DELETE", 2):
                guard let id = Int(parts[1]), s.books.removeValue(forKey: id) != nil else { return .json("{}", status: 404) }
                return LoopbackHTTPServer.Response(status: 204)
            case ("DELETE", 1):
                s.books.removeAll()
                return LoopbackHTTPServer.Response(status: 204)
            default:
                return .json("{}", status: 405)
            }
        }
    }

    func stop() { server.stop() }
}
