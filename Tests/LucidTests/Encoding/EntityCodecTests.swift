import Foundation
import Testing
import Lucid

/// `EntityCodec`: round trips of every shape `Codable` produces, schema evolution, and hostile bytes
/// (docs/ENTITY_FORMAT.md is the format these tests hold the codec to).
@Suite("Entity codec")
struct EntityCodecTests {
    // MARK: Fixtures

    struct Address: Codable, Equatable {
        var street: String
        var zip: Int?
        var lines: [String]
    }

    struct Person: Codable, Equatable {
        var name: String
        var age: UInt8
        var home: Address
        var previous: [Address]
        var nickname: String?
        var scores: [String: Double]
        var matrix: [[Int]]
        var byID: [Int: String]
    }

    enum Shape: Codable, Equatable {
        case point
        case circle(radius: Double)
        case rect(Double, Double)
        case labelled(String, inner: [Shape])
        indirect case wrapped(Shape?)
    }

    struct Empty: Codable, Equatable {}

    struct Integers: Codable, Equatable {
        var i: Int, i8: Int8, i16: Int16, i32: Int32, i64: Int64
        var u: UInt, u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64

        static let min = Integers(i: .min, i8: .min, i16: .min, i32: .min, i64: .min,
                                  u: .min, u8: .min, u16: .min, u32: .min, u64: .min)
        static let max = Integers(i: .max, i8: .max, i16: .max, i32: .max, i64: .max,
                                  u: .max, u8: .max, u16: .max, u32: .max, u64: .max)
        static let minusOne = Integers(i: -1, i8: -1, i16: -1, i32: -1, i64: -1, u: 1, u8: 1, u16: 1, u32: 1, u64: 1)
    }

    struct V1: Codable, Equatable {
        var id: Int
        var title: String
        var obsolete: [String: [Int]]
    }

    struct V2: Codable, Equatable {
        var id: Int
        var title: String
        var subtitle: String?
        var rating: Double?
    }

    static let person = Person(
        name: "Ada Lovelace", age: 36,
        home: Address(street: "St James's Square", zip: nil, lines: ["12", "London"]),
        previous: [Address(street: "Ockham Park", zip: 23, lines: []), Address(street: "", zip: -7, lines: ["x"])],
        nickname: "Enchantress of Numbers", scores: ["math": 9.5, "poetry": -0.25],
        matrix: [[1, 2, 3], [], [-4]], byID: [1: "one", -2: "minus two"])

    static let book = Book(.remote(42, local: "l-42"), title: "The Left Hand of Darkness", genre: "scifi",
                           rating: 4.25, pages: 304, published: Date(timeIntervalSince1970: -86_400 * 365.25 * 3),
                           tags: ["hainish", "winter", "ansible"])

