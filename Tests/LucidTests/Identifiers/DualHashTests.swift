import Foundation
import Testing
import Lucid
import LucidEngineTestSupport

/// Identifiers and the DualHash collections: Lucid's rule `local == (local, remote)`, `remote == (local, remote)`,
/// `local != remote`, and lookups, writes and removals by either half (lucid-semantics.md, section 1.1).
@Suite("DualHash collections and identifiers")
struct DualHashTests {
    typealias ID = Book.Identifier                      // Int remote values
    enum Tag: EntityTypeIdentifying {}
    typealias SID = EntityIdentifier<Tag, String>      // String remote values

    // MARK: The identifier rule

    struct Pair: CustomTestStringConvertible, Sendable {
        var lhs: ID, rhs: ID, equal: Bool
        var testDescription: String { "\(lhs) \(equal ? "==" : "!=") \(rhs)" }
    }

    static let equalityTable: [Pair] = [
        Pair(lhs: .local("a"), rhs: .local("a"), equal: true),
        Pair(lhs: .local("a"), rhs: .local("b"), equal: false),
        Pair(lhs: .remote(1), rhs: .remote(1), equal: true),
        Pair(lhs: .remote(1), rhs: .remote(2), equal: false),
        Pair(lhs: .local("a"), rhs: .remote(1, local: "a"), equal: true),      // local == (local, remote)
        Pair(lhs: .remote(1), rhs: .remote(1, local: "a"), equal: true),       // remote == (local, remote)
        Pair(lhs: .local("a"), rhs: .remote(1), equal: false),                 // local != remote
        Pair(lhs: .remote(1, local: "a"), rhs: .remote(1, local: "a"), equal: true),
        Pair(lhs: .remote(1, local: "a"), rhs: .remote(2, local: "a"), equal: false),  // different remotes, same local
        Pair(lhs: .remote(1, local: "a"), rhs: .remote(1, local: "b"), equal: true),   // the remote halves decide
        Pair(lhs: .local("a"), rhs: .remote(1, local: "b"), equal: false),
        Pair(lhs: .remote(2), rhs: .remote(1, local: "a"), equal: false),
        Pair(lhs: .local(""), rhs: .local(""), equal: true),
        Pair(lhs: .remote(0), rhs: .remote(0, local: ""), equal: true),
    ]

    @Test(arguments: equalityTable)
    func identifierRule(_ pair: Pair) {
        #expect((pair.lhs == pair.rhs) == pair.equal)
        #expect((pair.rhs == pair.lhs) == pair.equal)   // symmetric
        #expect(pair.lhs.dualEquals(pair.rhs) == pair.equal)
        #expect(pair.lhs == pair.lhs)                   // reflexive
    }

    @Test func ruleIsNotTransitive() {
        // Why identifiers are not Hashable: (1, a) == a == (2, a), yet (1, a) != (2, a).
        let a = ID.local("a"), one = ID.remote(1, local: "a"), two = ID.remote(2, local: "a")
        #expect(one == a && a == two && one != two)
    }

    @Test func identifierTypeIDs() {
        #expect(ID.identifierTypeID == "Book")
        #expect(SID.identifierTypeID == "Tag")
        #expect(ID.remote(3, local: "x").description == "Book(local: x, remote: 3)")
    }

    @Test func mergeFoldsTheRemoteHalfAndRefusesConflicts() throws {
        var id = ID.local("a")
        try id.merge(with: .remote(5))
        #expect(id.localValue == "a" && id.remoteValue == 5)
        try id.merge(with: .remote(5, local: "a"))
        #expect(throws: ManagerError.self) { try id.merge(with: .remote(6)) }
        #expect(throws: ManagerError.self) { try id.merge(with: .remote(5, local: "b")) }
        #expect(id.localValue == "a" && id.remoteValue == 5)
    }

    // MARK: DualHashDictionary

    enum Half: String, CaseIterable, Sendable { case local, remote, both }

    static func key(_ half: Half, _ r: Int = 7) -> ID {
        switch half {
        case .local: .local("l\(r)")
        case .remote: .remote(r)
        case .both: .remote(r, local: "l\(r)")
        }
    }

