import Foundation
import Testing
import Lucid
import LucidEngine
import LucidEngineTestSupport

/// Requests queued by a real process that is then killed with SIGKILL are delivered by the next run.
@Suite("Request queue: kill -9 of the client process")
struct RequestQueueKillTests {
    static func child() -> String? { BuiltProducts.executable(named: "lucid-queue-child")?.path }

    @Test("every request the killed process acknowledged as queued reaches the server, in order, once")
    func killedClient() async throws {
        let executable = try #require(Self.child(), "lucid-queue-child not found next to the test binary")
        for round in 0..<3 {
            let port = try RequestQueueTests.freePort()
            let temp = try TemporaryStore()
            try temp.engine.close()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [temp.path, "http://127.0.0.1:\(port)", "400"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Kill it right after it reports a given request queued (the last round: after everything).
            let killAfter = ["QUEUED 3", "QUEUED 150", "DONE"][round]
            var text = ""
            while !text.contains(killAfter + "\n") {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            text += String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let lines = text.split(separator: "\n")
            let acknowledged = lines.compactMap { $0.hasPrefix("QUEUED ") ? Int($0.dropFirst(7)) : nil }
            #expect(acknowledged.count >= [4, 151, 400][round], "round \(round): the child stopped early")

            try temp.reopen()
            let backend = try FakeBackend(port: port)
            defer { backend.stop() }
            let queue = APIRequestQueue(engine: temp.engine, client: URLSessionAPIClient(host: backend.host, defaultTimeout: 2),
                                        retry: RequestQueueTests.fastRetry)
            await queue.waitUntilEmpty()
            await queue.close()
            let delivered = backend.books.values.sorted { $0.id < $1.id }.map(\.title)
            // Acknowledged ones all arrive; at most one more (committed but killed before it printed) may too.
            #expect(Array(delivered.prefix(acknowledged.count)) == acknowledged.map { "queued-\($0)" }, "round \(round)")
            #expect(delivered.count <= acknowledged.count + 1, "round \(round)")
            #expect(delivered == (0..<delivered.count).map { "queued-\($0)" }, "round \(round): out of order")
        }
    }
}
