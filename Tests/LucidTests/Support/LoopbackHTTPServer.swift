import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for remote-layer tests: one thread accepts, one thread
/// per connection answers one request with `handler`'s response and closes. Loopback only; stops on `stop()`.
final class LoopbackHTTPServer: @unchecked Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var headers: [String: String]
        var body: [UInt8]
    }

    struct Response: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        /// Seconds to wait before answering (to provoke timeouts).
        var delay: Double = 0

        static func json(_ text: String, status: Int = 200) -> Response {
            Response(status: status, headers: ["Content-Type": "application/json"], body: Array(text.utf8))
        }
    }

    let port: UInt16
    private let listener: Int32
    private let handler: @Sendable (Request) -> Response
    private let requests = Mutex<[Request]>([])
    private let running = Atomic<Bool>(true)

    /// Ephemeral ports this process's servers have been given. None is given twice: a test whose server stopped
    /// may still send to its port (to see a server that is down), and must never reach another test's server.
    private static let portsGiven = Mutex<Set<UInt16>>([])

    /// Starts listening on `requested`, or on an ephemeral port no server of this process had before.
    /// - Throws when the socket cannot be bound.
    init(port requested: UInt16 = 0, handler: @escaping @Sendable (Request) -> Response) throws {
        self.handler = handler
        var refused: [Int32] = []   // held open until a new port comes, so that each bind gets another one
        defer { refused.forEach { close($0) } }
        var bound = try Self.listen(on: requested)
        while requested == 0 && !Self.portsGiven.withLock({ $0.insert(bound.port).inserted }) {
            refused.append(bound.listener)
            bound = try Self.listen(on: 0)
        }
        port = bound.port
        listener = bound.listener
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// A socket listening on 127.0.0.1 at `requested` (0: an ephemeral port), and its port.
    private static func listen(on requested: UInt16) throws -> (listener: Int32, port: UInt16) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EIO) }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = requested.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(listener, 64) == 0 else { close(listener); throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        return (listener, UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:<port>`.
    var host: String { "http://127.0.0.1:\(port)" }

    /// The requests received so far.
    var received: [Request] { requests.withLock { $0 } }

    func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    deinit { if running.load(ordering: .sequentiallyConsistent) { stop() } }

    private func acceptLoop() {
        while running.load(ordering: .sequentiallyConsistent) {
            let connection = accept(listener, nil, nil)
            if connection < 0 { if errno == EINTR { continue } else { return } }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        guard let request = readRequest(connection) else { return }
        requests.withLock { $0.append(request) }
        let response = handler(request)
        if response.delay > 0 { Thread.sleep(forTimeInterval: response.delay) }
        var head = "HTTP/1.1 \(response.status) \(response.status == 200 ? "OK" : "Status")\r\n"
        var headers = response.headers
        headers["Content-Length"] = "\(response.body.count)"
        headers["Connection"] = "close"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + response.body
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    private func readRequest(_ connection: Int32) -> Request? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Int?
        while headerEnd == nil {
            let n = recv(connection, &chunk, chunk.count, 0)
            if n <= 0 || buffer.count > 1 << 20 { return nil }
            buffer += chunk[0..<n]
            headerEnd = Self.find([13, 10, 13, 10], in: buffer)
        }
        guard let end = headerEnd else { return nil }
        let lines = String(decoding: buffer[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        var body = Array(buffer[(end + 4)...])
        while body.count < length {
            let n = recv(connection, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            body += chunk[0..<n]
        }
        return Request(method: String(parts[0]), path: String(parts[1]), headers: headers, body: Array(body.prefix(length)))
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}
