import Foundation
import Testing
import Lucid

/// The hand-written reader's cursor path (a key read where the cursor stands, its value read in the same pass):
/// every scalar kind and nulls read in the order written, at the edges of their ranges, and unsigned values too
/// large for the type asked for, which must fail as on the general path.
@Suite("Entity records: reads at the cursor")
struct EntityRecordReaderCursorTests {
    /// Written through `Codable` with explicit nulls (an `Optional` passed to `encode` writes a null entry).
    struct Written: Encodable {
        var s: String?
        var i: Int?
        var big: Int64
        var d: Double?
        var b: Bool?
        var date: Date?
        var flag: Bool
        var tail: String
        enum CodingKeys: String, CodingKey { case s, i, big, d, b, date, flag, tail }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(s, forKey: .s)
            try c.encode(i, forKey: .i)
            try c.encode(big, forKey: .big)
            try c.encode(d, forKey: .d)
            try c.encode(b, forKey: .b)
            try c.encode(date, forKey: .date)
            try c.encode(flag, forKey: .flag)
            try c.encode(tail, forKey: .tail)
        }
    }

    /// Reads `Written`'s keys in order; `decodeRecord` then checks the rest of the record and its end.
    struct Read: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<Read, Int>
        var identifier: Identifier { .remote(0) }
        var s: String?, i: Int?, big: Int64, d: Double?, b: Bool?, date: Date?, flag: Bool, tail: String
        enum IndexName: String, EntityIndexName { case big }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(Int(big)) }
        func encode(to record: inout EntityRecordWriter) throws {}
        init(from record: inout EntityRecordReader) throws {
            s = try record.decodeIfPresent(String.self, forKey: "s")
            i = try record.decodeIfPresent(Int.self, forKey: "i")
            big = try record.decode(Int64.self, forKey: "big")
            d = try record.decodeIfPresent(Double.self, forKey: "d")
            b = try record.decodeIfPresent(Bool.self, forKey: "b")
            date = try record.decodeIfPresent(Date.self, forKey: "date")
            flag = try record.decode(Bool.self, forKey: "flag")
            tail = try record.decode(String.self, forKey: "tail")
        }
        init(from decoder: any Decoder) throws { fatalError("not used") }
        func encode(to encoder: any Encoder) throws {}
    }

    @Test("nulls and values of every kind, read in order, at the edges of their ranges")
    func nullsAndEdges() throws {
        let cases = [
            Written(s: nil, i: nil, big: 0, d: nil, b: nil, date: nil, flag: false, tail: ""),
            Written(s: "", i: .min, big: .min, d: -0.0, b: false, date: Date(timeIntervalSinceReferenceDate: -1e9),
                    flag: true, tail: String(repeating: "é", count: 300)),
            Written(s: String(repeating: "x", count: 200), i: .max, big: .max, d: .infinity, b: true,
                    date: Date(timeIntervalSinceReferenceDate: 0), flag: false, tail: "end"),
            Written(s: "short", i: nil, big: -1, d: nil, b: true, date: nil, flag: true, tail: "t"),
        ]
        for written in cases {
            let read = try Read.decodeRecord(try EntityCodec.encode(written))
            #expect(read.s == written.s && read.i == written.i && read.big == written.big)
            #expect(read.d?.bitPattern == written.d?.bitPattern && read.b == written.b && read.date == written.date)
            #expect(read.flag == written.flag && read.tail == written.tail)
        }
    }

    /// An unsigned value under `n`, then a string under `after`.
    struct Unsigned: Encodable { var n: UInt64, after = "after" }

    /// Reads `n` as `Int` (or `Int64`, or as an optional `Int`), then `after`.
    struct ReadsSigned: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<ReadsSigned, Int>
        nonisolated(unsafe) static var mode = 0
        var identifier: Identifier { .remote(0) }
        var n: Int64, after: String
        enum IndexName: String, EntityIndexName { case n }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .none }
        func encode(to record: inout EntityRecordWriter) throws {}
        init(from record: inout EntityRecordReader) throws {
            switch Self.mode {
            case 0: n = Int64(try record.decode(Int.self, forKey: "n"))
            case 1: n = try record.decode(Int64.self, forKey: "n")
            default: n = Int64(try record.decodeIfPresent(Int.self, forKey: "n") ?? -1)
            }
            after = try record.decode(String.self, forKey: "after")
        }
        init(from decoder: any Decoder) throws { fatalError("not used") }
        func encode(to encoder: any Encoder) throws {}
    }

    @Test("an unsigned value above Int64.max is a DecodingError for Int and Int64, in range it reads")
    func unsignedRange() throws {
        for mode in 0 ..< 3 {
            ReadsSigned.mode = mode
            for n: UInt64 in [0, 5, UInt64(Int64.max)] {
                let read = try ReadsSigned.decodeRecord(try EntityCodec.encode(Unsigned(n: n)))
                #expect(read.n == Int64(n) && read.after == "after", "mode \(mode), \(n)")
            }
            for n: UInt64 in [UInt64(Int64.max) + 1, .max] {
                #expect(throws: DecodingError.self, "mode \(mode), \(n)") {
                    try ReadsSigned.decodeRecord(try EntityCodec.encode(Unsigned(n: n)))
                }
            }
        }
    }
}
