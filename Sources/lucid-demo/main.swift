import Foundation
import Lucid
import LucidEngine

// The README's main job: the Lucid data layer on an embedded store. Builds a store in a temporary (or given)
// directory with 100k books, runs the seed's example queries through CoreManager, keeps a continuous query open
// while it writes, compacts, reopens and verifies, and prints what happened with timings.

/// The demo's entity: a plain Codable struct plus a small conformance.
struct Book: LocalEntity, MutableEntity {
    typealias Identifier = EntityIdentifier<Book, Int>
    var identifier: Identifier
    var title: String
    var author: String
    var genre: String
    var rating: Double
    var published: Date
    var tags: [String]

    enum IndexName: String, EntityIndexName { case title, author, genre, rating, published, tags }

    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
        switch indexName {
        case .title: .string(title)
        case .author: .string(author)
        case .genre: .string(genre)
        case .rating: .double(rating)
        case .published: .date(published)
        case .tags: .array(tags.map { .string($0) })
        }
    }

    mutating func merge(identifier: Identifier) throws { try self.identifier.merge(with: identifier) }
}

let arguments = CommandLine.arguments.dropFirst()
let directory = arguments.first ?? (NSTemporaryDirectory() + "lucid-demo-\(getpid())")
let removeAfterwards = arguments.first == nil
let count = 100_000
let genres = ["fantasy", "history", "science", "poetry", "crime", "travel", "romance"]
let words = ["Silent", "Crimson", "River", "Empire", "Garden", "Winter", "Stone", "Night", "Glass", "Harbor"]
let clock = ContinuousClock()

