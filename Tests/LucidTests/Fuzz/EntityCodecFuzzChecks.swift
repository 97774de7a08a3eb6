// The check of the `FuzzEntityCodec` libFuzzer target in Fuzz/, and the test that replays its inputs without a
// sanitizer build.
//
// Like the engine's checks in Tests/LucidEngineTests/Fuzz/, this file is compiled twice:
// here, in the root LucidTests target, where `LucidFailCasesReplayTests` at the bottom replays every file of
// `Fuzz/FailCases/FuzzEntityCodec/` and `Fuzz/Corpus/FuzzEntityCodec/`; and in the Fuzz package's `FuzzLucidCommon`
// library (through the symlink `Fuzz/Sources/FuzzLucidCommon/EntityCodecChecks.swift`), where `LUCID_FUZZ_HARNESS`
// is defined and the target calls `EntityCodecChecks.check` once per input and traps when it throws.

import Foundation
import Lucid
#if !LUCID_FUZZ_HARNESS
import Testing
#endif

/// A broken invariant of the entity codec. The fuzz target traps with its message; the replay test records it.
public struct EntityCodecCheckFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Input: a mode byte choosing the type to decode as (`mode % 4`), then the bytes of an entity record (version byte
/// first). Checks, for whatever the bytes are:
/// - decoding never traps and stays within `-malloc_limit_mb` (no allocation sized by a length field), and fails only
///   with `DecodingError`;
/// - a value that decodes re-encodes without error (it was within `maxDepth`, so writing it is too), the re-encoded
///   record decodes to an equal value (doubles compared bit for bit), and encoding that value again gives the same
///   bytes when the type has no dictionary (whose order is not stable);
/// - the re-encoded record, cut short by one byte, is refused.
public enum EntityCodecChecks {
    /// Properties of every kind the codec writes: nested keyed and unkeyed containers, optionals, strings, every
    /// integer width, floating point, dates, data, enums with associated values, recursion.
    public struct Record: Codable, Equatable, Sendable {
        public var id: Int
        public var name: String
        public var note: String?
        public var small: Int8
        public var medium: Int32?
        public var unsigned: UInt64
        public var word: UInt16
        public var ratio: ExactDouble
        public var single: Float?
        public var flag: Bool
        public var when: Date?
        public var blob: Data?
        public var tags: [String]
        public var optionalInts: [Int?]
        public var grid: [[Int]]
        public var shape: Shape
        public var children: [Record]
        public var identifier: EntityIdentifier<Record, Int>?

        public static func == (lhs: Record, rhs: Record) -> Bool {
            lhs.id == rhs.id && lhs.name == rhs.name && lhs.note == rhs.note && lhs.small == rhs.small
                && lhs.medium == rhs.medium && lhs.unsigned == rhs.unsigned && lhs.word == rhs.word
                && lhs.ratio == rhs.ratio && lhs.single?.bitPattern == rhs.single?.bitPattern && lhs.flag == rhs.flag
                && lhs.when?.timeIntervalSinceReferenceDate.bitPattern == rhs.when?.timeIntervalSinceReferenceDate.bitPattern
                && lhs.blob == rhs.blob && lhs.tags == rhs.tags && lhs.optionalInts == rhs.optionalInts
                && lhs.grid == rhs.grid && lhs.shape == rhs.shape && lhs.children == rhs.children
                && lhs.identifier?.localValue == rhs.identifier?.localValue
                && lhs.identifier?.remoteValue == rhs.identifier?.remoteValue
        }
    }

    /// A `Double` compared by its bits, so NaNs round-trip as equal; coded as a plain `Double`.
    public struct ExactDouble: Codable, Equatable, Sendable {
        public var value: Double
        public init(_ value: Double) { self.value = value }
        public init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Double.self) }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            try c.encode(value)
        }
        public static func == (lhs: Self, rhs: Self) -> Bool { lhs.value.bitPattern == rhs.value.bitPattern }
    }

    /// An enum with associated values (synthesized `Codable`), recursive.
    public indirect enum Shape: Codable, Equatable, Sendable {
        case none
        case circle(radius: ExactDouble)
        case label(String, size: Int?)
        case group([Shape], name: String?)
        case wrapped(Shape)
    }

    /// An entity written and read by hand (``EntityRecordCodable``), and ``HandTwin``, its synthesized `Codable`
    /// twin (same keys, same order): both paths must agree on every input.
    public struct HandRecord: EntityRecordCodable {
        public typealias Identifier = EntityIdentifier<HandRecord, String>
        public var identifier: Identifier
        public var name: String
        public var note: String?
        public var count: Int
        public var big: Int64
        public var ratio: Double
        public var flag: Bool?
        public var when: Date
        public var tags: [String]
        public enum IndexName: String, EntityIndexName { case name }
        public func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .string(name) }
        public static func == (lhs: Self, rhs: Self) -> Bool { HandTwin(lhs) == HandTwin(rhs) }

        public func encode(to record: inout EntityRecordWriter) throws {
            try record.encode(identifier, forKey: "identifier")
            record.encode(name, forKey: "name")
            record.encodeIfPresent(note, forKey: "note")
            record.encode(count, forKey: "count")
            record.encode(big, forKey: "big")
            record.encode(ratio, forKey: "ratio")
            record.encodeIfPresent(flag, forKey: "flag")
            record.encode(when, forKey: "when")
            try record.encode(tags, forKey: "tags")
        }
    }

    /// ``HandRecord``'s fields with a synthesized `Codable` conformance; compares doubles and dates by bits.
    public struct HandTwin: Codable, Equatable, Sendable {
        public var identifier: EntityIdentifier<HandRecord, String>
        public var name: String
        public var note: String?
        public var count: Int
        public var big: Int64
        public var ratio: ExactDouble
        public var flag: Bool?
        public var when: ExactDouble
        public var tags: [String]
        init(_ r: HandRecord) {
            identifier = r.identifier; name = r.name; note = r.note; count = r.count; big = r.big
            ratio = ExactDouble(r.ratio); flag = r.flag; when = ExactDouble(r.when.timeIntervalSinceReferenceDate)
            tags = r.tags
        }
        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.identifier.localValue == rhs.identifier.localValue && lhs.identifier.remoteValue == rhs.identifier.remoteValue
                && lhs.name == rhs.name && lhs.note == rhs.note && lhs.count == rhs.count && lhs.big == rhs.big
                && lhs.ratio == rhs.ratio && lhs.flag == rhs.flag && lhs.when == rhs.when && lhs.tags == rhs.tags
        }
    }

    /// Decodes `bytes` by hand and through `Codable`: both fail with a `DecodingError`, or both give the same
    /// value, which the hand-written encoder writes back as the bytes `Codable` writes.
    static func handWritten(_ bytes: [UInt8]) throws {
        let hand = Result { try HandRecord.decodeRecord(bytes) }
        let twin = Result { try EntityCodec.decode(HandTwin.self, from: bytes) }
        switch (hand, twin) {
        case (.failure(let a), .failure(let b)):
            guard a is DecodingError, b is DecodingError else {
                throw EntityCodecCheckFailure("decoding threw \(a) / \(b), not DecodingErrors")
            }
        case (.success(let value), .success(let expected)):
            guard HandTwin(value) == expected else {
                throw EntityCodecCheckFailure("the paths decode different values: \(value) vs \(expected)")
            }
            guard try value.encodeRecord() == EntityCodec.encode(expected) else {
                throw EntityCodecCheckFailure("the paths encode \(value) differently")
            }
        case (.success(let value), .failure(let error)):
            throw EntityCodecCheckFailure("only the hand-written path decodes \(bytes): \(value); Codable: \(error)")
        case (.failure(let error), .success(let value)):
            throw EntityCodecCheckFailure("only the Codable path decodes \(bytes): \(value); by hand: \(error)")
        }
    }

    /// The types an input can be decoded as (the mode byte modulo their count).
    enum Kind: UInt8, CaseIterable {
        case record, shapes, dictionary, values, handWritten

        func roundTrip(_ bytes: [UInt8]) throws {
            switch self {
            case .record: try EntityCodecChecks.roundTrip(Record.self, bytes, stableBytes: true)
            case .shapes: try EntityCodecChecks.roundTrip([Shape].self, bytes, stableBytes: true)
            case .dictionary: try EntityCodecChecks.roundTrip([String: [Int?]].self, bytes, stableBytes: false)
            case .values: try EntityCodecChecks.roundTrip([[ExactDouble?]].self, bytes, stableBytes: true)
            case .handWritten: try EntityCodecChecks.handWritten(bytes)
            }
        }
    }

    /// Runs the check on one input. Throws ``EntityCodecCheckFailure`` when an invariant breaks.
    public static func check(_ input: [UInt8]) throws {
        guard let mode = input.first else { return }
        try Kind.allCases[Int(mode) % Kind.allCases.count].roundTrip(Array(input.dropFirst()))
    }

    static func roundTrip<T: Codable & Equatable>(_ type: T.Type, _ bytes: [UInt8], stableBytes: Bool) throws {
        let value: T
        do {
            value = try EntityCodec.decode(T.self, from: bytes)
        } catch is DecodingError {
            return
        } catch {
            throw EntityCodecCheckFailure("decoding threw \(Swift.type(of: error)), not a DecodingError: \(error)")
        }
        let encoded: [UInt8]
        do { encoded = try EntityCodec.encode(value) } catch {
            throw EntityCodecCheckFailure("a decoded \(T.self) does not re-encode: \(error)")
        }
        let again: T
        do { again = try EntityCodec.decode(T.self, from: encoded) } catch {
            throw EntityCodecCheckFailure("a re-encoded \(T.self) does not decode: \(error) (bytes \(encoded))")
        }
        guard again == value else {
            throw EntityCodecCheckFailure("a re-encoded \(T.self) decodes to another value: \(value) vs \(again)")
        }
        if stableBytes {
            let third = try EntityCodec.encode(again)
            guard third == encoded else {
                throw EntityCodecCheckFailure("encoding is not stable: \(encoded) then \(third)")
            }
        }
        if (try? EntityCodec.decode(T.self, from: Array(encoded.dropLast()))) != nil {
            throw EntityCodecCheckFailure("a re-encoded \(T.self) cut by one byte still decodes")
        }
    }

    /// Seed inputs (mode byte + record) written by `Fuzz/make-seeds.sh`: real records of each kind.
    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let leaf = Record(id: -3, name: "leaf", note: nil, small: -128, medium: nil, unsigned: 0, word: 65_535,
                          ratio: ExactDouble(-0.0), single: nil, flag: false, when: nil, blob: nil, tags: [],
                          optionalInts: [], grid: [], shape: .none, children: [], identifier: nil)
        let root = Record(id: 1 << 40, name: "root ✓ 日本", note: "a note", small: 127, medium: Int32.min,
                          unsigned: UInt64.max, word: 7, ratio: ExactDouble(.nan), single: 1.5, flag: true,
                          when: Date(timeIntervalSinceReferenceDate: 700_000_000.25), blob: Data([0, 1, 0xFF]),
                          tags: ["a", "", "long tag"], optionalInts: [1, nil, -1], grid: [[1, 2], [], [3]],
                          shape: .group([.circle(radius: ExactDouble(2)), .label("x", size: nil),
                                         .wrapped(.group([], name: "inner"))], name: "outer"),
                          children: [leaf, leaf], identifier: .remote(42, local: "l-42"))
        return [
            ("record-root", [Kind.record.rawValue] + (try EntityCodec.encode(root))),
            ("record-leaf", [Kind.record.rawValue] + (try EntityCodec.encode(leaf))),
            ("shapes", [Kind.shapes.rawValue] + (try EntityCodec.encode([root.shape, .wrapped(.wrapped(.none))]))),
            ("dictionary", [Kind.dictionary.rawValue] + (try EntityCodec.encode(["k": [1, nil], "": []] as [String: [Int?]]))),
            ("values", [Kind.values.rawValue] + (try EntityCodec.encode([[ExactDouble(1), nil], [], [ExactDouble(.infinity)]]))),
            ("hand-written", [Kind.handWritten.rawValue] + (try HandRecord(
                identifier: .remote("r-1", local: "l-1"), name: "hand ✓", note: nil, count: -5, big: .min, ratio: .nan,
                flag: true, when: Date(timeIntervalSinceReferenceDate: 12.5), tags: ["x", ""]).encodeRecord())),
        ]
    }
}

