import Testing
@testable import Lucid

/// The memory store's index keys (``IdentifierHalves``) against the identifiers they stand for: two identifiers
/// are equal under the identifier rule exactly when their halves are, and absorbing halves matches absorbing
/// identifiers, so a `DualHashDictionary` keyed by either finds the same entries.
@Suite("IdentifierHalves: the memory store's keys follow the identifier rule")
struct IdentifierHalvesTests {
    typealias ID = Book.Identifier

    static func halves(_ id: ID) -> IdentifierHalves { IdentifierHalves(id, of: Book.self) }

    /// The rule's table, plus local values that are canonically equivalent strings but different bytes (two ids,
    /// as the disk store files them) and remote values at the ends of their byte order.
    static let pairs: [DualHashTests.Pair] = DualHashTests.equalityTable + [
        .init(lhs: .local("e\u{301}"), rhs: .local("\u{e9}"), equal: false),
        .init(lhs: .remote(.min), rhs: .remote(.max), equal: false),
        .init(lhs: .remote(-1, local: "x"), rhs: .local("x"), equal: true),
        .init(lhs: .remote(-1), rhs: .remote(-1, local: "x"), equal: true),
    ]

    @Test("equal halves exactly for equal identifiers", arguments: pairs)
    func equality(_ pair: DualHashTests.Pair) {
        #expect((pair.lhs == pair.rhs) == pair.equal, "the table itself")
        #expect(Self.halves(pair.lhs).dualEquals(Self.halves(pair.rhs)) == pair.equal)
        #expect(Self.halves(pair.rhs).dualEquals(Self.halves(pair.lhs)) == pair.equal)
    }

    @Test("each half is there exactly when the identifier has it; absorbing halves absorbs identifiers",
          arguments: pairs)
    func halvesAndAbsorbing(_ pair: DualHashTests.Pair) {
        for id in [pair.lhs, pair.rhs] {
            let h = Self.halves(id)
            #expect((h.local != nil) == (id.localKey != nil))
            #expect((h.remote != nil) == (id.remoteKey != nil))
        }
        let absorbed = Self.halves(pair.lhs.absorbing(pair.rhs))
        let fromHalves = Self.halves(pair.lhs).absorbing(Self.halves(pair.rhs))
        #expect(absorbed.local == fromHalves.local && absorbed.remote == fromHalves.remote)
    }

    /// String remote values: their keys are their UTF-8 bytes, so canonically equivalent strings are two ids.
    @Test("string remote halves follow the rule, by bytes")
    func stringRemotes() {
        typealias SID = DualHashTests.SID
        func halves(_ id: SID) -> IdentifierHalves {
            IdentifierHalves(storageKey: id.storageKey, localValue: id.localValue)
        }
        let pairs: [(SID, SID)] = [
            (.remote("e\u{301}"), .remote("\u{e9}")), (.remote("a"), .remote("a")), (.remote("a"), .local("a")),
            (.remote("a", local: "x"), .local("x")), (.remote("a", local: "x"), .remote("b", local: "x")),
            (.remote(""), .remote("", local: "")), (.local("r"), .remote("")),
        ]
        for (lhs, rhs) in pairs {
            #expect(halves(lhs).dualEquals(halves(rhs)) == (lhs == rhs), "\(lhs) and \(rhs)")
        }
    }

    @Test("a dictionary keyed by halves finds what one keyed by identifiers finds")
    func dictionariesAgree() {
        let ids: [ID] = [.local("a"), .remote(1), .remote(1, local: "a"), .remote(2, local: "a"), .local("b"),
                         .remote(3, local: "b"), .local("e\u{301}"), .local("\u{e9}"), .remote(-1), .local("")]
        // Ten rotations of one order of writes (stride 3), each write followed by every lookup; then removals.
        for start in ids.indices {
            var byID = DualHashDictionary<ID, Int>()
            var byHalves = DualHashDictionary<IdentifierHalves, Int>()
            for step in 0 ..< ids.count {
                let id = ids[(start + step * 3) % ids.count]
                byID[id] = step
                byHalves[Self.halves(id)] = step
                #expect(byID.count == byHalves.count, "start \(start) step \(step)")
                for probe in ids {
                    #expect(byID[probe] == byHalves[Self.halves(probe)], "start \(start) step \(step) probe \(probe)")
                    #expect(byID.values(matching: probe) == byHalves.values(matching: Self.halves(probe)))
                }
            }
            for step in 0 ..< ids.count {
                let id = ids[(start + step * 7) % ids.count]
                #expect(byID.removeValues(matching: id) == byHalves.removeValues(matching: Self.halves(id)),
                        "start \(start) removal \(step)")
                #expect(byID.count == byHalves.count)
                for probe in ids { #expect(byID[probe] == byHalves[Self.halves(probe)]) }
            }
        }
    }
}