    private func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
        let bytes = try EntityCodec.encode(value)
        #expect(bytes.first == EntityCodec.formatVersion)
        let decoded = try EntityCodec.decode(T.self, from: bytes)
        #expect(decoded == value)
        // Encoding is deterministic for values without dictionaries.
        return decoded
    }

    // MARK: Round trips

    @Test func nestedStructs() throws {
        _ = try roundTrip(Self.person)
        _ = try roundTrip([Self.person, Self.person])
    }

    @Test func book() throws {
        _ = try roundTrip(Self.book)
        _ = try roundTrip(Book(.local("x"), title: "", genre: nil, tags: []))
    }

    @Test func enumsWithAssociatedValues() throws {
        let shapes: [Shape] = [
            .point, .circle(radius: 2.5), .rect(-1, 1e300),
            .labelled("group", inner: [.point, .circle(radius: 0), .labelled("", inner: [])]),
            .wrapped(nil), .wrapped(.wrapped(.rect(0, 0))),
        ]
        for shape in shapes { _ = try roundTrip(shape) }
        _ = try roundTrip(shapes)
    }

    @Test func optionals() throws {
        _ = try roundTrip(Optional<Int>.none)
        _ = try roundTrip(Optional(5))
        _ = try roundTrip([1, nil, 3, nil] as [Int?])
        _ = try roundTrip(["a": nil, "b": "x"] as [String: String?])
        _ = try roundTrip(Address(street: "s", zip: nil, lines: []))
        _ = try roundTrip(Address(street: "s", zip: 0, lines: []))
        // A nil property is written as an explicit null entry or left out; either way it decodes as nil.
        struct Opt: Codable, Equatable { var a: Int?; var b: [Int?]?; var c: Empty? }
        _ = try roundTrip(Opt(a: nil, b: nil, c: nil))
        _ = try roundTrip(Opt(a: 1, b: [nil, 2], c: Empty()))
    }

    @Test func collections() throws {
        _ = try roundTrip([Int]())
        _ = try roundTrip([[String]]())
        _ = try roundTrip([[[Int]]](repeating: [[1], [], [2, 3]], count: 3))
        _ = try roundTrip([String: Int]())
        _ = try roundTrip(["": 0, "ключ": 1, "🔑": -1])
        _ = try roundTrip([7: [1.5], -7: []] as [Int: [Double]])
        _ = try roundTrip(Set(["a", "b", "c"]))
        _ = try roundTrip([Empty(), Empty()])
        _ = try roundTrip((0..<1000).map { $0 * 7919 - 3_000_000 })
    }

    @Test func integerExtremes() throws {
        for value in [Integers.min, .max, .minusOne] { _ = try roundTrip(value) }
        _ = try roundTrip([Int64.min, -1, 0, 1, Int64.max])
        _ = try roundTrip([UInt64.min, 1, 127, 128, 16_383, 16_384, UInt64.max])
        _ = try roundTrip([Int8.min, Int8.max])
        // The longest varint: 10 bytes for UInt64.max (tag + 10 after the version byte).
        #expect(try EntityCodec.encode(UInt64.max).count == 1 + 1 + 10)
        #expect(try EntityCodec.encode(Int64.min).count == 1 + 1 + 10)
        #expect(try EntityCodec.encode(-1).count == 1 + 1 + 1)   // zigzag: -1 is 1
    }

    @Test func integerOutOfRangeIsATypeMismatch() throws {
        // A value written wider than the type it is read as is refused, never truncated.
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Int8.self, from: EntityCodec.encode(128)) }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(UInt8.self, from: EntityCodec.encode(-1)) }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Int64.self, from: EntityCodec.encode(UInt64.max)) }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(UInt16.self, from: EntityCodec.encode(UInt64(70_000))) }
        #expect(try EntityCodec.decode(UInt64.self, from: EntityCodec.encode(Int64.max)) == UInt64(Int64.max))
        #expect(try EntityCodec.decode(Int32.self, from: EntityCodec.encode(UInt64(5))) == 5)
    }

    @Test func doubleSpecialValuesAreBitExact() throws {
        let doubles: [Double] = [.nan, -.nan, .signalingNaN, .infinity, -.infinity, -0.0, 0.0, .leastNonzeroMagnitude,
                                 -.leastNormalMagnitude, .greatestFiniteMagnitude, .pi, Double(bitPattern: 0x7FF8_0000_DEAD_BEEF)]
        let decoded = try EntityCodec.decode([Double].self, from: EntityCodec.encode(doubles))
        #expect(decoded.map(\.bitPattern) == doubles.map(\.bitPattern))
        let floats: [Float] = [.nan, .infinity, -.infinity, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 1.1]
        let decodedFloats = try EntityCodec.decode([Float].self, from: EntityCodec.encode(floats))
        #expect(decodedFloats.map(\.bitPattern) == floats.map(\.bitPattern))
        #expect(try EntityCodec.decode(Double.self, from: EntityCodec.encode(-0.0)).sign == .minus)
        struct D: Codable { var x: Double; var y: Float }
        let d = try EntityCodec.decode(D.self, from: EntityCodec.encode(D(x: -0.0, y: -.infinity)))
        #expect(d.x.bitPattern == (-0.0 as Double).bitPattern && d.y == -.infinity)
    }

    @Test func dateAndData() throws {
        for date in [Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSince1970: 1_700_000_000.123456),
                     Date.distantPast, Date.distantFuture, Date(timeIntervalSinceReferenceDate: -0.000_001)] {
            let decoded = try EntityCodec.decode(Date.self, from: EntityCodec.encode(date))
            #expect(decoded.timeIntervalSinceReferenceDate.bitPattern == date.timeIntervalSinceReferenceDate.bitPattern)
        }
        let data = Data((0...255).map { UInt8($0) } + [0, 0, 0xFF])
        _ = try roundTrip(data)
        _ = try roundTrip(Data())
        struct Blob: Codable, Equatable { var header: Data; var body: [Data]; var at: Date }
        _ = try roundTrip(Blob(header: Data([1, 2]), body: [Data(), data], at: Date(timeIntervalSince1970: 12.5)))
    }

    @Test func unicodeStrings() throws {
        let strings = ["", "a", "é", "e\u{301}", "日本語のテキスト", "🏳️‍🌈👩‍👩‍👧‍👦", "\u{0}", "nul\u{0}inside", "\u{10FFFF}",
                       String(repeating: "x", count: 200), String(repeating: "ß", count: 70_000)]
        for s in strings {
            let decoded = try EntityCodec.decode(String.self, from: EntityCodec.encode(s))
            #expect(Array(decoded.utf8) == Array(s.utf8))
        }
        // Keys are strings too.
        _ = try roundTrip(["日本": "語", "\u{0}": "", "e\u{301}": "é"])
    }

    @Test func emptyValues() throws {
        _ = try roundTrip(Empty())
        _ = try roundTrip([Empty]())
        _ = try roundTrip(["x": Empty()])
        struct Holder: Codable, Equatable { var e: Empty; var list: [Empty]; var maybe: Empty? }
        _ = try roundTrip(Holder(e: Empty(), list: [Empty()], maybe: Empty()))
        _ = try roundTrip(Holder(e: Empty(), list: [], maybe: nil))
    }

    @Test func encodingIsDeterministic() throws {
        let a = try EntityCodec.encode(Self.book)
        let b = try EntityCodec.encode(Self.book)
        #expect(a == b)
        // Re-encoding a decoded record gives the same bytes.
        #expect(try EntityCodec.encode(EntityCodec.decode(Book.self, from: a)) == a)
    }

    @Test func exactBytesOfASmallRecord() throws {
        struct S: Codable { var a: Int; var b: String?; var c: [Bool]; var d: Empty }
        let bytes = try EntityCodec.encode(S(a: -2, b: nil, c: [true, false], d: Empty()))
        // version, keyed {"a": int zigzag(-2)=3, "c": unkeyed [true, false], "d": keyed {}} — nil `b` is omitted
        // by synthesized encodeIfPresent.
        let expected: [UInt8] = [0x01, 0x09,
                                 0x02, 0x61, 0x04, 0x03,
                                 0x02, 0x63, 0x0A, 0x03, 0x02, 0x00,
                                 0x02, 0x64, 0x09, 0x00,
                                 0x00]
        #expect(bytes == expected)
    }

    @Test func smallerThanJSON() throws {
        // The Book fixture: 160 bytes here against 183 for JSONEncoder's default output, a ratio of 0.87. Keys are
        // kept (so old and new records decode into each other's types), which is most of the record; numbers are
        // varints or 8 raw bytes and strings need no quotes or escapes.
        let binary = try EntityCodec.encode(Self.book)
        let json = try JSONEncoder().encode(Self.book)
        #expect(binary.count < json.count)
        #expect(Double(binary.count) / Double(json.count) < 0.9)
        print("Book: \(binary.count) bytes binary, \(json.count) bytes JSON, ratio \(Double(binary.count) / Double(json.count))")
    }

    // MARK: Schema evolution

    @Test func addedOptionalPropertyDecodesNilFromOldRecords() throws {
        let old = V1(id: 7, title: "old", obsolete: ["gone": [1, 2, 3], "also": []])
        let v2 = try EntityCodec.decode(V2.self, from: EntityCodec.encode(old))
        #expect(v2 == V2(id: 7, title: "old", subtitle: nil, rating: nil))
    }

    @Test func removedPropertyIsSkipped() throws {
        let new = V2(id: 9, title: "new", subtitle: "sub", rating: 4.5)
        struct V1Lite: Codable, Equatable { var id: Int; var title: String }
        #expect(try EntityCodec.decode(V1Lite.self, from: EntityCodec.encode(new)) == V1Lite(id: 9, title: "new"))
        // A removed property holding nested containers is skipped whole.
        let old = V1(id: 1, title: "t", obsolete: ["k": [1, 2], "l": [Int](repeating: -1, count: 300)])
        #expect(try EntityCodec.decode(V1Lite.self, from: EntityCodec.encode(old)) == V1Lite(id: 1, title: "t"))
    }

    @Test func addedRequiredPropertyIsAMissingKey() throws {
        struct V3: Codable { var id: Int; var required: String }
        #expect(throws: DecodingError.self) {
            try EntityCodec.decode(V3.self, from: EntityCodec.encode(V1(id: 1, title: "t", obsolete: [:])))
        }
    }

    @Test func wrongVersionByteIsRefused() throws {
        var bytes = try EntityCodec.encode(Self.book)
        for version: UInt8 in [0, 2, 0x7F, 0xFF] {
            bytes[0] = version
            #expect(throws: DecodingError.self) { try EntityCodec.decode(Book.self, from: bytes) }
        }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Book.self, from: []) }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Int.self, from: [1]) }
    }

    // MARK: Hostile input

    /// Real records of several shapes, for the truncation and mutation sweeps.
    static func records() throws -> [(name: String, bytes: [UInt8], decode: @Sendable ([UInt8]) throws -> Void)] {
        [
            ("book", try EntityCodec.encode(book), { _ = try EntityCodec.decode(Book.self, from: $0) }),
            ("person", try EntityCodec.encode(person), { _ = try EntityCodec.decode(Person.self, from: $0) }),
            ("shapes", try EntityCodec.encode([Shape.labelled("x", inner: [.rect(1, 2), .wrapped(.point)])]),
             { _ = try EntityCodec.decode([Shape].self, from: $0) }),
            ("ints", try EntityCodec.encode([1, -300, Int.max]), { _ = try EntityCodec.decode([Int].self, from: $0) }),
            ("strings", try EntityCodec.encode([["a", "bc"], []]), { _ = try EntityCodec.decode([[String]].self, from: $0) }),
        ]
    }

    @Test func truncationAtEveryByteThrows() throws {
        for record in try Self.records() {
            try record.decode(record.bytes)
            for length in 0..<record.bytes.count {
                #expect(throws: DecodingError.self, "\(record.name) cut to \(length) bytes") {
                    try record.decode(Array(record.bytes[..<length]))
                }
            }
        }
    }

    @Test func trailingBytesAreRefused() throws {
        for record in try Self.records() {
            for extra: [UInt8] in [[0x00], [0x01], [0x04, 0x02], [0x09, 0x00]] {
                #expect(throws: DecodingError.self, "\(record.name) + \(extra)") { try record.decode(record.bytes + extra) }
            }
        }
    }

    @Test func everySingleByteMutationThrowsOrDecodes() throws {
        var outcomes = (threw: 0, decoded: 0)
        for record in try Self.records() {
            for position in record.bytes.indices {
                for value in [0x00, 0x01, 0x05, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x7F, 0x80, 0xFF] as [UInt8]
                    + [record.bytes[position] ^ 1, record.bytes[position] &+ 1] {
                    var mutated = record.bytes
                    mutated[position] = value
                    do {
                        try record.decode(mutated)
                        outcomes.decoded += 1
                    } catch is DecodingError {
                        outcomes.threw += 1
                    }
                }
            }
        }
        // Both outcomes occur: many mutations are caught, some (a changed number or letter) still decode.
        #expect(outcomes.threw > 0 && outcomes.decoded > 0)
    }

    @Test func deepNestingBombThrows() throws {
        // 100,000 nested unkeyed containers: skipping and decoding are depth-bounded, so this throws instead of
        // overflowing the stack.
        let depth = 100_000
        let bomb: [UInt8] = [EntityCodec.formatVersion] + [UInt8](repeating: 0x0A, count: depth)
            + [UInt8](repeating: 0x00, count: depth)
        #expect(throws: DecodingError.self) { try EntityCodec.decode([Int].self, from: bomb) }
        struct AnyNesting: Decodable {
            init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                while !c.isAtEnd { _ = try c.decode(AnyNesting.self) }
            }
        }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(AnyNesting.self, from: bomb) }
        // Keyed containers nested as deep.
        let keyed: [UInt8] = [EntityCodec.formatVersion] + Array([[UInt8]](repeating: [0x09, 0x02, 0x6B], count: depth).joined())
            + [0x01] + [UInt8](repeating: 0x00, count: depth)
        #expect(throws: DecodingError.self) { try EntityCodec.decode([String: Int].self, from: keyed) }
    }

    @Test func nestingUpToMaxDepthDecodes() throws {
        // maxDepth containers around a value decode; one more is refused.
        struct Nest: Decodable {
            var depth = 0
            init(from decoder: any Decoder) throws {
                var c = try decoder.unkeyedContainer()
                if c.isAtEnd { return }
                if try c.decodeNil() { depth = 1; return }
                depth = try c.decode(Nest.self).depth + 1
            }
        }
        func record(_ containers: Int) -> [UInt8] {
            [EntityCodec.formatVersion] + [UInt8](repeating: 0x0A, count: containers) + [0x01]
                + [UInt8](repeating: 0x00, count: containers)
        }
        #expect(try EntityCodec.decode(Nest.self, from: record(EntityCodec.maxDepth)).depth == EntityCodec.maxDepth)
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Nest.self, from: record(EntityCodec.maxDepth + 1)) }
    }

    @Test func encodingRefusesDeeperThanMaxDepth() throws {
        // A value nested deeper than any record may be is refused when written, not only when read back.
        final class Node: Codable { var next: [Node]; init(_ next: [Node]) { self.next = next } }
        func chain(_ n: Int) -> Node { (0..<n).reduce(Node([])) { node, _ in Node([node]) } }
        // Each Node is two containers (keyed, then the unkeyed array).
        let fits = chain(EntityCodec.maxDepth / 2 - 1)
        _ = try EntityCodec.decode(Node.self, from: EntityCodec.encode(fits))
        #expect(throws: EncodingError.self) { try EntityCodec.encode(chain(EntityCodec.maxDepth)) }
    }

    @Test func encodingAllowsExactlyMaxDepth() throws {
        // `depth` nested unkeyed containers around a null: the null sits at depth `depth`.
        struct Nest: Encodable {
            var depth: Int
            func encode(to encoder: any Encoder) throws {
                var c = encoder.unkeyedContainer()
                if depth == 1 { try c.encodeNil() } else { try c.encode(Nest(depth: depth - 1)) }
            }
        }
        let bytes = try EntityCodec.encode(Nest(depth: EntityCodec.maxDepth))
        #expect(bytes == [EntityCodec.formatVersion] + [UInt8](repeating: 0x0A, count: EntityCodec.maxDepth) + [0x01]
            + [UInt8](repeating: 0x00, count: EntityCodec.maxDepth))
        #expect(throws: EncodingError.self) { try EntityCodec.encode(Nest(depth: EntityCodec.maxDepth + 1)) }
        // The same through keyed containers.
        struct KeyedNest: Encodable {
            var depth: Int
            enum K: CodingKey { case k }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: K.self)
                if depth == 1 { try c.encode(true, forKey: .k) } else { try c.encode(KeyedNest(depth: depth - 1), forKey: .k) }
            }
        }
        struct KeyedDepth: Decodable {
            var depth: Int
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: KeyedNest.K.self)
                if (try? c.decode(Bool.self, forKey: .k)) == true { depth = 1; return }
                depth = try c.decode(KeyedDepth.self, forKey: .k).depth + 1
            }
        }
        let keyed = try EntityCodec.encode(KeyedNest(depth: EntityCodec.maxDepth))
        #expect(try EntityCodec.decode(KeyedDepth.self, from: keyed).depth == EntityCodec.maxDepth)
        #expect(throws: EncodingError.self) { try EntityCodec.encode(KeyedNest(depth: EntityCodec.maxDepth + 1)) }
    }

    @Test func hugeLengthThrowsWithoutAllocating() throws {
        // A string claiming 2^60 bytes: the length is checked against the bytes left before anything is read.
        var varint: [UInt8] = []
        var n: UInt64 = 1 << 60
        while n >= 0x80 { varint.append(UInt8(truncatingIfNeeded: n) | 0x80); n >>= 7 }
        varint.append(UInt8(n))
        let string: [UInt8] = [EntityCodec.formatVersion, 0x08] + varint + Array("abc".utf8)
        #expect(throws: DecodingError.self) { try EntityCodec.decode(String.self, from: string) }
        // The same as a key length, and as a key of a removed property that must be skipped.
        let key: [UInt8] = [EntityCodec.formatVersion, 0x09] + varint + [0x04, 0x00, 0x00]
        #expect(throws: DecodingError.self) { try EntityCodec.decode([String: Int].self, from: key) }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Empty.self, from: key) }
        let skipped: [UInt8] = [EntityCodec.formatVersion, 0x09, 0x02, 0x7A, 0x08] + varint + [0x00]
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Empty.self, from: skipped) }
        // Varints longer than 10 bytes and lengths of UInt64.max.
        #expect(throws: DecodingError.self) {
            try EntityCodec.decode(UInt64.self, from: [1, 0x05] + [UInt8](repeating: 0xFF, count: 11) + [0x01])
        }
        #expect(throws: DecodingError.self) {
            try EntityCodec.decode(String.self, from: [1, 0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x01])
        }
    }

    @Test func malformedRecordsThrow() throws {
        let cases: [(String, [UInt8])] = [
            ("unknown tag", [1, 0x0C]),
            ("end tag as a value", [1, 0x00]),
            ("end tag inside unkeyed where a value is expected", [1, 0x09, 0x02, 0x61, 0x00, 0x00]),
            ("double cut short", [1, 0x06, 0, 0, 0]),
            ("float cut short", [1, 0x07, 0]),
            ("empty where a struct is expected", [1, 0x0B, 0x00]),
        ]
        struct One: Codable { var a: Int }
        for (name, bytes) in cases {
            #expect(throws: DecodingError.self, "\(name)") { try EntityCodec.decode(One.self, from: bytes) }
        }
        // Type mismatches: a string read as an int and the reverse.
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Int.self, from: EntityCodec.encode("1")) }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(String.self, from: EntityCodec.encode(1)) }
        #expect(throws: DecodingError.self) { try EntityCodec.decode([Int].self, from: EntityCodec.encode(["a": 1])) }
    }

    @Test func invalidUTF8IsRepairedNotTrusted() throws {
        // Strings are decoded with replacement of invalid UTF-8 (U+FFFD), so a decoded String is always valid.
        let bytes: [UInt8] = [1, 0x08, 0x03, 0x61, 0xFF, 0x62]
        #expect(try EntityCodec.decode(String.self, from: bytes) == "a\u{FFFD}b")
    }
}