extension EntityCodecChecks.Record: EntityTypeIdentifying {}

extension EntityCodecChecks.HandRecord {
    public init(from record: inout EntityRecordReader) throws {
        identifier = try record.decode(Identifier.self, forKey: "identifier")
        name = try record.decode(String.self, forKey: "name")
        note = try record.decodeIfPresent(String.self, forKey: "note")
        count = try record.decode(Int.self, forKey: "count")
        big = try record.decode(Int64.self, forKey: "big")
        ratio = try record.decode(Double.self, forKey: "ratio")
        flag = try record.decodeIfPresent(Bool.self, forKey: "flag")
        when = try record.decode(Date.self, forKey: "when")
        tags = try record.decode([String].self, forKey: "tags")
    }
}

// MARK: - Replay test (root test target only)

#if !LUCID_FUZZ_HARNESS
/// Replays `Fuzz/FailCases/FuzzEntityCodec/` and `Fuzz/Corpus/FuzzEntityCodec/` through the check (the engine
/// targets' inputs are replayed by `FailCasesReplayTests` in LucidEngineTests; `--filter FailCasesReplayTests` runs
/// both). Inputs listed in `Fuzz/FailCases/KNOWN-ISSUES` are expected to fail.
@Suite("Fuzz FailCases replay (Lucid)")
struct LucidFailCasesReplayTests {
    static let fuzzDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")
    static let target = "FuzzEntityCodec"

