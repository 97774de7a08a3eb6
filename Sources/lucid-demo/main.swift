import Foundation
import LucidEngine

// The README's main job until the data-layer demo exists: create a store in a temporary (or given) directory,
// write, reopen, read, verify, and print what happened with timings.

let arguments = CommandLine.arguments.dropFirst()
let directory = arguments.first ?? (NSTemporaryDirectory() + "lucid-demo-\(getpid())")
let records = 200_000
let clock = ContinuousClock()

func key(_ i: Int) -> [UInt8] { Array(String(format: "book-%010d", i).utf8) }
func value(_ i: Int) -> [UInt8] {
    Array(#"{"id":\#(i),"title":"Book number \#(i)","author":"Author \#(i % 997)","genre":"\#(["fantasy", "history", "science", "poetry"][i % 4])","rating":\#(Double(i % 50) / 10),"published":\#(1_600_000_000 + i)}"#.utf8)
}
func ms(_ d: Duration) -> String { String(format: "%.1f ms", Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000) }

do {
    print("store: \(directory)")
    var engine = try Engine.open(at: directory)
    print("opened (created: \(engine.recoveryReport.created))")

    let loadTime = try clock.measure {
        var batch = WriteBatch()
        for i in 0..<records {
            batch.put(value(i), forKey: key(i), in: "books")
            if batch.count == 1000 { try engine.commitAndWait(batch); batch = WriteBatch() }
        }
        if !batch.isEmpty { try engine.commitAndWait(batch) }
    }
    print("loaded \(records) records in batches of 1000: \(ms(loadTime))"
          + String(format: " (%.0f records/s)", Double(records) / (Double(loadTime.components.seconds) + Double(loadTime.components.attoseconds) / 1e18)))

    var deletes = WriteBatch()
    for i in stride(from: 0, to: records, by: 10) { deletes.delete(key(i), in: "books") }
    try engine.commitAndWait(deletes)
    print("deleted every tenth record in one atomic batch; \(engine.count(in: "books")) remain")

    try engine.close()
    let reopenTime = try clock.measure { engine = try Engine.open(at: directory) }
    print("reopened in \(ms(reopenTime)): \(engine.recoveryReport.recordsReplayed) records replayed, "
          + "\(engine.count(in: "books")) live, dropped \(engine.recoveryReport.droppedBytes) bytes")

    var found = 0
    let getTime = try clock.measure {
        for i in 0..<records where try engine.get(key(i), in: "books") != nil { found += 1 }
    }
    print("read back \(found) records by key in \(ms(getTime))")
    let page = try engine.scan(in: "books", range: .prefix(Array("book-00001".utf8)), reverse: true, limit: 3)
    print("last three keys with prefix book-00001: \(page.map { String(decoding: $0.key, as: UTF8.self) })")

    let report = try engine.verify()
    print("verify: \(report.ok ? "ok" : "PROBLEMS") — \(report.segments) segments, \(report.pages) pages, "
          + "\(report.records) records, \(report.liveKeys) live keys, \(report.bytes) bytes")
    for problem in report.problems { print("  \(problem)") }
    try engine.close()
    if !report.ok { exit(2) }
} catch {
    print("error: \(error)")
    exit(1)
}
