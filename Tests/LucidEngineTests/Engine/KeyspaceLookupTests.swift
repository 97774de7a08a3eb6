import Foundation
import Testing
@testable import LucidEngine

/// The read paths find a keyspace, and an index of one, by comparing names when there are at most
/// `Dictionary.scanLimit` of them and by the dictionary's hashed lookup beyond (session 37): both must find exactly
/// what a dictionary lookup finds, for every read API, on either side of the limit.
@Suite("Keyspace and index lookup by name")
struct KeyspaceLookupTests {
    /// Names alike at their ends, prefixes of each other, long (stored out of line), non-ASCII.
    static let names = ["a", "ab", "b", "books", "booksX", "authors", "a-keyspace-name-longer-than-fifteen-bytes",
                        "a-keyspace-name-longer-than-fifteen-byteS", "café", "日本", "k10", "k11", "k12", "k13", "k14",
                        "k15", "k16", "k17", "k18", "k19"]

    @Test("every read API finds each keyspace and index among 1 to 20 of them", arguments: [1, 2, 8, 9, 20])
    func findsEach(count: Int) throws {
        try IndexTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: IndexTest.options())
            defer { try? engine.close() }
            let spaces = Array(Self.names.prefix(count))
            let key: [UInt8] = [1, 2, 3]
            var batch = WriteBatch()
            for (i, space) in spaces.enumerated() {
                // As many indexes as keyspaces, so that index lookups cross the limit too.
                let terms = spaces.indices.map { IndexTerm(index: "i\($0)-\(spaces[$0])", value: .int(Int64(i))) }
                batch.put(Array(space.utf8) + [UInt8(i)], forKey: key, in: space, indexTerms: terms)
                batch.put([UInt8(i)], forKey: key + [UInt8(i)], in: space)
            }
            try engine.commitAndWait(batch)
            let snapshot = engine.snapshot()
            for (i, space) in spaces.enumerated() {
                let value = Array(space.utf8) + [UInt8(i)]
                #expect(try snapshot.get(key, in: space) == value, "\(space)")
                #expect(try engine.get(key, in: space) == value, "\(space)")
                #expect(try snapshot.values(forKeys: [key, key + [UInt8(i)], [9]], in: space) == [value, [UInt8(i)], nil])
                let handle = try #require(try snapshot.handle(forKey: key, in: space))
                #expect(try snapshot.value(of: handle) == value)
                #expect(snapshot.contains(key, in: space) && snapshot.count(in: space) == 2)
                #expect(try snapshot.recordTable(in: space).count == 2)
                for (j, other) in spaces.enumerated() {
                    let index = "i\(j)-\(other)"
                    let query = IndexQuery(keyspace: space, index: index, condition: .equals(.int(Int64(i))))
                    #expect(snapshot.keys(matching: query) == [key], "\(space) \(index)")
                    #expect(snapshot.entryCount(keyspace: space, index: index) == 1)
                }
                #expect(snapshot.keys(matching: IndexQuery(keyspace: space, index: "none", condition: .any)).isEmpty)
            }
            for missing in ["c", "book", "booksY", "k20", "a-keyspace-name-longer-than-fifteen-bytes!"] {
                #expect(try snapshot.get(key, in: missing) == nil && snapshot.count(in: missing) == 0, "\(missing)")
                #expect(try snapshot.handle(forKey: key, in: missing) == nil)
                #expect(snapshot.entryCount(keyspace: missing, index: "i0-a") == 0)
            }
            // Canonically equivalent names are one name, as for the dictionary (`é` precomposed and decomposed).
            if spaces.contains("café") {
                #expect(try snapshot.get(key, in: "cafe\u{301}") == Array("café".utf8) + [UInt8(spaces.firstIndex(of: "café")!)])
            }
        }
    }

    @Test("the scan and the dictionary agree on every name, present or not")
    func scanMatchesDictionary() {
        for count in 0...Self.names.count {
            let dictionary = Dictionary(uniqueKeysWithValues: Self.names.prefix(count).enumerated().map { ($1, $0) })
            for name in Self.names + ["", "c", "cafe\u{301}", "books "] {
                #expect(dictionary.position(ofName: name).map { dictionary.values[$0] } == dictionary[name],
                        "\(name) among \(count)")
            }
        }
    }
}
