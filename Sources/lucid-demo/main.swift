import Foundation
import LucidEngine

// The README's main job until the data-layer demo exists: create a store in a temporary (or given) directory,
// write 200k books with index terms, delete some atomically, compact, reopen (from the checkpoint), query by key, by
// range and by secondary index, verify, and print what happened with timings.

let arguments = CommandLine.arguments.dropFirst()
let directory = arguments.first ?? (NSTemporaryDirectory() + "lucid-demo-\(getpid())")
let removeAfterwards = arguments.first == nil
let records = 200_000
let genres = ["fantasy", "history", "science", "poetry", "crime", "travel"]
let clock = ContinuousClock()

func key(_ i: Int) -> [UInt8] {
    let digits = String(i)
    return Array(("book-" + String(repeating: "0", count: 10 - digits.count) + digits).utf8)
}
func rating(_ i: Int) -> Double { Double((i &* 7) % 50) / 10 }
func value(_ i: Int) -> [UInt8] {
    Array(#"{"id":\#(i),"title":"Book number \#(i)","author":"Author \#(i % 997)","genre":"\#(genres[i % genres.count])","rating":\#(rating(i)),"published":\#(1_600_000_000 + i)}"#.utf8)
}
func terms(_ i: Int) -> [IndexTerm] {
    [IndexTerm(index: "genre", value: .string(genres[i % genres.count])),
     IndexTerm(index: "rating", value: .double(rating(i)))]
}
func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
func ms(_ d: Duration) -> String { String(format: "%.1f ms", seconds(d) * 1000) }

do {
    print("store: \(directory)")
    var engine = try Engine.open(at: directory)
    print("opened (created: \(engine.recoveryReport.created))")

    let loadTime = try clock.measure {
        var batch = WriteBatch()
        for i in 0..<records {
            batch.put(value(i), forKey: key(i), in: "books", indexTerms: terms(i))
            if batch.count == 1000 { try engine.commitAndWait(batch); batch = WriteBatch() }
        }
        if !batch.isEmpty { try engine.commitAndWait(batch) }
    }
    print("loaded \(records) books with 2 index terms each, durable batches of 1000: \(ms(loadTime))"
          + String(format: " (%.0f records/s)", Double(records) / seconds(loadTime)))

    var deletes = WriteBatch()
    for i in stride(from: 0, to: records, by: 10) { deletes.delete(key(i), in: "books") }
    try engine.commitAndWait(deletes)
    print("deleted every tenth book in one atomic batch; \(engine.count(in: "books")) remain")

    try engine.sealActiveSegment()
    let before = try engine.storeStatistics()
    var summary = CompactionSummary()
    let compactTime = try clock.measure { summary = try engine.compactAndWait() }
    print("compacted \(summary.inputSegments.count) segments into \(summary.outputSegments.count) in \(ms(compactTime)): "
          + "\(summary.recordsMoved) records moved, \(summary.bytesBefore >> 10) KiB -> \(summary.bytesAfter >> 10) KiB "
          + String(format: "(dead before: %.0f%%)", 100 * Double(before.deadBytes) / Double(max(1, before.sizeBytes))))

    try engine.close()
    let reopenTime = try clock.measure { engine = try Engine.open(at: directory) }
    let report = engine.recoveryReport
    print("reopened in \(ms(reopenTime)) (from checkpoint: \(report.checkpointUsed), records replayed: "
          + "\(report.recordsReplayed)); \(engine.count(in: "books")) live, dropped \(report.droppedBytes) bytes")

    var found = 0
    let getTime = try clock.measure {
        for i in 0..<records where try engine.get(key(i), in: "books") != nil { found += 1 }
    }
    print("read back \(found) books by key in \(ms(getTime))")
    let page = try engine.scan(in: "books", range: .prefix(Array("book-00001".utf8)), reverse: true, limit: 3)
    print("last three keys with prefix book-00001: \(page.map { String(decoding: $0.key, as: UTF8.self) })")

    var poetry: [KeyValue] = []
    let queryTime = try clock.measure {
        poetry = try engine.records(matching: IndexQuery(keyspace: "books", index: "genre",
                                                        condition: .equals(.string("poetry")), limit: 20))
    }
    print("first 20 poetry books by index in \(ms(queryTime)): \(poetry.prefix(3).map { String(decoding: $0.key, as: UTF8.self) })…")
    let topRated = engine.keys(matching: IndexQuery(keyspace: "books", index: "rating",
                                                    condition: .atLeast(.double(4.5)), reverse: true, limit: 5))
    print("five best rated (rating >= 4.5, descending): \(topRated.map { String(decoding: $0, as: UTF8.self) })")
    let both = engine.keys(in: "books", where: .and([.match(index: "genre", .equals(.string("crime"))),
                                                     .match(index: "rating", .between(.double(1.0), .double(1.5)))]))
    print("crime books rated 1.0…1.5: \(both.count)")

    let verifyTime = try clock.measure {
        let check = try engine.verify()
        print("verify: \(check.ok ? "ok" : "PROBLEMS") — \(check.segments) segments, \(check.pages) pages, "
              + "\(check.records) records, \(check.liveKeys) live keys, \(check.bytes) bytes")
        for problem in check.problems.prefix(20) { print("  \(problem)") }
        if !check.ok { exit(2) }
    }
    print("verified in \(ms(verifyTime))")
    try engine.close()
    if removeAfterwards { try? FileManager.default.removeItem(atPath: directory) }
} catch {
    print("error: \(error)")
    exit(1)
}
