import Foundation
import Testing
@testable import Lucid

/// ``EntityRecordReader``'s duplicate-key rule on records whose duplicates its checking pass must find: past
/// the keys it fingerprints on the stack, and among keys of the same length, first and last byte.
@Suite("Entity record reader: keys stored twice")
struct EntityRecordReaderDuplicateTests {
    /// Entries written in order, under keys built at run time (`Codable`'s writer does not refuse duplicates).
    struct Entries: Encodable {
        var pairs: [(String, Int)]
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            for (key, value) in pairs { try c.encode(value, forKey: Key(stringValue: key)) }
        }
    }

    /// The keys a ``Probe`` reads, in order.
    protocol ReadPlan { static var keys: [StaticString] { get } }

    /// Reads `Plan.keys` as `Int`s, in order.
    struct Probe<Plan: ReadPlan>: EntityRecordCodable {
        typealias Identifier = EntityIdentifier<Probe, Int>
        var identifier: Identifier { .remote(0) }
        var values: [Int] = []
        enum IndexName: String, EntityIndexName { case values }
        func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .int(0) }
        func encode(to record: inout EntityRecordWriter) throws {}
        init(from record: inout EntityRecordReader) throws {
            for key in Plan.keys { values.append(try record.decode(Int.self, forKey: key)) }
        }
        init(from decoder: any Decoder) throws { fatalError("not used") }
        func encode(to encoder: any Encoder) throws {}
    }

    /// `k00` ... `k39`, then `k05` again: the cursor then sits on the duplicate, the 41st entry.
    enum FortyThenAgain: ReadPlan {
        static let keys: [StaticString] = [
        "k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09",
        "k10", "k11", "k12", "k13", "k14", "k15", "k16", "k17", "k18", "k19",
        "k20", "k21", "k22", "k23", "k24", "k25", "k26", "k27", "k28", "k29",
        "k30", "k31", "k32", "k33", "k34", "k35", "k36", "k37", "k38", "k39",
        "k05",
        ]
    }

    @Test("a duplicate past the fingerprinted keys reads from its first entry")
    func duplicatePastTheFingerprints() throws {
        var pairs = (0..<40).map { (String(format: "k%02d", $0), $0) }
        pairs.append(("k05", 999))
        let bytes = try EntityCodec.encode(Entries(pairs: pairs))
        let probe = try Probe<FortyThenAgain>.decodeRecord(bytes)
        #expect(probe.values == Array(0..<40) + [5])
    }

    /// Keys of equal length, first and last byte, then the second again.
    enum NearMisses: ReadPlan { static let keys: [StaticString] = ["axxb", "ayyb", "azzb", "ayyb"] }

    @Test("among keys alike at both ends, the duplicate is found, and the others read their own values")
    func nearMisses() throws {
        let bytes = try EntityCodec.encode(Entries(pairs: [("axxb", 1), ("ayyb", 2), ("azzb", 3), ("ayyb", 4)]))
        #expect(try Probe<NearMisses>.decodeRecord(bytes).values == [1, 2, 3, 2])
        let distinct = try EntityCodec.encode(Entries(pairs: [("axxb", 1), ("ayyb", 2), ("azzb", 3), ("b", 4)]))
        #expect(try Probe<NearMisses>.decodeRecord(distinct).values == [1, 2, 3, 2])
    }

    /// The empty key, twice.
    enum EmptyKeys: ReadPlan { static let keys: [StaticString] = ["", "a", ""] }

    @Test("the empty key stored twice reads from its first entry")
    func emptyKey() throws {
        let bytes = try EntityCodec.encode(Entries(pairs: [("", 1), ("a", 2), ("", 3)]))
        #expect(try Probe<EmptyKeys>.decodeRecord(bytes).values == [1, 2, 1])
    }

    /// Keys that share length, first, second and last byte in groups (so they share Bloom bits), and others.
    static let pool: [StaticString] = [
        "a0z", "a1z", "a2z", "a3z", "b", "bb", "title", "tixle", "tiyle", "pages", "x", "", "author", "auth0r",
        "k00", "k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09", "k10", "k11", "k12", "k13",
    ]

    @Test("random records with repeated keys read like a first-entry lookup, in any read order")
    func randomRecordsAndReads() throws {
        var state: UInt64 = 0x5EED
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        for round in 0..<400 {
            // A record of up to 40 entries drawn from the first `span` keys of the pool (few: many duplicates).
            let span = 2 + next(Self.pool.count - 1)
            let count = next(41)
            let pairs = (0..<count).map { i in ("\(Self.pool[next(span)])", round * 100 + i) }
            let bytes = try EntityCodec.encode(Entries(pairs: pairs))
            // Reads in written order (the usual case), then in random orders with repeats.
            var plans: [[StaticString]] = [pairs.map { p in Self.pool.first { "\($0)" == p.0 }! }]
            for _ in 0..<3 { plans.append((0..<next(30)).map { _ in Self.pool[next(span)] }) }
            for plan in plans {
                var reader = try EntityRecordReader(bytes)
                for key in plan {
                    let expected = pairs.first { $0.0 == "\(key)" }?.1
                    let read = Result { try reader.decode(Int.self, forKey: key) }
                    switch (read, expected) {
                    case (.success(let v), let e?):
                        #expect(v == e, "record \(pairs), plan \(plan), key \(key)")
                    case (.failure(let error), nil):
                        if case DecodingError.keyNotFound = error {} else { Issue.record("\(error)") }
                    default:
                        Issue.record("record \(pairs), plan \(plan), key \(key): read \(read), expected \(String(describing: expected))")
                    }
                }
                try reader.finish()
            }
        }
    }

    @Test("key bytes compare equal exactly when equal, for every length to 40 and every differing byte")
    func keyComparison() {
        for n in 0...40 {
            let a = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
            a.withUnsafeBytes { pa in
                var b = a
                #expect(b.withUnsafeBytes { bytesEqual(pa.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                                                       $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: n) })
                for i in 0..<n {
                    b = a
                    b[i] ^= 0x40
                    #expect(!b.withUnsafeBytes { bytesEqual(pa.baseAddress!, $0.baseAddress!, count: n) })
                }
            }
        }
    }
}
