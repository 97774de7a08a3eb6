import Foundation
import Testing
@testable import LucidEngine

/// The small public API that tools (lucidctl) need: a record's index terms from a snapshot, and an open/close
/// that leaves a store's files as they were.
@Suite("Tool support API")
struct ToolSupportTests {
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test("indexTerms(forKey:in:) gives the committed terms in order, [] without terms, nil without a record")
    func indexTermsOfARecord() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? engine.close() }
            let terms = [IndexTerm(index: "genre", value: .string("sf")), IndexTerm(index: "rating", value: .double(4.5)),
                         IndexTerm(index: "genre", value: .string("classic")), IndexTerm(index: "year", value: .int(1965))]
            var batch = WriteBatch()
            batch.put(Self.bytes("{}"), forKey: Self.bytes("b-1"), in: "books", indexTerms: terms)
            batch.put(Self.bytes("plain"), forKey: Self.bytes("b-2"), in: "books")
            try engine.commitAndWait(batch)
            let snapshot = engine.snapshot()
            #expect(try snapshot.indexTerms(forKey: Self.bytes("b-1"), in: "books") == terms)
            #expect(try snapshot.indexTerms(forKey: Self.bytes("b-2"), in: "books") == [])
            #expect(try snapshot.indexTerms(forKey: Self.bytes("b-3"), in: "books") == nil)
            #expect(try snapshot.indexTerms(forKey: Self.bytes("b-1"), in: "films") == nil)

            // A snapshot keeps the terms it saw; a replacing put changes them for later snapshots only.
            var replace = WriteBatch()
            replace.put(Self.bytes("{}"), forKey: Self.bytes("b-1"), in: "books",
                        indexTerms: [IndexTerm(index: "genre", value: .null)])
            try engine.commitAndWait(replace)
            #expect(try snapshot.indexTerms(forKey: Self.bytes("b-1"), in: "books") == terms)
            #expect(try engine.snapshot().indexTerms(forKey: Self.bytes("b-1"), in: "books")
                    == [IndexTerm(index: "genre", value: .null)])

            // After a reopen (terms read back from the log or checkpoint).
            try engine.close()
            let again = try Engine.open(at: dir, options: EngineTest.options())
            defer { try? again.close() }
            #expect(try again.snapshot().indexTerms(forKey: Self.bytes("b-1"), in: "books")
                    == [IndexTerm(index: "genre", value: .null)])
        }
    }

    @Test("checkpointOnClose = false with strict recovery leaves every file as it was")
    func readOnlyOpenChangesNothing() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: EngineTest.options())
            try engine.commitAndWait(EngineTest.batch([.put(keyspace: "ks", key: [1], value: [2])]))
            try engine.close()
            // As after a crash: no checkpoint covers the log.
            try EngineTest.removeCheckpoints(dir)
            let before = try EngineTest.directoryContents(dir, excluding: ["LOCK"])

            var options = EngineTest.options(recoveryMode: .strict)
            options.checkpointOnClose = false
            let reader = try Engine.open(at: dir, options: options)
            #expect(try reader.get([1], in: "ks") == [2])
            try reader.close()
            #expect(try EngineTest.directoryContents(dir, excluding: ["LOCK"]) == before)

            // The default writes the checkpoint the log lacks.
            let writer = try Engine.open(at: dir, options: EngineTest.options())
            try writer.close()
            #expect(EngineTest.fileExists(dir + "/" + Format.checkpointFileName))
        }
    }
}