func book(_ i: Int) -> Book {
    Book(identifier: .remote(i), title: "\(words[i % 10]) \(words[(i / 10) % 10]) \(i)", author: "Author \(i % 2_000)",
         genre: genres[i % genres.count], rating: Double((i &* 7) % 50) / 10,
         published: Date(timeIntervalSince1970: 1_000_000_000 + Double(i) * 3_600),
         tags: i % 3 == 0 ? ["award", "series"] : (i % 3 == 1 ? ["series"] : []))
}
func ms(_ d: Duration) -> String {
    String(format: "%.1f ms", Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
}
func rate(_ n: Int, _ d: Duration) -> String {
    String(format: "%.0f/s", Double(n) / (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18))
}

/// Counts the results a continuous query publishes.
actor Observed {
    var updates = 0
    var last: [String] = []
    func record(_ titles: [String]) { updates += 1; last = titles }
}

func run() async throws {
    print("store: \(directory)")
    var engine = try Engine.open(at: directory)
    var manager = CoreManager(store: CacheStore(memory: InMemoryStore<Book>(limit: 10_000),
                                                disk: DiskStore<Book>(engine: engine)))

    // A continuous query stays open for the whole write phase.
    let topFantasy = Query<Book>.filter(.genre == .string("fantasy") && .rating >= .double(4.5))
        .order([.desc(by: .rating), .asc(by: .title)]).with(limit: 5)
    let observed = Observed()
    let continuous = try await manager.search(withQuery: topFantasy).continuous
    let observer = Task { for await result in continuous { await observed.record(result.map(\.title)) } }

    var elapsed = try await clock.measure {
        for start in stride(from: 0, to: count, by: 1_000) {
            try await manager.set((start..<min(count, start + 1_000)).map(book))
        }
    }
    print("set \(count) books through CoreManager in batches of 1000 (durable, 6 indexes each): \(ms(elapsed)) (\(rate(count, elapsed)))")

    var rng = SystemRandomNumberGenerator()
    let ids = (0..<20_000).map { _ in Int.random(in: 0..<count, using: &rng) }
    var found = 0
    elapsed = try await clock.measure {
        for id in ids where try await manager.get(byID: .remote(id)) != nil { found += 1 }
    }
    print("get(byID:) \(ids.count) random books: \(found) found in \(ms(elapsed)) (\(rate(ids.count, elapsed)))")

    // The seed's example queries.
    let examples: [(String, Query<Book>)] = [
        ("genre == fantasy, limit 20", .filter(.genre == .string("fantasy")).with(limit: 20)),
        ("genre != fantasy (count)", .filter(.genre != .string("fantasy"))),
        ("title ~= ^Silent River", .filter(.title ~= .string("^Silent River"))),
        ("rating > 4.8", .filter(.rating > .double(4.8))),
        ("rating >= 1 && rating < 1.2", .filter(.rating >= .double(1) && .rating < .double(1.2))),
        ("genre == poetry || genre == travel", .filter(.genre == .string("poetry") || .genre == .string("travel"))),
        ("!(tags == series)", .filter(!(.tags == .string("series")))),
        ("genre >> [crime, history]", .filter(.genre >> ["crime", "history"])),
        ("identifier >> 5 ids", .filter(.identifier >> [Book.Identifier.remote(5), .remote(50), .remote(500), .remote(5_000), .remote(50_000)])),
        ("all ordered desc rating, asc title, offset 40, limit 10", Query.all.order([.desc(by: .rating), .asc(by: .title)]).with(offset: 40).with(limit: 10)),
        ("author == Author 7 grouped by genre", Query.filter(.author == .string("Author 7")).grouped(by: .genre)),
        ("identifiers in given order", .identifiers([Book.Identifier.remote(9), .remote(3), .remote(6)])),
        ("complex: title ~= Glass && genre != crime, desc published, limit 10",
         Query.filter(.title ~= .string("Glass") && .genre != .string("crime")).order([.desc(by: .published)]).with(limit: 10)),
    ]
    for (name, query) in examples {
        var result = QueryResult<Book>.empty
        let t = try await clock.measure { result = try await manager.search(withQuery: query).once }
        let groups = result.groupKeys.isEmpty ? "" : ", \(result.groupKeys.count) groups"
        print("  \(name): \(result.count) books\(groups), \(ms(t))" + (result.count <= 3 ? " \(result.map(\.title))" : ""))
    }

    // A book created on this device, then the server's id merged in: found by either id.
    let draft = Book(identifier: .local("draft-1"), title: "My Draft", author: "Me", genre: "essay", rating: 5,
                     published: Date(), tags: [])
    try await manager.set(draft)
    var synced = draft
    try synced.merge(identifier: .remote(1_000_000, local: "draft-1"))
    try await manager.set(synced)
    let byLocal = try await manager.get(byID: .local("draft-1"))
    let byRemote = try await manager.get(byID: .remote(1_000_000))
    print("local draft synced: by local id \(byLocal?.identifier.description ?? "missing"), by remote id \(byRemote?.title ?? "missing")")

    // Writes while the continuous query is open.
    let before = await observed.updates
    elapsed = try await clock.measure {
        for i in stride(from: 0, to: 700, by: 7) {   // fantasy books
            var b = book(i)
            b.rating = 5.0
            b.title = "Zz Rerated \(i)"
            try await manager.set(b)
        }
        _ = try await manager.removeAll(withQuery: .filter(.genre == .string("fantasy") && .rating == .double(5.0) && .title ~= .string("^Zz Rerated ")))
    }
    try await Task.sleep(for: .milliseconds(50))
    print("100 single writes and a removeAll with the continuous query open: \(ms(elapsed)); "
          + "observer saw \(await observed.updates - before) new results, now \(await observed.last)")
    observer.cancel()

    // Compact what the overwrites and removals left dead, then reopen and verify.
    try engine.sealActiveSegment()
    var summary = CompactionSummary()
    elapsed = try clock.measure { summary = try engine.compactAndWait() }
    print("compacted \(summary.inputSegments.count) segments in \(ms(elapsed)): \(summary.recordsMoved) records moved, "
          + "\(summary.bytesBefore >> 10) KiB -> \(summary.bytesAfter >> 10) KiB")
    try engine.close()
    elapsed = try clock.measure { engine = try Engine.open(at: directory) }
    manager = CoreManager(store: DiskStore<Book>(engine: engine))
    print("reopened in \(ms(elapsed)) (checkpoint: \(engine.recoveryReport.checkpointUsed))")
    let total = try await manager.all().count
    let top = try await manager.search(withQuery: topFantasy).once.map(\.title)
    print("after reopen: \(total) books; top fantasy \(top)")
    var report: VerifyReport?
    elapsed = try clock.measure { report = try engine.verify() }
    print("verify: \(report?.ok == true ? "ok" : "PROBLEMS \(report?.problems ?? [])") in \(ms(elapsed))")
    try engine.close()
    guard report?.ok == true, total == count + 1 - 100 else {
        throw ManagerError.logicalError("expected \(count - 99) books and a clean verify")
    }
}

let started = clock.now
do {
    try await run()
    print("demo finished in \(ms(clock.now - started))")
    if removeAfterwards { try? FileManager.default.removeItem(atPath: directory) }
} catch {
    print("demo failed: \(error)")
    if removeAfterwards { try? FileManager.default.removeItem(atPath: directory) }
    exit(1)
}
