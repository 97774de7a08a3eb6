import Foundation
import Testing
@testable import Lucid

/// The `Codable` decoder's keyed lookups (``KeyedBinaryDecodingContainer``: the expected next entry first, a scan
/// from the start otherwise) and its identifier read without a container (``BinaryValueDecoder/decodeIdentifier(_:)``),
/// each against the plain reading it replaces.
@Suite("Codable decoding: keyed lookups and identifiers")
struct KeyedBinaryDecodingContainerTests {
    /// A key built at run time.
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Integer entries written in order, under keys built at run time (the writer does not refuse duplicates).
    struct Entries: Encodable {
        var pairs: [(String, Int)]
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            for (key, value) in pairs { try c.encode(value, forKey: Key(key)) }
        }
    }

    /// The record's top-level keyed container, as `init(from:)` receives it.
    static func container(_ bytes: [UInt8]) throws -> KeyedDecodingContainer<Key> {
        try BinaryValueDecoder(reader: BinaryReader(bytes: bytes), position: 1, codingPath: []).container(keyedBy: Key.self)
    }

    /// Keys alike in length and both end bytes (the duplicate filter's hash), the empty key, and prefixes.
    static let alphabet = ["", "a", "b", "ab", "ba", "axb", "ayb", "azb", "abc", "identifier", "title", "k1", "k2"]

    /// A 64-bit LCG, so that every run draws the same cases.
    struct Draws {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % bound
        }
    }

    @Test("every lookup answers the first entry with its key, whatever the order of lookups and repeats of keys")
    func lookupsAnswerTheFirstEntry() throws {
        var draws = Draws(state: 0x5EED)
        var followedTheRecord = 0
        for _ in 0..<3_000 {
            let pairs = (0..<draws.next(16)).map { (Self.alphabet[draws.next(Self.alphabet.count)], $0) }
            let container = try Self.container(try EntityCodec.encode(Entries(pairs: pairs)))
            // Half the plans read the record's own keys in order (the expected-entry path), half draw keys at random.
            let inOrder = draws.next(2) == 0 && !pairs.isEmpty
            if inOrder { followedTheRecord += 1 }
            let plan = inOrder ? pairs.map(\.0) : (0..<draws.next(24)).map { _ in Self.alphabet[draws.next(Self.alphabet.count)] }
            for name in plan {
                let expected = pairs.first { $0.0 == name }?.1
                #expect(try container.decodeIfPresent(Int.self, forKey: Key(name)) == expected, "\(pairs) \(plan) \(name)")
                #expect(container.contains(Key(name)) == (expected != nil))
                if let expected { #expect(try container.decode(Int.self, forKey: Key(name)) == expected) }
            }
        }
        #expect(followedTheRecord > 1_000)
    }

    @Test("a key stored again later reads from its first entry even when the lookups reach the later one in order")
    func repeatedKeyReachedInOrder() throws {
        let container = try Self.container(try EntityCodec.encode(Entries(pairs: [("a", 1), ("b", 2), ("a", 3), ("c", 4)])))
        #expect(try container.decode(Int.self, forKey: Key("a")) == 1)
        #expect(try container.decode(Int.self, forKey: Key("b")) == 2)
        #expect(try container.decode(Int.self, forKey: Key("a")) == 1)
        #expect(try container.decode(Int.self, forKey: Key("c")) == 4)
        #expect(container.allKeys.map(\.stringValue) == ["a", "b", "a", "c"])
    }

    @Test("the duplicate check is exact: keys alike at both ends and in length are told apart, repeats found")
    func duplicateCheckIsExact() throws {
        var draws = Draws(state: 0xD0B1E)
        var repeated = 0
        for _ in 0..<3_000 {
            let keys = (0..<draws.next(20)).map { _ in Self.alphabet[draws.next(Self.alphabet.count)] }
            let bytes = try EntityCodec.encode(Entries(pairs: keys.map { ($0, 0) }))
            let container = try KeyedBinaryDecodingContainer<Key>(reader: BinaryReader(bytes: bytes), position: 1,
                                                                  codingPath: [])
            let repeats = Set(keys).count != keys.count
            if repeats { repeated += 1 }
            #expect(container.repeatsKeys == repeats, "\(keys)")
        }
        #expect(repeated > 500 && repeated < 2_900)
    }

    @Test("past 64 entries a container counts as repeating keys (no quadratic check), and lookups still find the first")
    func largeContainers() throws {
        var draws = Draws(state: 0x1A46E)
        for count in [64, 65, 200, 5_000] {
            // Look-alike keys (same length, first and last byte), distinct: the filter's worst case.
            var pairs = (0..<count).map { (String(format: "k%05dk", $0), $0) }
            if count == 200 { pairs.append(("k00007k", -1)) }
            let bytes = try EntityCodec.encode(Entries(pairs: pairs))
            let table = try KeyedBinaryDecodingContainer<Key>(reader: BinaryReader(bytes: bytes), position: 1, codingPath: [])
            #expect(table.repeatsKeys == (count > KeyedBinaryDecodingContainer<Key>.checkedEntries || count == 200))
            let container = try Self.container(bytes)
            for name in pairs.prefix(300).map(\.0) + (0..<50).map({ _ in String(format: "k%05dk", draws.next(count + 10)) }) {
                #expect(try container.decodeIfPresent(Int.self, forKey: Key(name)) == pairs.first { $0.0 == name }?.1)
            }
        }
    }

    @Test("a missing key is keyNotFound naming the key; a lookup after it still finds the entries in order")
    func missingKey() throws {
        let container = try Self.container(try EntityCodec.encode(Entries(pairs: [("a", 1), ("b", 2)])))
        #expect(try container.decode(Int.self, forKey: Key("a")) == 1)
        do {
            _ = try container.decode(Int.self, forKey: Key("zz"))
            Issue.record("decoded a missing key")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "zz")
        }
        #expect(try container.decode(Int.self, forKey: Key("b")) == 2)
    }

    // MARK: Identifiers

    /// A decoder that forwards to another: `EntityIdentifier.init(from:)` does not recognize it as the binary
    /// decoder, so it reads through its keyed container, the path every other decoder takes.
    struct ForwardingDecoder: Decoder {
        let base: any Decoder
        var codingPath: [any CodingKey] { base.codingPath }
        var userInfo: [CodingUserInfoKey: Any] { base.userInfo }
        func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> {
            try base.container(keyedBy: type)
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { try base.unkeyedContainer() }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { try base.singleValueContainer() }
    }

    /// `{id: identifier}` read with the identifier's container path (`ForwardingDecoder`).
    struct ContainerHolder<Identifier: Decodable>: Decodable {
        var id: Identifier
        enum CodingKeys: String, CodingKey { case id }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try Identifier(from: ForwardingDecoder(base: container.superDecoder(forKey: .id)))
        }
    }

    /// `{id: identifier}` read by hand (``EntityRecordReader``'s identifier read).
    struct HandRecord<Remote: RemoteIdentifierValue>: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<HandRecord, Remote>
        static var identifierTypeID: String { "owners" }
        var identifier: Identifier
        enum IndexName: String, EntityIndexName { case none }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(0) }
        func encode(to record: inout EntityRecordWriter) throws {}
        init(from record: inout EntityRecordReader) throws { identifier = try record.decode(Identifier.self, forKey: "id") }
        init(from decoder: any Decoder) throws { fatalError("not used") }
        func encode(to encoder: any Encoder) throws {}
    }

    /// A record holding an identifier one level down, so that coding paths and depths are not the top level's.
    struct Holder<Identifier: Decodable>: Decodable {
        var id: Identifier
    }

    struct Owner: LocalEntity {
        typealias Identifier = EntityIdentifier<Owner, Int>
        static var identifierTypeID: String { "owners" }
        var identifier: Identifier
        enum IndexName: String, EntityIndexName { case none }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(0) }
    }

    /// What a decoding produced, comparable across the two readers: the value, or the error's kind, coding path
    /// (key names) and description.
    static func outcome<T>(_ body: () throws -> T) -> String {
        do {
            return "value \(try body())"
        } catch let error as DecodingError {
            switch error {
            case .typeMismatch(let type, let c): return "typeMismatch \(type) \(c.codingPath.map(\.stringValue)) \(c.debugDescription)"
            case .valueNotFound(let type, let c): return "valueNotFound \(type) \(c.codingPath.map(\.stringValue)) \(c.debugDescription)"
            case .keyNotFound(let key, let c): return "keyNotFound \(key.stringValue) \(c.codingPath.map(\.stringValue)) \(c.debugDescription)"
            case .dataCorrupted(let c): return "dataCorrupted \(c.codingPath.map(\.stringValue)) \(c.debugDescription)"
            @unknown default: return "\(error)"
            }
        } catch {
            return "other \(error)"
        }
    }

    /// Raw identifier containers: both parts, either, neither, nulls, duplicates, unknown keys, a wrong type.
    static func identifierRecords() throws -> [[UInt8]] {
        struct Raw: Encodable {
            var pairs: [(String, RawValue)]
            enum RawValue: Encodable {
                case int(Int), string(String), null, double(Double)
                func encode(to encoder: any Encoder) throws {
                    var c = encoder.singleValueContainer()
                    switch self {
                    case .int(let v): try c.encode(v)
                    case .string(let v): try c.encode(v)
                    case .null: try c.encodeNil()
                    case .double(let v): try c.encode(v)
                    }
                }
            }
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: Key.self)
                for (key, value) in pairs { try c.encode(value, forKey: Key(key)) }
            }
        }
        struct Wrapped: Encodable { var id: Raw }
        let shapes: [[(String, Raw.RawValue)]] = [
            [("local", .string("L-1")), ("remote", .int(42))],
            [("remote", .int(-7))],
            [("local", .string("only"))],
            [],
            [("local", .null), ("remote", .null)],
            [("remote", .int(1)), ("remote", .int(2)), ("local", .string("a")), ("local", .string("b"))],
            [("other", .int(3)), ("remote", .string("text")), ("local", .int(5))],
            [("remote", .double(2.5))],
            [("local", .null), ("remote", .int(Int.max))],
        ]
        return try shapes.map { try EntityCodec.encode(Wrapped(id: Raw(pairs: $0))) }
    }

    @Test("identifiers read without a container, and by hand: the same values and errors as the keyed container's reading")
    func identifierFastPathMatchesTheContainer() throws {
        var compared = 0
        var decoded = 0
        for bytes in try Self.identifierRecords() {
            var variants = [bytes]
            for cut in 1..<bytes.count { variants.append(Array(bytes[..<cut])) }
            for position in 1..<bytes.count {
                for value in [0x00, 0x01, 0x04, 0x05, 0x08, 0x09, 0x0B, 0x7F, 0xFF] as [UInt8] + [bytes[position] ^ 1] {
                    var mutated = bytes
                    mutated[position] = value
                    variants.append(mutated)
                }
            }
            for variant in variants {
                // The identifier's parts, or the error: through the binary fast path, the keyed container, by hand.
                func parts<R>(_ id: EntityIdentifier<some LocalEntity, R>) -> String { "\(String(describing: id.localValue)) \(String(describing: id.remoteValue))" }
                let fast = Self.outcome { parts(try EntityCodec.decode(Holder<Owner.Identifier>.self, from: variant).id) }
                let container = Self.outcome { parts(try EntityCodec.decode(ContainerHolder<Owner.Identifier>.self, from: variant).id) }
                let hand = Self.outcome { parts(try HandRecord<Int>.decodeRecord(variant).identifier) }
                #expect(fast == container, "\(variant)")
                #expect(hand == container, "\(variant)")
                let fastText = Self.outcome { parts(try EntityCodec.decode(Holder<EntityIdentifier<Owner, String>>.self, from: variant).id) }
                let containerText = Self.outcome {
                    parts(try EntityCodec.decode(ContainerHolder<EntityIdentifier<Owner, String>>.self, from: variant).id)
                }
                let handText = Self.outcome { parts(try HandRecord<String>.decodeRecord(variant).identifier) }
                #expect(fastText == containerText, "\(variant)")
                #expect(handText == containerText, "\(variant)")
                compared += 2
                if fast.hasPrefix("value") { decoded += 1 }
            }
        }
        #expect(compared > 1_000 && decoded > 10)
    }
}