/// Classes that code their superclass through `superEncoder()` / `superDecoder()` (the standard pattern for
/// `Codable` class hierarchies), whose `CodingKeys` have no `super` case.
@Suite("Entity codec: class hierarchies")
struct EntityCodecSuperTests {
    class Base: Codable {
        var id: Int
        init(id: Int) { self.id = id }
    }

    final class Derived: Base {
        var name: String
        enum CodingKeys: String, CodingKey { case name }

        init(id: Int, name: String) {
            self.name = name
            super.init(id: id)
        }

        required init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            name = try c.decode(String.self, forKey: .name)
            try super.init(from: c.superDecoder())
        }

        override func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try super.encode(to: c.superEncoder())
        }
    }

    @Test func superEncoderAndDecoderWithoutASuperKey() throws {
        let bytes = try EntityCodec.encode(Derived(id: 7, name: "seven"))
        let decoded = try EntityCodec.decode(Derived.self, from: bytes)
        #expect(decoded.id == 7 && decoded.name == "seven")
        // The superclass is the entry "super", as JSONEncoder writes it.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Derived(id: 7, name: "seven")))
        #expect((json as? [String: Any])?["super"] != nil)
        #expect(bytes.count > 6 && bytes[1] == 0x09 && bytes.contains(0x73))
        struct Split: Decodable { var name: String; var `super`: [String: Int] }
        let split = try EntityCodec.decode(Split.self, from: bytes)
        #expect(split.name == "seven" && split.super == ["id": 7])
    }

    /// A superclass that writes nothing (a custom `encode(to:)` that stores no state).
    class Stateless: Codable {
        init() {}
        required init(from decoder: any Decoder) throws {}
        func encode(to encoder: any Encoder) throws {}
    }

    final class Child: Stateless {
        var a: Int, b: String
        enum CodingKeys: String, CodingKey { case a, b, base }
        init(a: Int, b: String) { (self.a, self.b) = (a, b); super.init() }
        required init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            (a, b) = (try c.decode(Int.self, forKey: .a), try c.decode(String.self, forKey: .b))
            try super.init(from: c.superDecoder(forKey: .base))
        }
        override func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(a, forKey: .a)
            try super.encode(to: c.superEncoder(forKey: .base))   // writes nothing
            try c.encode(b, forKey: .b)
        }
    }

    @Test func superEncoderThatWritesNothingLeavesAWellFormedRecord() throws {
        // The key is written when the encoder is handed out; if nothing follows, an `empty` value must, or the
        // next key would be read as the value.
        let bytes = try EntityCodec.encode(Child(a: 1, b: "two"))
        let decoded = try EntityCodec.decode(Child.self, from: bytes)
        #expect(decoded.a == 1 && decoded.b == "two")
        // Also through unkeyed containers and at the end of a container.
        struct Elements: Encodable {
            func encode(to encoder: any Encoder) throws {
                var c = encoder.unkeyedContainer()
                try c.encode(1)
                try Stateless().encode(to: c.superEncoder())
                try c.encode(3)
                try Stateless().encode(to: c.superEncoder())
            }
        }
        let elements = try EntityCodec.encode(Elements())
        #expect(elements == [EntityCodec.formatVersion, 0x0A, 0x04, 0x02, 0x0B, 0x04, 0x06, 0x0B, 0x00])
    }

    @Test func superDecoderOfAMissingEntryIsKeyNotFound() throws {
        struct OnlyName: Encodable { var name = "x" }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(Derived.self, from: EntityCodec.encode(OnlyName())) }
    }
}

