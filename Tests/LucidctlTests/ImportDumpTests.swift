import Foundation
import LucidEngine
import LucidEngineTestSupport
import Testing

/// dump and import: the JSON line shape, byte-exact values, typed terms, batches and malformed lines.
@Suite("lucidctl dump and import")
struct ImportDumpTests {
    /// Lines of every shape import reads (odd spacing and member order on purpose: values keep their bytes).
    static let input = [
        #"{"keyspace": "books", "key": "b-000042", "value": {"title": "Dune",  "year": 1965, "tags": [1, 2.50, "\u00e9"]}, "index": {"genre": ["fantasy", "sf"], "rating": [4.5, 4, 4.0]}}"#,
        #"{"key": "b-000043", "keyspace": "books", "value": "just a string", "index": {"published": [{"date": "2024-05-01T12:00:00.5Z"}], "isbn": [{"identifier_base64": "AAEC"}, {"identifier": "abc"}]}}"#,
        #"{"keyspace": "books", "key": "b-000044", "value": 42, "index": {"misc": [null, true, false, {"double": "nan"}, {"double": "-inf"}, -0, 1e3, -9223372036854775808, "x\u0000y"]}}"#,
        #"{"keyspace": "books", "key_base64": "AP8=", "value_base64": "AAECAw=="}"#,
        "",
        #"{"keyspace": "films", "key": "f1", "value": null}"#,
        #"{"keyspace": "films", "key": "f2", "value": [ ]}"#,
        #"{"keyspace": "films", "key": "f3", "value_base64": "eyJhIjogMX0K"}"#,
        #"{"keyspace": "films", "key": "f4", "value_base64": ""}"#,
        #"{"keyspace": "films", "key": "f2", "delete": true}"#,
        #"{"keyspace": "films", "key": "\u00fcber", "value": {"b":1,"a":2}}"#,
    ].joined(separator: "\n") + "\n"

