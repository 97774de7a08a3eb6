import Foundation
import Testing
import Lucid

/// The hand-written reader's one-pass read of an identifier with an `Int` remote value (session 37): for every
/// shape of the identifier's container (parts in either order, nulls, a part missing, repeated keys, other entries,
/// nested values, values of another type or out of range), and for every truncation and flipped byte of such
/// records, it gives what the `Codable` path gives: the same identifier, or a `DecodingError` of the same kind.
@Suite("Entity records: Int identifiers read in one pass")
struct EntityRecordReaderIdentifierTests {
    /// One value of an identifier container's entry.
    enum Part: Encodable {
        case int(Int64), uint(UInt64), string(String), null, double(Double), nested([String: Int])
        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .int(let v): try c.encode(v)
            case .uint(let v): try c.encode(v)
            case .string(let v): try c.encode(v)
            case .null: try c.encodeNil()
            case .double(let v): try c.encode(v)
            case .nested(let v): try c.encode(v)
            }
        }
    }

    /// A key of the record format: any string.
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// An entity record whose identifier container holds `entries`, in order (repeats written as repeats),
    /// followed by a `title`.
    struct Written: Encodable {
        var entries: [(String, Part)]
        struct Container: Encodable {
            var entries: [(String, Part)]
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Key.self)
                for (key, part) in entries { try c.encode(part, forKey: Key(key)) }
            }
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(Container(entries: entries), forKey: Key("identifier"))
            try c.encode("t", forKey: Key("title"))
        }
    }

    /// Read by hand: the identifier first, where the cursor stands.
    struct Hand: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<Hand, Int>
        var identifier: Identifier
        var title: String
        enum IndexName: String, EntityIndexName { case title }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .string(title) }
        func encode(to record: inout EntityRecordWriter) throws {}
        init(from record: inout EntityRecordReader) throws {
            identifier = try record.decode(Identifier.self, forKey: "identifier")
            title = try record.decode(String.self, forKey: "title")
        }
        init(from decoder: any Decoder) throws { fatalError("not used") }
        func encode(to encoder: any Encoder) throws {}
    }

    /// The same entity through its synthesized `Codable` conformance.
    struct Coded: Codable {
        var identifier: EntityIdentifier<Hand, Int>
        var title: String
    }

    /// The kind of a decoding error (its case), or of another error.
    static func kind(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound: "keyNotFound"
        case DecodingError.typeMismatch: "typeMismatch"
        case DecodingError.valueNotFound: "valueNotFound"
        case DecodingError.dataCorrupted: "dataCorrupted"
        default: "other: \(error)"
        }
    }

    /// Both paths on `bytes`: the same identifier and title, or errors of the same kind.
    static func expectSameAnswer(_ bytes: [UInt8], _ comment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let hand = Result { try Hand.decodeRecord(bytes) }
        let coded = Result { try EntityCodec.decode(Coded.self, from: bytes) }
        switch (hand, coded) {
        case (.success(let h), .success(let c)):
            #expect(h.identifier.localValue == c.identifier.localValue
                        && h.identifier.remoteValue == c.identifier.remoteValue && h.title == c.title,
                    "\(comment): \(h.identifier) vs \(c.identifier)", sourceLocation: sourceLocation)
        case (.failure(let h), .failure(let c)):
            #expect(kind(h) == kind(c), "\(comment): \(h) vs \(c)", sourceLocation: sourceLocation)
        default:
            Issue.record("\(comment): the paths disagree: \(hand) vs \(coded)", sourceLocation: sourceLocation)
        }
    }

    static let shapes: [[(String, Part)]] = [
        [("remote", .int(42))],
        [("remote", .int(-7)), ("local", .string("l-1"))],
        [("local", .string("l-2")), ("remote", .int(.max))],
        [("local", .string("only"))],
        [("local", .null), ("remote", .int(3))],
        [("remote", .null), ("local", .string("l-3"))],
        [("remote", .null)],
        [("local", .null)],
        [],
        [("remote", .uint(5))],
        [("remote", .uint(UInt64(Int64.max) + 1))],
        [("remote", .string("not an int"))],
        [("remote", .double(1.5))],
        [("local", .int(9)), ("remote", .int(1))],
        [("remote", .int(1)), ("remote", .int(2))],
        [("remote", .null), ("remote", .int(2))],
        [("local", .string("first")), ("local", .string("second")), ("remote", .int(4))],
        [("remote", .int(1)), ("extra", .int(99))],
        [("extra", .string("x")), ("remote", .int(1))],
        [("remote", .int(1)), ("extra", .nested(["a": 1]))],
        [("remote", .nested(["a": 1]))],
        [("remot", .int(1)), ("remote", .int(8))],
        [("", .int(1)), ("remote", .int(8))],
    ]

    @Test("every shape of the identifier's container reads as through Codable")
    func shapesReadAsCodable() throws {
        for shape in Self.shapes {
            let bytes = try EntityCodec.encode(Written(entries: shape))
            Self.expectSameAnswer(bytes, "\(shape)")
        }
        // The fast path is taken and right for the usual shapes.
        let plain = try Hand.decodeRecord(EntityCodec.encode(Written(entries: [("remote", .int(42))])))
        #expect(plain.identifier.remoteValue == 42 && plain.identifier.localValue == nil && plain.title == "t")
        let both = try Hand.decodeRecord(EntityCodec.encode(Written(entries: [("local", .string("l")),
                                                                              ("remote", .int(-1))])))
        #expect(both.identifier.remoteValue == -1 && both.identifier.localValue == "l")
    }

    @Test("every truncation and flipped byte of such records gives what the Codable path gives")
    func hostileBytes() throws {
        var seed: UInt64 = 0x5EED
        func next() -> UInt64 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return seed >> 33
        }
        for shape in Self.shapes {
            let bytes = try EntityCodec.encode(Written(entries: shape))
            for cut in 0..<bytes.count { Self.expectSameAnswer(Array(bytes[..<cut]), "\(shape) cut at \(cut)") }
            for _ in 0..<30 {
                var mutated = bytes
                mutated[Int(next() % UInt64(bytes.count))] ^= UInt8(1 + next() % 255)
                Self.expectSameAnswer(mutated, "\(shape) mutated to \(mutated)")
            }
        }
    }
}