/// `Encoder` misuse that `JSONEncoder` traps on must not give a malformed record: it throws.
@Suite("Entity codec: encoder misuse")
struct EntityCodecMisuseTests {
    enum K: CodingKey { case a, b }

    struct Misuse: Encodable {
        var body: @Sendable (any Encoder) throws -> Void
        func encode(to encoder: any Encoder) throws { try body(encoder) }
    }

    struct Holder: Encodable {
        var inner: Misuse
        var after = 9
    }

    static let cases: [(String, Misuse)] = [
        ("two single values", Misuse { e in
            var c = e.singleValueContainer()
            try c.encode(1)
            try c.encode(2)
        }),
        ("a single value, then a keyed container", Misuse { e in
            var c = e.singleValueContainer()
            try c.encode(1)
            var k = e.container(keyedBy: K.self)
            try k.encode(2, forKey: .a)
        }),
        ("a keyed container, then an unkeyed one", Misuse { e in
            var k = e.container(keyedBy: K.self)
            try k.encode(1, forKey: .a)
            var u = e.unkeyedContainer()
            try u.encode(2)
        }),
        ("an unkeyed container, then a single value", Misuse { e in
            var u = e.unkeyedContainer()
            try u.encode(1)
            var c = e.singleValueContainer()
            try c.encode(2)
        }),
    ]

    @Test func misuseThrows() throws {
        for (name, misuse) in Self.cases {
            #expect(throws: EncodingError.self, "\(name)") { try EntityCodec.encode(misuse) }
            #expect(throws: EncodingError.self, "\(name), nested") { try EntityCodec.encode(Holder(inner: misuse)) }
            #expect(throws: EncodingError.self, "\(name), in an array") { try EntityCodec.encode([misuse]) }
        }
    }

    @Test func askingForTheSameContainerTwiceIsFine() throws {
        let twice = Misuse { e in
            var k1 = e.container(keyedBy: K.self)
            try k1.encode(1, forKey: .a)
            var k2 = e.container(keyedBy: K.self)
            try k2.encode("x", forKey: .b)
        }
        struct AB: Decodable, Equatable { var a: Int; var b: String }
        #expect(try EntityCodec.decode(AB.self, from: EntityCodec.encode(twice)) == AB(a: 1, b: "x"))
        let single = Misuse { e in
            let c = e.singleValueContainer()
            _ = c.codingPath
            var c2 = e.singleValueContainer()
            try c2.encode(5)
        }
        #expect(try EntityCodec.decode(Int.self, from: EntityCodec.encode(single)) == 5)
    }
}