    @Test("import stores the exact bytes of each JSON value and the typed terms; dump writes them back")
    func importThenDump() throws {
        try CLI.withTemporaryDirectory { dir in
            let store = dir + "/store"
            let run = try CLI.run(["import", store, "-"], stdin: Array(Self.input.utf8))
            #expect(run.status == 0, "\(run)")
            #expect(run.stdout.contains("imported 10 records (9 puts, 1 delete) in 1 batch from 11 lines"), "\(run)")
            #expect(run.stderr.contains("importing"), "progress on stderr: \(run)")

            let contents = try CLI.contents(store)
            let books = try #require(contents["books"])
            let films = try #require(contents["films"])
            #expect(books[CLI.bytes("b-000042")]?.0
                    == CLI.bytes(#"{"title": "Dune",  "year": 1965, "tags": [1, 2.50, "\u00e9"]}"#))
            #expect(books[CLI.bytes("b-000043")]?.0 == CLI.bytes(#""just a string""#))
            #expect(books[[0x00, 0xFF]]?.0 == [0, 1, 2, 3])
            #expect(films[CLI.bytes("f1")]?.0 == CLI.bytes("null"))
            #expect(films[CLI.bytes("f2")] == nil)
            #expect(films[CLI.bytes("f3")]?.0 == CLI.bytes("{\"a\": 1}\n"))
            #expect(films[CLI.bytes("f4")]?.0 == [])
            #expect(films[CLI.bytes("über")]?.0 == CLI.bytes(#"{"b":1,"a":2}"#))

            // Terms keep their types: 4 (int), 4.0 and 4.5 (doubles) are three different terms.
            #expect(books[CLI.bytes("b-000042")]?.1 == [
                IndexTerm(index: "genre", value: .string("fantasy")), IndexTerm(index: "genre", value: .string("sf")),
                IndexTerm(index: "rating", value: .double(4.5)), IndexTerm(index: "rating", value: .int(4)),
                IndexTerm(index: "rating", value: .double(4.0)),
            ])
            #expect(books[CLI.bytes("b-000043")]?.1 == [
                IndexTerm(index: "published", value: .date(microsecondsSince1970: 1_714_564_800_500_000)),
                IndexTerm(index: "isbn", value: .identifier([0, 1, 2])),
                IndexTerm(index: "isbn", value: .identifier(CLI.bytes("abc"))),
            ])
            #expect(books[CLI.bytes("b-000044")]?.1 == [
                .null, .bool(true), .bool(false), .double(.nan), .double(-.infinity), .int(0), .double(1000),
                .int(.min), .string("x\u{0}y"),
            ].map { IndexTerm(index: "misc", value: $0) })

            let dump = try CLI.run(["dump", store])
            #expect(dump.status == 0, "\(dump)")
            #expect(dump.stdoutLines == [
                #"{"keyspace":"books","key_base64":"AP8=","value_base64":"AAECAw=="}"#,
                #"{"keyspace":"books","key":"b-000042","value":{"title": "Dune",  "year": 1965, "tags": [1, 2.50, "\u00e9"]},"index":{"genre":["fantasy","sf"],"rating":[4.5,4,4.0]}}"#,
                #"{"keyspace":"books","key":"b-000043","value":"just a string","index":{"published":[{"date":"2024-05-01T12:00:00.500000Z"}],"isbn":[{"identifier_base64":"AAEC"},{"identifier":"abc"}]}}"#,
                #"{"keyspace":"books","key":"b-000044","value":42,"index":{"misc":[null,true,false,{"double":"nan"},{"double":"-inf"},0,1000.0,-9223372036854775808,"x\u0000y"]}}"#,
                #"{"keyspace":"films","key":"f1","value":null}"#,
                #"{"keyspace":"films","key":"f3","value_base64":"eyJhIjogMX0K"}"#,
                #"{"keyspace":"films","key":"f4","value_base64":""}"#,
                #"{"keyspace":"films","key":"über","value":{"b":1,"a":2}}"#,
            ])
            let limited = try CLI.run(["dump", store, "--keyspace", "films", "--limit", "2"])
            #expect(limited.stdoutLines.count == 2)
            #expect(limited.stdoutLines.allSatisfy { $0.hasPrefix(#"{"keyspace":"films""#) })
        }
    }

    @Test("dump then import round-trips a store: same records, values and terms; the second dump is identical")
    func roundTrip() throws {
        try CLI.withTemporaryDirectory { dir in
            let first = dir + "/first", second = dir + "/second", file = dir + "/dump.jsonl"
            try FileManager.default.createDirectory(atPath: first, withIntermediateDirectories: false)
            try CLI.makeStore(first, count: 500)
            // Add values that are not JSON, or JSON that would not survive re-serialisation.
            let engine = try Engine.open(at: first, options: CLI.options())
            var batch = WriteBatch()
            batch.put([0xFF, 0x00, 0x7B], forKey: [0x01, 0x02], in: "raw")
            batch.put(CLI.bytes(" {\"padded\": true} "), forKey: CLI.bytes("padded"), in: "raw")
            batch.put(CLI.bytes("{\"pretty\":\n  1}"), forKey: CLI.bytes("pretty"), in: "raw")
            batch.put(CLI.bytes("1.50e+01"), forKey: CLI.bytes("number"), in: "raw",
                      indexTerms: [IndexTerm(index: "when", value: .date(microsecondsSince1970: -62_198_755_200_000_001)),
                                   IndexTerm(index: "when", value: .date(microsecondsSince1970: 0)),
                                   IndexTerm(index: "id", value: .identifier([0xFF, 0xFE]))])
            try engine.commitAndWait(batch)
            try engine.close()

            let dump = try CLI.run(["dump", first])
            #expect(dump.status == 0, "\(dump)")
            try CorruptionHelpers.writeFile(path: file, bytes: Array(dump.stdout.utf8))
            let load = try CLI.run(["import", second, file, "--batch", "64"])
            #expect(load.status == 0, "\(load)")
            #expect(load.stdout.contains("in 9 batches"), "\(load)")
            let again = try CLI.run(["dump", second])
            #expect(again.stdout == dump.stdout)

            let a = try CLI.contents(first), b = try CLI.contents(second)
            #expect(a.keys.sorted() == b.keys.sorted())
            for (keyspace, records) in a {
                #expect(records.count == b[keyspace]?.count)
                for (key, (value, terms)) in records {
                    #expect(b[keyspace]?[key]?.0 == value, "\(keyspace) \(key)")
                    #expect(b[keyspace]?[key]?.1 == terms, "\(keyspace) \(key)")
                }
            }
        }
    }

    @Test("a malformed line stops the import with its line number; the batches before it stay committed")
    func malformedLine() throws {
        try CLI.withTemporaryDirectory { dir in
            let store = dir + "/store"
            var lines = (1...4).map { #"{"keyspace":"k","key":"\#($0)","value":\#($0)}"# }
            lines.append(#"{"keyspace":"k","key":"5","value":}"#)
            lines.append(#"{"keyspace":"k","key":"6","value":6}"#)
            let run = try CLI.run(["import", store, "-", "--batch", "3"], stdin: Array(lines.joined(separator: "\n").utf8))
            #expect(run.status == 1, "\(run)")
            #expect(run.stderr.contains("lucidctl: stdin:5: invalid JSON"), "\(run)")
            #expect(run.stderr.contains("the 1 batch before it (3 records, through line 3) stays committed"), "\(run)")
            let keys = try CLI.contents(store)["k"].map { $0.keys.map { String(decoding: $0, as: UTF8.self) }.sorted() }
            #expect(keys == ["1", "2", "3"])
        }
    }

    @Test("bad lines are named by line number, with what is wrong", arguments: [
        (#"[1, 2]"#, "a line must be a JSON object"),
        (#"{"key":"a","value":1}"#, "no \"keyspace\""),
        (#"{"keyspace":"k","value":1}"#, "no \"key\" or \"key_base64\""),
        (#"{"keyspace":"k","key":"a"}"#, "no \"value\" or \"value_base64\""),
        (#"{"keyspace":"k","key":"a","value":1,"value_base64":"AA=="}"#, "both \"value\" and \"value_base64\""),
        (#"{"keyspace":"k","key":"a","delete":true,"value":1}"#, "a deletion has no"),
        (#"{"keyspace":"k","key":"a","value":1,"colour":"red"}"#, "unknown field \"colour\""),
        (#"{"keyspace":"k","key":"a","key":"b","value":1}"#, "field \"key\" appears twice"),
        (#"{"keyspace":"k","key":"a","value":1,"index":{"n":[99999999999999999999]}}"#, "does not fit in 64 bits"),
        (#"{"keyspace":"k","key":"a","value":1,"index":{"d":[{"date":"2024-02-30T00:00:00Z"}]}}"#, "is not YYYY-MM-DD"),
        (#"{"keyspace":"k","key":"a","value":1,"index":{"d":[{"colour":1}]}}"#, "unknown typed term"),
        (#"{"keyspace":"k","key_base64":"***","value":1}"#, "must be a base64 string"),
        (#"{"keyspace":"k","key":"a","value":"\ud800"}"#, "unpaired surrogate"),
        (#"{"keyspace":"","key":"a","value":1}"#, "keyspace name must be 1 to 255"),
    ])
    func badLines(line: String, message: String) throws {
        try CLI.withTemporaryDirectory { dir in
            let good = #"{"keyspace":"k","key":"ok","value":1}"#
            let run = try CLI.run(["import", dir + "/store", "-", "--batch", "1"],
                                       stdin: Array((good + "\n" + line + "\n").utf8))
            #expect(run.status == 1, "\(run)")
            #expect(run.stderr.hasPrefix("lucidctl: stdin:2: "), "\(run)")
            #expect(run.stderr.contains(message), "\(run)")
            #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
        }
    }

    @Test("--keyspace puts every record into one keyspace; a missing input file is bad input")
    func keyspaceOverrideAndMissingFile() throws {
        try CLI.withTemporaryDirectory { dir in
            let store = dir + "/store"
            let lines = #"{"key":"a","value":1}"# + "\n" + #"{"keyspace":"other","key":"b","value":2}"# + "\n"
            let run = try CLI.run(["import", store, "-", "--keyspace", "mine"], stdin: Array(lines.utf8))
            #expect(run.status == 0, "\(run)")
            #expect(try CLI.contents(store).mapValues(\.count) == ["mine": 2])
            let missing = try CLI.run(["import", store, dir + "/nope.jsonl"])
            #expect(missing.status == 1, "\(missing)")
            #expect(missing.stderr.contains("nope.jsonl: cannot open"))
        }
    }

    @Test("relative store paths, an empty input, and a UTF-8 byte order mark")
    func relativePathsAndEdges() throws {
        try CLI.withTemporaryDirectory { dir in
            let empty = try CLI.run(["import", "store", "-"], in: dir)
            #expect(empty.status == 0, "\(empty)")
            #expect(empty.stdout.contains("imported 0 records"))
            #expect(try CLI.run(["stats", "store"], in: dir).status == 0)
            let bom = [0xEF, 0xBB, 0xBF] + Array(#"{"keyspace":"k","key":"a","value":1}"#.utf8) + [0x0D, 0x0A]
            let run = try CLI.run(["import", "store", "-"], stdin: bom, in: dir)
            #expect(run.status == 0, "\(run)")
            #expect(try CLI.run(["dump", "store"], in: dir).stdout == #"{"keyspace":"k","key":"a","value":1}"# + "\n")
            let recover = try CLI.run(["recover", "store", "--out", "copy"], in: dir)
            #expect(recover.status == 0, "\(recover)")
            let inside = try CLI.run(["recover", ".", "--out", "again"], in: dir + "/store")
            #expect(inside.status == 1, "\(inside)")
            #expect(inside.stderr.contains("--out must be outside the source store"))
        }
    }
}
