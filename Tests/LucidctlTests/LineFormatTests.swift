import Foundation
import LucidEngine
import LucidEngineTestSupport
import Testing
@testable import lucidctl

/// The JSON line format in-process: the parser, dates, and encode/decode round trips of random records.
@Suite("lucidctl JSON lines")
struct LineFormatTests {
    @Test("isSingleLineValue accepts exactly one JSON value on one line without surrounding whitespace")
    func singleLineValues() {
        let yes = [#"{}"#, #"[]"#, #"0"#, #"-0.5e+10"#, #"null"#, #""a\"b\u00e9\ud83d\ude00""#, #"{"a": [1, {"b": null}]}"#,
                   "\"é\"", #"{"a":1,"a":2}"#]
        let no = ["", " 1", "1 ", "{\n}", "{\r}", "01", "1.", ".5", "+1", "tru", "nul", "[1,]", "{\"a\"}", "\"\\ud800\"",
                  "\"\\x\"", "\"\u{01}\"", "1 2", "{\"a\":1}}", "NaN", "\"abc"]
        for text in yes { #expect(JSONParser.isSingleLineValue(Array(text.utf8)), "\(text)") }
        for text in no { #expect(!JSONParser.isSingleLineValue(Array(text.utf8)), "\(text)") }
        #expect(!JSONParser.isSingleLineValue([0x22, 0xFF, 0x22]), "invalid UTF-8 in a string")
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(!JSONParser.isSingleLineValue(Array(deep.utf8)), "nesting limit")
    }

    @Test("dates format and parse exactly, to the microsecond, in years 1 to 9999")
    func dates() {
        #expect(DateText.format(microsecondsSince1970: 0) == "1970-01-01T00:00:00.000000Z")
        #expect(DateText.format(microsecondsSince1970: -1) == "1969-12-31T23:59:59.999999Z")
        #expect(DateText.format(microsecondsSince1970: 951_782_400_000_000) == "2000-02-29T00:00:00.000000Z")
        #expect(DateText.parse("2000-02-29T00:00:00Z") == 951_782_400_000_000)
        #expect(DateText.parse("1900-02-29T00:00:00Z") == nil)
        #expect(DateText.parse("2024-05-01T12:00:00.1234567Z") == nil)
        #expect(DateText.parse("2024-05-01T12:00:00+01:00") == nil)
        #expect(DateText.format(microsecondsSince1970: .max) == nil)
        var random = SplitMix64(seed: 4)
        let low = DateText.parse("0001-01-01T00:00:00Z")!, high = DateText.parse("9999-12-31T23:59:59.999999Z")!
        for _ in 0..<5000 {
            let us = low + Int64(random.next() % UInt64(high - low + 1))
            let text = DateText.format(microsecondsSince1970: us)
            #expect(text.flatMap(DateText.parse) == us, "\(us) → \(text ?? "nil")")
        }
    }

    @Test("random records encode to one line and decode to the same keyspace, key, value bytes and terms")
    func roundTripRandomRecords() throws {
        var random = SplitMix64(seed: 11)
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        let jsonValues = [#"{"a":1}"#, #"[1,2.5,"x"]"#, #""text""#, "null", "true", "-1.5e-3", #"{"nested":{"deep":[[]]}}"#,
                          " {\"padded\":1}", "{\"two\":\n2}", ""]
        for round in 0..<2000 {
            let key: [UInt8] = round % 3 == 0 ? bytes(Int(random.next() % 20)) : Array("key-\(round)".utf8)
            let value: [UInt8] = round % 2 == 0 ? Array(jsonValues[round % jsonValues.count].utf8) : bytes(Int(random.next() % 40))
            var terms: [IndexTerm] = []
            for t in 0..<Int(random.next() % 5) {
                let value: IndexValue
                switch random.next() % 8 {
                case 0: value = .null
                case 1: value = .bool(random.next() % 2 == 0)
                case 2: value = .int(Int64(bitPattern: random.next()))
                case 3: value = .double(Double(bitPattern: random.next()))
                case 4: value = .double(Double(Int64(bitPattern: random.next()) % 1000))
                case 5: value = .date(microsecondsSince1970: Int64(bitPattern: random.next()) >> Int64(random.next() % 20))
                case 6: value = .string(String(decoding: bytes(Int(random.next() % 8)), as: UTF8.self))
                default: value = .identifier(bytes(Int(random.next() % 8)))
                }
                terms.append(IndexTerm(index: "i\(t % 3)", value: value))
            }
            let line = RecordLine.encode(keyspace: "ks\(round % 4)", key: key, value: value, terms: terms)
            #expect(!line.contains(0x0A) && !line.contains(0x0D))
            #expect((try? JSONSerialization.jsonObject(with: Data(line))) != nil, "not JSON: \(String(decoding: line, as: UTF8.self))")
            let decoded = try RecordLine.decode(line, keyspace: nil)
            #expect(decoded.keyspace == "ks\(round % 4)")
            #expect(decoded.key == key)
            #expect(decoded.value == value)
            // Terms come back grouped by index (first appearance order), each index's terms in order.
            var grouped: [String: [IndexTerm]] = [:]
            var order: [String] = []
            for term in terms {
                if grouped[term.index] == nil { order.append(term.index) }
                grouped[term.index, default: []].append(term)
            }
            #expect(decoded.terms == order.flatMap { grouped[$0]! }, "\(String(decoding: line, as: UTF8.self))")
        }
    }
}
