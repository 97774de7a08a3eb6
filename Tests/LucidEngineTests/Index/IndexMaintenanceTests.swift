import Foundation
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// Defining an index over records already stored, and dropping one, persist across reopen (checkpoint and scan).
@Suite("Index maintenance")
struct IndexMaintenanceTests {
    static func lengthQuery(_ n: Int64) -> IndexQuery {
        IndexQuery(keyspace: "docs", index: "len", condition: .equals(.int(n)))
    }

    @Test("rebuildIndex defines an index over existing records; dropIndex removes it for good")
    func rebuildAndDrop() async throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "index-maint")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let options = CompactionTests.options
        var engine = try Engine.open(at: directory, options: options)
        var batch = WriteBatch()
        for i in 0..<2500 {
            batch.put(Array(String(repeating: "x", count: i % 7).utf8), forKey: Array("k\(i)".utf8), in: "docs",
                      indexTerms: [IndexTerm(index: "parity", value: .int(Int64(i % 2)))])
        }
        _ = try await engine.commit(batch)
        #expect(engine.snapshot().keys(matching: Self.lengthQuery(3)).isEmpty)

        let rewritten = try await engine.rebuildIndex("len", in: "docs", batchSize: 300) { _, value in
            [.int(Int64(value.count)), .string("tag")]
        }
        #expect(rewritten == 2500)
        let expected = (0..<2500).filter { $0 % 7 == 3 }.map { Array("k\($0)".utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        func check(_ engine: Engine, hasLen: Bool) throws {
            let snapshot = engine.snapshot()
            #expect(snapshot.keys(matching: Self.lengthQuery(3)).sorted { $0.lexicographicallyPrecedes($1) }
                    == (hasLen ? expected : []))
            #expect(snapshot.entryCount(keyspace: "docs", index: "len") == (hasLen ? 5000 : 0))
            #expect(snapshot.indexNames(in: "docs").contains("len") == hasLen)
            #expect(snapshot.entryCount(keyspace: "docs", index: "parity") == 2500, "other indexes are kept")
            #expect(try engine.get(Array("k10".utf8), in: "docs") == Array("xxx".utf8))
            #expect(try engine.verify().ok)
        }
        try check(engine, hasLen: true)
        try engine.close()
        var (checkpoint, scan) = try CompactionTests.reopenBothWays(directory)
        #expect(checkpoint == scan)
        #expect(checkpoint.indexes["docs/len"]?.count == 5000)

        engine = try Engine.open(at: directory, options: options)
        try check(engine, hasLen: true)
        // Rebuilding again with the same terms rewrites nothing.
        #expect(try await engine.rebuildIndex("len", in: "docs") { _, value in [.int(Int64(value.count)), .string("tag")] } == 0)
        #expect(try await engine.dropIndex("len", in: "docs", batchSize: 700) == 2500)
        try check(engine, hasLen: false)
        try engine.close()
        (checkpoint, scan) = try CompactionTests.reopenBothWays(directory)
        #expect(checkpoint == scan)
        #expect(checkpoint.indexes["docs/len"] == nil)
        engine = try Engine.open(at: directory, options: options)
        try check(engine, hasLen: false)
        try engine.close()
    }

    @Test("a rebuild never overwrites a value committed after it started")
    func rebuildKeepsConcurrentWrites() async throws {
        let directory = try CorruptionHelpers.makeTemporaryDirectory(prefix: "index-maint-conc")
        defer { try? CorruptionHelpers.removeDirectory(directory) }
        let engine = try Engine.open(at: directory, options: CompactionTests.options)
        var batch = WriteBatch()
        for i in 0..<3000 { batch.put([0], forKey: Array("k\(i)".utf8), in: "docs") }
        _ = try await engine.commit(batch)
        let rebuild = Task {
            try await engine.rebuildIndex("v", in: "docs", batchSize: 50) { _, value in [.int(Int64(value[0]))] }
        }
        for i in stride(from: 2999, through: 0, by: -7) {
            _ = try await engine.put([1], forKey: Array("k\(i)".utf8), in: "docs")
        }
        _ = try await rebuild.value
        for i in stride(from: 2999, through: 0, by: -7) {
            #expect(try engine.get(Array("k\(i)".utf8), in: "docs") == [1])
        }
        #expect(try engine.verify().ok)
        try engine.close()
    }
}
