import Foundation
import Testing
import Lucid
import LucidEngine

/// The hand-written record path (`EntityRecordCodable`): the same bytes as the `Codable` path, records of either
/// path readable by the other, schema evolution, and hostile bytes giving the same kinds of errors.
@Suite("Entity records written by hand")
struct EntityRecordCodableTests {
    /// `Book` (tests' Codable entity) written by hand: the same keys, in the same order, as its synthesized
    /// `Codable` conformance, plus a nested value (`tags`, through the generic entry) and an optional.
    struct FastBook: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<FastBook, Int>
        static var identifierTypeID: String { "Book" }
        var identifier: Identifier
        var title: String
        var genre: String?
        var rating: Double
        var pages: Int
        var published: Date
        var tags: [String]

        enum IndexName: String, EntityIndexName { case genre, pages }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue {
            switch indexName {
            case .genre: .optional(genre) { .string($0) }
            case .pages: .int(pages)
            }
        }

        init(_ book: Book) {
            identifier = switch (book.identifier.localValue, book.identifier.remoteValue) {
            case let (local?, remote?): .remote(remote, local: local)
            case let (nil, remote?): .remote(remote)
            case let (local, nil): .local(local ?? "")
            }
            title = book.title
            genre = book.genre
            rating = book.rating
            pages = book.pages
            published = book.published
            tags = book.tags
        }

        func encode(to record: inout EntityRecordWriter) throws {
            try record.encode(identifier, forKey: "identifier")
            record.encode(title, forKey: "title")
            record.encodeIfPresent(genre, forKey: "genre")
            record.encode(rating, forKey: "rating")
            record.encode(pages, forKey: "pages")
            record.encode(published, forKey: "published")
            try record.encode(tags, forKey: "tags")
        }