    static func inputs(_ folder: String) -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
    }

    static var knownIssues: Set<String> {
        let url = fuzzDirectory.appendingPathComponent("FailCases/KNOWN-ISSUES")
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return Set(text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: " ").first.map(String.init) })
    }

    @Test func replayEntityCodec() throws {
        let failCases = Self.inputs("FailCases"), seeds = Self.inputs("Corpus")
        let known = Self.knownIssues
        for url in failCases + seeds {
            let bytes = try [UInt8](Data(contentsOf: url))
            if known.contains("\(Self.target)/\(url.lastPathComponent)") {
                withKnownIssue { try EntityCodecChecks.check(bytes) }
                continue
            }
            do {
                try EntityCodecChecks.check(bytes)
            } catch let failure as EntityCodecCheckFailure {
                Issue.record("\(Self.target) \(url.lastPathComponent): \(failure)")
            }
        }
        #expect(!seeds.isEmpty, "Fuzz/Corpus/\(Self.target) has no seeds (run Fuzz/make-seeds.sh)")
        print("\(Self.target): replayed \(failCases.count) FailCases and \(seeds.count) corpus inputs")
    }

    /// The seeds decode as the kind their mode byte names and pass the check.
    @Test func seedsPassTheCheck() throws {
        let seeds = try EntityCodecChecks.seeds()
        for seed in seeds { try EntityCodecChecks.check(seed.bytes) }
        let root = try #require(seeds.first { $0.name == "record-root" })
        let record = try EntityCodec.decode(EntityCodecChecks.Record.self, from: Array(root.bytes.dropFirst()))
        #expect(record.children.count == 2 && record.identifier?.remoteValue == 42 && record.ratio.value.isNaN)
        // Garbage is fine (refused), an empty input is fine.
        try EntityCodecChecks.check([])
        try EntityCodecChecks.check([0, 0xFF, 0xFF])
    }
}
#endif
