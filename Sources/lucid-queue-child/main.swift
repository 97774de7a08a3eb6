// The child process of the request queue's kill -9 test (Tests/LucidTests/Remote/RequestQueueKillTests.swift).
//
//     lucid-queue-child <storeDir> <host> <count>
//
// Opens the store and an APIRequestQueue towards <host> (a server that is down), then queues <count> POST requests
// `/books` with titles `queued-<i>`, printing `QUEUED <i>` (one write(2) per line) after each enqueue returned,
// i.e. after the request was committed durably. Then it waits to be killed.

import Foundation
import Lucid
import LucidEngine

func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: lucid-queue-child <storeDir> <host> <count>\n".utf8))
    exit(64)
}
do {
    let engine = try Engine.open(at: arguments[1])
    let queue = APIRequestQueue(engine: engine, client: URLSessionAPIClient(host: arguments[2], defaultTimeout: 1),
                                retry: .init(initialDelay: 0.05, maximumDelay: 0.1))
    for i in 0..<count {
        let body = APIRequestConfig.Body.json(Data(#"{"title":"queued-\#(i)","rating":1,"page_count":1}"#.utf8))
        try await queue.enqueue(APIRequestConfig(method: .post, path: .path("books"), body: body))
        emit("QUEUED \(i)")
    }
    emit("DONE")
    try await Task.sleep(for: .seconds(600))
} catch {
    FileHandle.standardError.write(Data("lucid-queue-child: \(error)\n".utf8))
    exit(1)
}
