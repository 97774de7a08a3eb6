import Foundation
import Testing
@testable import LucidEngine

/// Snapshot isolation of secondary indexes: the index answers of a snapshot (keys, entries, counts, entry
/// counts, index names, AND/OR filters, records with their values) do not change after later overwrites that
/// change terms, deletes, new records and segment rolls.
@Suite("Secondary indexes: snapshot isolation")
struct IndexSnapshotTests {
    typealias Model = IndexModelTests.Model

    @Test("a snapshot's index answers do not change after later updates and deletes")
    func snapshotIsIsolated() throws {
        let seed: UInt64 = 0x1DE5_5A01
        try IndexTest.withTemporaryDirectory { dir in
            var rng = IndexTest.SplitMix64(seed: seed)
            let tag = "[seed 0x\(String(seed, radix: 16))]"
            // Small segments and no cache: old values are read from sealed segments on disk.
            let engine = try Engine.open(at: dir, options: IndexTest.options(segmentSize: 1 << 20, pageCacheBytes: 0))
            defer { try? engine.close() }

            var model: Model = [:]
            func write(_ keyspace: String, _ key: [UInt8], valueSize: Int, into batch: inout WriteBatch) {
                let value = rng.bytes(valueSize)
                let terms = IndexModelTests.randomTerms(&rng)
                batch.put(value, forKey: key, in: keyspace,
                          indexTerms: terms.map { IndexTerm(index: $0.index, value: $0.value) })
                model[keyspace, default: [:]][key] = IndexModelTests.Record(value: value, terms: terms)
            }
            let keys: [[UInt8]] = (0..<160).map { [UInt8($0 / 16), UInt8($0 % 16), 0x00] }
            for chunk in stride(from: 0, to: keys.count, by: 20) {
                var batch = WriteBatch()
                for key in keys[chunk..<chunk + 20] { write(rng.pick(IndexModelTests.keyspaces), key, valueSize: 200, into: &batch) }
                try engine.commitAndWait(batch)
            }

            var snapshots: [(Snapshot, Model, String)] = [(engine.snapshot(), model, "first")]
            func checkAll(_ when: String) throws {
                var failed = false
                for (snapshot, expected, name) in snapshots {
                    let diffs = try IndexModelTests.differences(snapshot, expected, engine: nil, rng: &rng, thorough: false)
                    #expect(diffs.isEmpty, "\(tag) \(name) snapshot \(when): \(diffs.count) differences: \(diffs.prefix(5).joined(separator: " | "))")
                    failed = failed || !diffs.isEmpty
                }
                let current = try IndexModelTests.differences(engine, model, rng: &rng, thorough: false)
                #expect(current.isEmpty, "\(tag) current state \(when): \(current.count) differences: \(current.prefix(5).joined(separator: " | "))")
                if failed || !current.isEmpty { throw IndexTest.Stop("\(tag) stopped at the first difference") }
            }
            try checkAll("before any update")

            for round in 0..<6 {
                // Overwrite most records with new terms (large values: the store rolls), delete some, add some.
                var batch = WriteBatch()
                for key in keys where rng.chance(0.6) {
                    let ks = rng.pick(IndexModelTests.keyspaces)
                    if rng.chance(0.25) {
                        batch.delete(key, in: ks)
                        model[ks]?[key] = nil
                    } else {
                        write(ks, key, valueSize: rng.int(3000...6000), into: &batch)
                    }
                }
                for _ in 0..<10 { write("books", rng.bytes(rng.int(1...4)), valueSize: 100, into: &batch) }
                try engine.commitAndWait(batch)
                if round == 2 { snapshots.append((engine.snapshot(), model, "round-2")) }
                try checkAll("after round \(round)")
            }
            // Delete everything: the index trees empty out and disappear from the current state only.
            var clear = WriteBatch()
            for (ks, records) in model { for key in records.keys { clear.delete(key, in: ks) } }
            try engine.commitAndWait(clear)
            model = [:]
            try checkAll("after deleting everything")
            #expect(engine.snapshot().indexNames(in: "books").isEmpty, "\(tag) no index holds an entry any more")
            #expect(try IndexTest.segmentCount(dir) >= 2, "\(tag) the updates should have rolled the store")
            let report = try engine.verify()
            #expect(report.ok, "\(tag) verify: \(report.problems.prefix(5).map(\.description).joined(separator: "; "))")
        }
    }

    @Test("a snapshot keeps a record under its old term after the record moves to a new term")
    func movedRecordStaysInOldSnapshot() throws {
        try IndexTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: IndexTest.options())
            defer { try? engine.close() }
            let sf = IndexTerm(index: "genre", value: .string("sf"))
            let fantasy = IndexTerm(index: "genre", value: .string("fantasy"))
            var batch = WriteBatch()
            batch.put(Array("dune".utf8), forKey: [1], in: "books", indexTerms: [sf, IndexTerm(index: "year", value: .int(1965))])
            batch.put(Array("hobbit".utf8), forKey: [2], in: "books", indexTerms: [fantasy])
            batch.put(Array("solaris".utf8), forKey: [3], in: "books", indexTerms: [sf])
            try engine.commitAndWait(batch)

            let before = engine.snapshot()
            let sfQuery = IndexQuery(keyspace: "books", index: "genre", condition: .equals(.string("sf")))
            #expect(before.keys(matching: sfQuery) == [[1], [3]])

            var update = WriteBatch()
            update.put(Array("dune v2".utf8), forKey: [1], in: "books", indexTerms: [fantasy])   // moves, drops year
            update.delete([3], in: "books")
            update.put(Array("neuromancer".utf8), forKey: [4], in: "books", indexTerms: [sf])
            try engine.commitAndWait(update)

            // The old snapshot: unchanged.
            #expect(before.keys(matching: sfQuery) == [[1], [3]])
            #expect(try before.records(matching: sfQuery) == [KeyValue(key: [1], value: Array("dune".utf8)),
                                                               KeyValue(key: [3], value: Array("solaris".utf8))])
            #expect(before.count(keyspace: "books", index: "genre", condition: .equals(.string("fantasy"))) == 1)
            #expect(before.entryCount(keyspace: "books", index: "genre") == 3)
            #expect(before.entryCount(keyspace: "books", index: "year") == 1)
            #expect(before.indexNames(in: "books") == ["genre", "year"])
            #expect(before.keys(in: "books", where: .and([.match(index: "genre", .equals(.string("sf"))),
                                                         .match(index: "year", .atLeast(.int(1900)))])) == [[1]])
            #expect(before.entries(matching: IndexQuery(keyspace: "books", index: "genre", condition: .any))
                    == [IndexEntry(value: .string("fantasy"), key: [2]), IndexEntry(value: .string("sf"), key: [1]),
                        IndexEntry(value: .string("sf"), key: [3])])

            // The current state.
            let after = engine.snapshot()
            #expect(after.keys(matching: sfQuery) == [[4]])
            #expect(after.keys(matching: IndexQuery(keyspace: "books", index: "genre", condition: .equals(.string("fantasy"))))
                    == [[1], [2]])
            #expect(after.entryCount(keyspace: "books", index: "year") == 0)
            #expect(after.indexNames(in: "books") == ["genre"])
            #expect(after.keys(in: "books", where: .match(index: "year", .any)) == [])
        }
    }
}