    @Test(arguments: Half.allCases, Half.allCases)
    func lookupAfterInsert(stored: Half, lookedUp: Half) {
        var d = DualHashDictionary<ID, String>()
        d[Self.key(stored)] = "v"
        // Found unless one side has only the local half and the other only the remote half.
        let found = !(Set([stored, lookedUp]) == [.local, .remote])
        #expect((d[Self.key(lookedUp)] == "v") == found)
        #expect(d.values(matching: Self.key(lookedUp)) == (found ? ["v"] : []))
        #expect((d.storedKey(for: Self.key(lookedUp)) != nil) == found)
        #expect(d.count == 1)
        // Another thing altogether is never found: other values, or the same local with another remote.
        #expect(d[Self.key(lookedUp, 8)] == nil)
        #expect(d[.remote(9, local: "l7")] == (stored == .local ? "v" : nil))   // a local-only entry has no remote to differ
        #expect(d[.remote(7, local: "other")] == (stored == .local ? nil : "v"))
    }

    @Test(arguments: Half.allCases, Half.allCases)
    func writeAbsorbsTheMissingHalf(first: Half, second: Half) {
        var d = DualHashDictionary<ID, Int>()
        d[Self.key(first)] = 1
        d[Self.key(second)] = 2
        let separate = Set([first, second]) == [.local, .remote]
        #expect(d.count == (separate ? 2 : 1))
        if !separate {
            // One entry, holding every half either write knew, found by every half.
            let stored = d.storedKey(for: Self.key(.both))
            let knewLocal = first != .remote || second != .remote
            let knewRemote = first != .local || second != .local
            #expect(stored?.localValue == (knewLocal ? "l7" : nil))
            #expect(stored?.remoteValue == (knewRemote ? 7 : nil))
            #expect(d[Self.key(.both)] == 2)
            if knewLocal { #expect(d[Self.key(.local)] == 2) }
            if knewRemote { #expect(d[Self.key(.remote)] == 2) }
        }
    }

    @Test func twoEntriesFoldIntoOne() {
        // The same thing stored once by its local half only and once by its remote half only...
        var d = DualHashDictionary<ID, String>()
        d[.local("l7")] = "by local"
        d[.remote(7)] = "by remote"
        d[.local("l8")] = "unrelated"
        #expect(d.count == 3)
        // ...is two entries equal to the full identifier; the one holding the remote half comes first.
        #expect(d.values(matching: .remote(7, local: "l7")) == ["by remote", "by local"])
        #expect(d[.remote(7, local: "l7")] == "by remote")
        var copy = d
        #expect(copy.removeValues(matching: .remote(7, local: "l7")) == ["by remote", "by local"])
        #expect(copy.count == 1 && copy[.local("l7")] == nil)
        // A write with both halves folds them into one entry.
        let replaced = d.updateValue("both", forKey: .remote(7, local: "l7"))
        #expect(replaced == "by remote")
        #expect(d.count == 2)
        #expect(d[.local("l7")] == "both" && d[.remote(7)] == "both")
        #expect(d.values(matching: .remote(7, local: "l7")) == ["both"])
        #expect(d.storedKey(for: .local("l7"))?.remoteValue == 7)
        #expect(Set(d.values) == ["both", "unrelated"])
        #expect(d[.local("l8")] == "unrelated")
    }

    @Test(arguments: Half.allCases, Half.allCases)
    func removalByEitherHalf(stored: Half, removedBy: Half) {
        var d = DualHashDictionary<ID, Int>()
        d[Self.key(stored)] = 1
        d[Self.key(stored, 8)] = 2
        let matches = !(Set([stored, removedBy]) == [.local, .remote])
        let removed = d.removeValue(forKey: Self.key(removedBy))
        #expect(removed == (matches ? 1 : nil))
        #expect(d.count == (matches ? 1 : 2))
        for half in Half.allCases where Set([stored, half]) != [.local, .remote] {
            #expect((d[Self.key(half)] == nil) == matches)
            #expect(d[Self.key(half, 8)] == 2)
        }
        // The freed slot is reused and the entry is found again by its halves.
        d[Self.key(.both)] = 3
        #expect(d[Self.key(.local)] == 3 && d[Self.key(.remote)] == 3)
        #expect(d.count == 2)
    }

    @Test func removingAForeignFullKeyKeepsTheEntry() {
        var d = DualHashDictionary<ID, Int>()
        d[.remote(1, local: "a")] = 1
        let removed = d.removeValue(forKey: .remote(2, local: "a"))   // same local, other remote: another thing
        #expect(removed == nil)
        #expect(d.count == 1)
        d[.remote(1)] = nil                                            // setting nil removes
        #expect(d.isEmpty && d[.local("a")] == nil)
        d.removeAll()
        #expect(d.isEmpty && d.keys.isEmpty)
    }

    @Test func iterationKeysAndValues() {
        var d = DualHashDictionary<ID, Int>([(.local("a"), 1), (.remote(2), 2), (.remote(3, local: "c"), 3), (.local("a"), 4)])
        #expect(d.count == 3)
        d.removeValue(forKey: .remote(2))
        let pairs = d.map { ($0.key.description, $0.value) }
        #expect(pairs.map(\.0).sorted() == ["Book(local: a)", "Book(local: c, remote: 3)"])
        #expect(Set(pairs.map(\.1)) == [3, 4] && Set(d.values) == [3, 4] && d.keys.count == 2)
    }

    // MARK: DualHashSet

    @Test func dualHashSet() {
        var s = DualHashSet<ID>()
        let inserted = [s.insert(.local("a")), s.insert(.local("a")), s.insert(.remote(1))]
        #expect(inserted == [true, false, true])
        #expect(s.count == 2)
        #expect(s.contains(.remote(1, local: "a")) && s.contains(.local("a")) && s.contains(.remote(1)))
        #expect(!s.contains(.remote(2)) && !s.contains(.local("b")) && !s.contains(.remote(2, local: "b")))
        // A full identifier folds the two into one element holding both halves.
        let insertedFull = s.insert(.remote(1, local: "a"))
        #expect(!insertedFull)
        #expect(s.count == 1)
        #expect(Array(s).map(\.description) == ["Book(local: a, remote: 1)"])
        s.remove(.local("a"))
        #expect(s.isEmpty && !s.contains(.remote(1)))
        // Initialised from a sequence, equal identifiers collapse.
        let t = DualHashSet<ID>([.remote(1), .remote(1, local: "x"), .local("x"), .local("y"), .remote(2)])
        #expect(t.count == 3)
        #expect(t.contains(.local("x")) && t.contains(.local("y")) && t.contains(.remote(2)))
    }

    // MARK: Ordering

    @Test func orderingIntRemote() {
        let sorted: [ID] = [.local(""), .local("A"), .local("a"), .local("b"), .local("ba"),
                            .remote(Int.min), .remote(-300), .remote(-1, local: "zzz"), .remote(0), .remote(1),
                            .remote(256), .remote(Int.max)]
        for (i, lhs) in sorted.enumerated() {
            for (j, rhs) in sorted.enumerated() {
                #expect((lhs < rhs) == (i < j), "\(lhs) < \(rhs)")
                // The disk store's key order is the same order.
                #expect(lhs.storageKey.lexicographicallyPrecedes(rhs.storageKey) == (i < j), "\(lhs) key < \(rhs) key")
            }
        }
        #expect(sorted.shuffled().sorted() == sorted)
        #expect(ID.remote(-1).storageKey == [0x72, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(ID.local("ab").storageKey == [0x6C, 0x61, 0x62])
    }

    @Test func orderingStringRemoteByUTF8Bytes() {
        // "e\u{301}x" (e + combining acute) sorts before "é" by UTF-8 bytes (65 CC 81 < C3 A9) though String's `<`
        // puts it after; identifiers, like the disk keys, use the bytes.
        #expect("é" < "e\u{301}x")
        let sorted: [SID] = [.local("Z"), .local("e\u{301}x"), .local("é"), .remote(""), .remote("Z"), .remote("a"),
                             .remote("e\u{301}x"), .remote("é", local: "0"), .remote("日本"), .remote("🔑")]
        for (i, lhs) in sorted.enumerated() {
            for (j, rhs) in sorted.enumerated() {
                #expect((lhs < rhs) == (i < j), "\(lhs) < \(rhs)")
                #expect(lhs.storageKey.lexicographicallyPrecedes(rhs.storageKey) == (i < j), "\(lhs) key < \(rhs) key")
            }
        }
    }

    @Test func canonicallyEquivalentStringsAreDistinctIdentifiers() {
        // Storage keys are UTF-8 bytes, so the disk store keeps "e\u{301}" and "\u{e9}" as two records; identifier
        // equality and the DualHash collections compare bytes too (ByteString), so memory agrees.
        #expect(ID.local("e\u{301}").storageKey != ID.local("\u{e9}").storageKey)
        #expect(ID.local("e\u{301}") != ID.local("\u{e9}"))
        #expect(SID.remote("e\u{301}") != SID.remote("\u{e9}"))
        var d = DualHashDictionary<ID, Int>()
        d[.local("e\u{301}")] = 1
        #expect(d[.local("\u{e9}")] == nil)
    }

    // MARK: Codable

    @Test func codableRoundTrip() throws {
        let ids: [ID] = [.local("a"), .remote(-5), .remote(Int.max, local: "ü")]
        for id in ids {
            let json = try JSONDecoder().decode(ID.self, from: JSONEncoder().encode(id))
            let binary = try EntityCodec.decode(ID.self, from: EntityCodec.encode(id))
            for decoded in [json, binary] {
                #expect(decoded.localValue == id.localValue && decoded.remoteValue == id.remoteValue)
            }
        }
        let s = SID.remote("r", local: "l")
        let decoded = try JSONDecoder().decode(SID.self, from: JSONEncoder().encode(s))
        #expect(decoded.localValue == "l" && decoded.remoteValue == "r")
        #expect(String(decoding: try JSONEncoder().encode(ID.local("a")), as: UTF8.self) == #"{"local":"a"}"#)
    }

    @Test(arguments: [#"{}"#, #"{"local":null,"remote":null}"#, #"{"other":1}"#, #"{"remote":"not an int"}"#, #"[]"#])
    func decodingRefusesAnIdentifierWithoutAValue(_ json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ID.self, from: Data(json.utf8)) }
    }

    @Test func binaryDecodingRefusesAnIdentifierWithoutAValue() throws {
        struct Neither: Codable { var other: Int }
        #expect(throws: DecodingError.self) { try EntityCodec.decode(ID.self, from: EntityCodec.encode(Neither(other: 1))) }
    }

    // MARK: Randomized, against a model

    /// The reference: a plain list of entries, searched linearly with the dual rule.
    struct Model {
        var entries: [(key: ID, value: Int)] = []

        /// Entries equal to `key`: the one sharing its remote half first, then the one sharing only its local half.
        func matches(_ key: ID) -> [Int] {
            let equal = entries.indices.filter { entries[$0].key == key }
            let byRemote = equal.filter { key.remoteValue != nil && entries[$0].key.remoteValue == key.remoteValue }
            return byRemote + equal.filter { !byRemote.contains($0) }
        }

        func get(_ key: ID) -> Int? { matches(key).first.map { entries[$0].value } }
        func all(_ key: ID) -> [Int] { matches(key).map { entries[$0].value } }

        mutating func set(_ key: ID, _ value: Int) -> Int? {
            let found = matches(key)
            guard let target = found.first else {
                entries.append((key, value))
                return nil
            }
            let old = entries[target].value
            entries[target] = (entries[target].key.absorbing(key), value)
            // Another entry equal to the key is the same thing stored under its local half alone: folded in.
            let folded = found.dropFirst().filter { entries[$0].key.remoteValue == nil }
            entries = entries.indices.filter { !folded.contains($0) }.map { entries[$0] }
            return old
        }

        mutating func remove(_ key: ID) -> Int? {
            guard let target = matches(key).first else { return nil }
            return entries.remove(at: target).value
        }
    }

    @Test(arguments: 0..<8)
    func randomizedAgainstModel(seed: UInt64) {
        var rng = SplitMix64(seed: 0xD0A1 &+ seed)
        func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        func identifier() -> ID {
            // A remote id and its local id always pair the same way, as with a real server.
            let r = int(12) - 4
            return switch int(3) {
            case 0: .local("l\(r)")
            case 1: .remote(r)
            default: .remote(r, local: "l\(r)")
            }
        }
        var d = DualHashDictionary<ID, Int>()
        var s = DualHashSet<ID>()
        var model = Model()
        for step in 0..<2_000 {
            let key = identifier()
            switch int(10) {
            case 0..<5:
                let value = step
                let (got, expected) = (d.updateValue(value, forKey: key), model.set(key, value))
                #expect(got == expected, "step \(step): set \(key)")
                s.insert(key)
            case 5..<7:
                let (got, expected) = (d.removeValue(forKey: key), model.remove(key))
                #expect(got == expected, "step \(step): remove \(key)")
                s.remove(key)
            default:
                #expect(d[key] == model.get(key), "step \(step): get \(key)")
                #expect(d.values(matching: key) == model.all(key), "step \(step): all matching \(key)")
            }
            #expect(d.count == model.entries.count, "step \(step)")
            #expect(s.count == model.entries.count, "step \(step): set count")
            #expect(s.contains(key) == (model.get(key) != nil), "step \(step): set contains \(key)")
        }
        // Same entries at the end, with the same halves known.
        let stored = d.map { "\($0.key.description)=\($0.value)" }.sorted()
        #expect(stored == model.entries.map { "\($0.key.description)=\($0.value)" }.sorted())
    }
}