        init(from record: inout EntityRecordReader) throws {
            identifier = try record.decode(Identifier.self, forKey: "identifier")
            title = try record.decode(String.self, forKey: "title")
            genre = try record.decodeIfPresent(String.self, forKey: "genre")
            rating = try record.decode(Double.self, forKey: "rating")
            pages = try record.decode(Int.self, forKey: "pages")
            published = try record.decode(Date.self, forKey: "published")
            tags = try record.decode([String].self, forKey: "tags")
        }
    }

    /// Reads its keys in another order than they are written, and ignores `tags`.
    struct ShuffledReader: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<ShuffledReader, Int>
        var identifier: Identifier
        var title: String
        var pages: Int
        var subtitle: String?   // a property added after the records were written
        enum IndexName: String, EntityIndexName { case pages }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(pages) }
        func encode(to record: inout EntityRecordWriter) throws {
            record.encode(pages, forKey: "pages")
            try record.encode(identifier, forKey: "identifier")
            record.encode(title, forKey: "title")
            record.encodeIfPresent(subtitle, forKey: "subtitle")
        }
    }

    @Test("keys read in any order; a property added later reads as absent; unknown keys are skipped")
    func evolution() throws {
        let book = Book(.remote(42, local: "x"), title: "T", genre: "g", pages: 9, tags: ["a"])
        let shuffled = try ShuffledReader.decodeRecord(try EntityCodec.encode(book))
        #expect(shuffled.pages == 9 && shuffled.title == "T" && shuffled.subtitle == nil)
        #expect(shuffled.identifier.localValue == "x" && shuffled.identifier.remoteValue == 42)
        var withSubtitle = shuffled
        withSubtitle.subtitle = "s"
        // The hand-written path is the one used: it writes `pages` first, the synthesized Codable `identifier`.
        #expect(try withSubtitle.encodeRecord() != EntityCodec.encode(withSubtitle))
        #expect(try ShuffledReader.decodeRecord(try withSubtitle.encodeRecord()).subtitle == "s")
        // Written in another order than Book's: the Codable path reads it too (by key, not position).
        let back = try EntityCodec.decode(ShuffledReader.self, from: try withSubtitle.encodeRecord())
        #expect(back == withSubtitle)
    }

    static func randomBook(_ rng: inout SplitMix) -> Book {
        let id: Book.Identifier = switch rng.next() % 3 {
        case 0: .local("l\(rng.next() % 1000)")
        case 1: .remote(Int(bitPattern: UInt(rng.next())))
        default: .remote(Int(rng.next() % 100) - 50, local: "ü-\(rng.next() % 100)")
        }
        let words = ["", "a", "Harbor", "ünïcödé ✓", String(repeating: "x", count: 300)]
        return Book(id, title: words[Int(rng.next() % 5)], genre: rng.next() % 2 == 0 ? nil : words[Int(rng.next() % 5)],
                    rating: [0, -0.0, .infinity, 3.25, .nan][Int(rng.next() % 5)], pages: Int(bitPattern: UInt(rng.next())),
                    published: Date(timeIntervalSinceReferenceDate: Double(Int64(bitPattern: rng.next()) >> 20)),
                    tags: (0..<Int(rng.next() % 4)).map { "t\($0)" })
    }

    @Test("the hand-written record is byte for byte the Codable record, and each path reads the other's")
    func sameBytesBothWays() throws {
        var rng = SplitMix(seed: 7)
        for _ in 0..<2_000 {
            let book = Self.randomBook(&rng)
            let fast = FastBook(book)
            let codableBytes = try EntityCodec.encode(book)
            let fastBytes = try fast.encodeRecord()
            #expect(fastBytes == codableBytes)
            let readFast = try FastBook.decodeRecord(codableBytes)
            #expect(try readFast.encodeRecord() == codableBytes)
            let readCodable = try EntityCodec.decode(Book.self, from: fastBytes)
            #expect(try EntityCodec.encode(readCodable) == codableBytes)
        }
    }

    /// Writes `title` twice: both paths must read the first.
    struct TwiceTitled: Codable { var title: String; var pages: Int
        enum CodingKeys: String, CodingKey { case title, pages }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(title, forKey: .title)
            try c.encode(pages, forKey: .pages)
            try c.encode("second", forKey: .title)
        }
    }

    @Test("a key stored twice reads from its first entry, as the Codable path")
    func duplicateKeys() throws {
        let bytes = try EntityCodec.encode(TwiceTitled(title: "first", pages: 3))
        let reader = try ShuffledReaderProbe.read(bytes)
        #expect(reader.title == "first" && reader.pages == 3 && reader.again == "first")
    }

    /// Scalars only, written and read in the same order: every read takes the reader's cursor path.
    struct InOrderProbe: EntityRecordCodable, Equatable {
        typealias Identifier = EntityIdentifier<InOrderProbe, Int>
        var identifier: Identifier
        var title: String
        var pages: Int
        enum IndexName: String, EntityIndexName { case pages }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(pages) }
        init(identifier: Identifier, title: String, pages: Int) {
            self.identifier = identifier
            self.title = title
            self.pages = pages
        }
        func encode(to record: inout EntityRecordWriter) throws {
            try record.encode(identifier, forKey: "identifier")
            record.encode(title, forKey: "title")
            record.encode(pages, forKey: "pages")
        }
        init(from record: inout EntityRecordReader) throws {
            identifier = try record.decode(Identifier.self, forKey: "identifier")
            title = try record.decode(String.self, forKey: "title")
            pages = try record.decode(Int.self, forKey: "pages")
        }
    }

    /// Value tags of the entity record format (docs/ENTITY_FORMAT.md).
    static let endTag: UInt8 = 0x00, intTag: UInt8 = 0x04, stringTag: UInt8 = 0x08, unkeyedTag: UInt8 = 0x0A

    /// A record with an entry added after its last one (before the container's end), as raw bytes.
    static func withTrailingEntry(_ record: [UInt8], key: String, value: [UInt8]) -> [UInt8] {
        precondition(record.last == 0, "a record ends with its container's end")
        return record.dropLast() + [UInt8(key.utf8.count + 1)] + Array(key.utf8) + value + [0]
    }

    @Test("read in order, the entries after the last one read and the record's end are still checked")
    func inOrderReadsCheckTheRest() throws {
        let probe = InOrderProbe(identifier: .remote(7), title: "t", pages: 3)
        let record = try probe.encodeRecord()
        #expect(try InOrderProbe.decodeRecord(record) == probe, "the record itself reads")
        let nested = (0...EntityCodec.maxDepth).map { _ in Self.unkeyedTag }
            + (0...EntityCodec.maxDepth).map { _ in Self.endTag }
        let hostile: [(String, [UInt8])] = [
            ("a byte after the record", record + [0]),
            ("an unread entry of an unknown tag", Self.withTrailingEntry(record, key: "zz", value: [0xEE])),
            ("an unread string longer than the record",
             Self.withTrailingEntry(record, key: "zz", value: [Self.stringTag, 100])),
            ("an unread value nested too deep", Self.withTrailingEntry(record, key: "zz", value: nested)),
        ]
        for (what, bytes) in hostile {
            #expect(throws: DecodingError.self, "\(what): the Codable path") {
                try EntityCodec.decode(InOrderProbe.self, from: bytes)
            }
            #expect(throws: DecodingError.self, "\(what): the hand-written path") { try InOrderProbe.decodeRecord(bytes) }
        }
        // A well-formed unread entry is skipped, as on the Codable path.
        let extra = Self.withTrailingEntry(record, key: "zz", value: [Self.intTag, 4])
        #expect(try InOrderProbe.decodeRecord(extra) == probe)
        #expect(try EntityCodec.decode(InOrderProbe.self, from: extra) == probe)
    }

    /// Reads `title`, `pages`, then `title` again (the cursor then sits on the duplicate).
    struct ShuffledReaderProbe: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<ShuffledReaderProbe, Int>
        var identifier: Identifier { .remote(0) }
        var title: String, pages: Int, again: String
        enum IndexName: String, EntityIndexName { case pages }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(pages) }
        func encode(to record: inout EntityRecordWriter) throws { record.encode(title, forKey: "title") }
        init(from record: inout EntityRecordReader) throws {
            title = try record.decode(String.self, forKey: "title")
            pages = try record.decode(Int.self, forKey: "pages")
            again = try record.decode(String.self, forKey: "title")
        }
        static func read(_ bytes: [UInt8]) throws -> Self { try decodeRecord(bytes) }
        init(from decoder: any Decoder) throws { fatalError("not used") }
        func encode(to encoder: any Encoder) throws {}
    }

    @Test("every truncation, flipped byte and wrong type gives a DecodingError on both paths")
    func hostileBytes() throws {
        var rng = SplitMix(seed: 11)
        for _ in 0..<40 {
            let bytes = try EntityCodec.encode(Self.randomBook(&rng))
            for cut in 0..<bytes.count {
                let prefix = Array(bytes[..<cut])
                #expect(throws: DecodingError.self) { try FastBook.decodeRecord(prefix) }
            }
            for _ in 0..<50 {
                var mutated = bytes
                mutated[Int(rng.next() % UInt64(bytes.count))] ^= UInt8(1 + rng.next() % 255)
                let fast = Result { try FastBook.decodeRecord(mutated) }
                let codable = Result { try EntityCodec.decode(Book.self, from: mutated) }
                switch (fast, codable) {
                case (.success(let f), .success(let c)):
                    #expect(try f.encodeRecord() == EntityCodec.encode(c))
                case (.failure(let f), .failure(let c)):
                    #expect(f is DecodingError && c is DecodingError)
                default:
                    Issue.record("the paths disagree on \(mutated): \(fast) vs \(codable)")
                }
            }
        }
        // A missing key, a type mismatch, an identifier with no value, a wrong version.
        let book = try EntityCodec.encode(Book(.remote(1), title: "t"))
        let noIdentifier = try EntityCodec.encode(["title": "t"])
        #expect { try FastBook.decodeRecord(noIdentifier) } throws: { error in
            if case DecodingError.keyNotFound(let key, _) = error { return key.stringValue == "identifier" }
            return false
        }
        let wrongType = try ShuffledReader(identifier: .remote(1), title: "t", pages: 1).encodeRecord()
            .replacingPagesWithString()
        #expect { try ShuffledReader.decodeRecord(wrongType) } throws: { error in
            if case DecodingError.typeMismatch = error { return true }
            return false
        }
        struct Bare: Codable { var identifier: [String: Int] = [:] }
        #expect { try FastBook.decodeRecord(try EntityCodec.encode(Bare())) } throws: { error in
            if case DecodingError.dataCorrupted = error { return true }
            if case DecodingError.keyNotFound = error { return true }
            return false
        }
        #expect(throws: DecodingError.self) { try FastBook.decodeRecord([2] + book.dropFirst()) }
    }

    @Test("the disk store files hand-written records; a Codable twin reads them after a reopen, and back")
    func diskStore() async throws {
        let temp = try TemporaryStore()
        let books = (0..<200).map { Book.remote($0, "b\($0)", genre: $0 % 2 == 0 ? "odd" : nil, pages: $0, tags: ["x"]) }
        _ = try await DiskStore<FastBook>(engine: temp.engine, keyspace: "books").set(books.map(FastBook.init))
        try temp.reopen()
        let twin = DiskStore<Book>(engine: temp.engine, keyspace: "books")
        let read = try await twin.search(.all).entities
        #expect(read == books)
        _ = try await twin.set([Book.remote(500, "codable", genre: "g")])
        let fast = DiskStore<FastBook>(engine: temp.engine, keyspace: "books")
        #expect(try await fast.get(byID: .remote(500))?.title == "codable")
        #expect(try await fast.search(.filter(.pages >= .int(190))).count == 10)
        // Generic code (the store) takes the hand-written path: ShuffledReader's record starts with `pages`.
        let entity = ShuffledReader(identifier: .remote(3), title: "s", pages: 4)
        _ = try await DiskStore<ShuffledReader>(engine: temp.engine).set([entity])
        let raw = try temp.engine.snapshot().get(entity.identifier.storageKey, in: ShuffledReader.identifierTypeID)
        #expect(raw == (try entity.encodeRecord()))
        #expect(raw != (try EntityCodec.encode(entity)))
    }
}

extension EntityRecordCodableTests.ShuffledReader {
    init(from record: inout EntityRecordReader) throws {
        pages = try record.decode(Int.self, forKey: "pages")
        subtitle = try record.decodeIfPresent(String.self, forKey: "subtitle")
        title = try record.decode(String.self, forKey: "title")
        identifier = try record.decode(Identifier.self, forKey: "identifier")
    }
}

extension [UInt8] {
    /// This ShuffledReader record with `pages` (first entry, an int) replaced by the string "x".
    func replacingPagesWithString() -> [UInt8] {
        // 01 09 06 'pages' 04 <varint>: replace the int with 08 01 'x'
        var out = Array(self[..<8])
        var p = 9
        while self[p] & 0x80 != 0 { p += 1 }
        out += [0x08, 0x01, 0x78]
        out += self[(p + 1)...]
        return out
    }
}

/// A small deterministic generator (SplitMix64).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
