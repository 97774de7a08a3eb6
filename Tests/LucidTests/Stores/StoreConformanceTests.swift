import Foundation
import Testing
import Lucid

/// One suite of store behaviour, run against every store kind (memory, LRU memory, disk, memory-over-disk cache).
@Suite("Store conformance")
struct StoreConformanceTests {
    static let library: [Book] = [
        .remote(1, "Dune", genre: "scifi", rating: 4.5, pages: 412, tags: ["classic", "desert"]),
        .remote(2, "Emma", genre: "romance", rating: 3.9, pages: 474, tags: ["classic"]),
        .remote(3, "Neuromancer", genre: "scifi", rating: 4.1, pages: 271, tags: ["cyberpunk"]),
        .remote(4, "Ulysses", genre: nil, rating: 3.6, pages: 730, tags: []),
        .remote(5, "Hyperion", genre: "scifi", rating: 4.5, pages: 482, tags: ["space", "classic"]),
        .remote(6, "Persuasion", genre: "romance", rating: 4.2, pages: 249, tags: []),
        .remote(7, "Solaris", genre: "scifi", rating: 4.0, pages: 204, tags: ["space"]),
    ]

    private func loaded(_ kind: StoreKind) async throws -> (any Store<Book>, TemporaryStore?) {
        let (store, holder) = try kind.make()
        _ = try await store.set(Self.library)
        return (store, holder)
    }

    private func titles(_ store: any Store<Book>, _ query: Query<Book>) async throws -> [String] {
        try await store.search(query).entities.map(\.title)
    }

    @Test("set, get, update, remove", arguments: StoreKind.allCases)
    func crud(_ kind: StoreKind) async throws {
        let (store, holder) = try await loaded(kind)
        #expect(try await store.get(byID: .remote(3))?.title == "Neuromancer")
        #expect(try await store.get(byID: .remote(99)) == nil)
        var updated = Self.library[2]
        updated.rating = 2.0
        let stored = try await store.set([updated])
        #expect(stored.first?.rating == 2.0)
        #expect(try await store.get(byID: .remote(3))?.rating == 2.0)
        try await store.remove([.remote(3), .remote(98)])
        #expect(try await store.get(byID: .remote(3)) == nil)
        #expect(try await store.search(.all).count == Self.library.count - 1)
        let removed = try await store.removeAll(.filter(.genre == .string("romance")))
        #expect(removed.map(\.remoteValue).sorted { ($0 ?? 0) < ($1 ?? 0) } == [2, 6])
        #expect(try await titles(store, .all) == ["Dune", "Ulysses", "Hyperion", "Solaris"])
        _ = holder
    }

    @Test("a local entity gains its remote id: found by local, remote and both", arguments: StoreKind.allCases)
    func dualIdentifiers(_ kind: StoreKind) async throws {
        let (store, holder) = try kind.make()
        let local = Book.Identifier.local("draft-1")
        _ = try await store.set([Book(local, title: "Draft", genre: "essay")])
        #expect(try await store.get(byID: local)?.title == "Draft")
        // The server answers with id 500: the same entity, now with both halves.
        _ = try await store.set([Book(.remote(500, local: "draft-1"), title: "Draft v2", genre: "essay")])
        #expect(try await store.search(.all).count == 1)
        #expect(try await store.get(byID: .local("draft-1"))?.title == "Draft v2")
        #expect(try await store.get(byID: .remote(500))?.title == "Draft v2")
        #expect(try await store.get(byID: .remote(500, local: "draft-1"))?.identifier.localValue == "draft-1")
        // A later write by remote id only keeps the local half (MutableEntity merge).
        _ = try await store.set([Book(.remote(500), title: "Draft v3")])
        #expect(try await store.get(byID: .local("draft-1"))?.title == "Draft v3")
        #expect(try await store.search(.all).count == 1)
        // Another type's identifier space, another remote id: not found.
        #expect(try await store.get(byID: .remote(501, local: "draft-1")) == nil)
        try await store.remove([.local("draft-1")])
        #expect(try await store.search(.all).isEmpty)
        _ = holder
    }

    @Test("identifiers compare by bytes; removing by both halves removes both copies", arguments: StoreKind.allCases)
    func identifierEdgeCases(_ kind: StoreKind) async throws {
        let (store, holder) = try kind.make()
        _ = try await store.set([Book(.local("e\u{301}"), title: "combining"), Book(.local("\u{e9}"), title: "precomposed")])
        #expect(try await store.search(.all).count == 2)
        #expect(try await store.get(byID: .local("\u{e9}"))?.title == "precomposed")
        // The same entity stored once by each half alone (never written with both): one removal by both halves
        // removes both copies.
        _ = try await store.set([Book(.local("l1"), title: "by local")])
        _ = try await store.set([Book(.remote(1), title: "by remote")])
        #expect(try await store.search(.identifiers([Book.Identifier.remote(1, local: "l1")])).count == 2)
        try await store.remove([.remote(1, local: "l1")])
        #expect(try await store.get(byID: .local("l1")) == nil)
        #expect(try await store.get(byID: .remote(1)) == nil)
        #expect(try await store.search(.all).count == 2)
        _ = holder
    }

    @Test("comparisons stay within the value's type", arguments: StoreKind.allCases)
    func comparisons(_ kind: StoreKind) async throws {
        let (store, holder) = try await loaded(kind)
        #expect(try await titles(store, .filter(.genre == .string("scifi"))) == ["Dune", "Neuromancer", "Hyperion", "Solaris"])
        #expect(try await titles(store, .filter(.genre != .string("scifi"))) == ["Emma", "Ulysses", "Persuasion"])
        #expect(try await titles(store, .filter(.genre == .none)) == ["Ulysses"])
        #expect(try await titles(store, .filter(.rating > .double(4.1))) == ["Dune", "Hyperion", "Persuasion"])
        #expect(try await titles(store, .filter(.rating >= .double(4.1))) == ["Dune", "Neuromancer", "Hyperion", "Persuasion"])
        #expect(try await titles(store, .filter(.rating < .double(3.9))) == ["Ulysses"])
        #expect(try await titles(store, .filter(.rating <= .double(3.9))) == ["Emma", "Ulysses"])
        // An int never compares with a double, nor a string with a number.
        #expect(try await titles(store, .filter(.rating > .int(1))).isEmpty)
        #expect(try await titles(store, .filter(.pages < .string("zzz"))).isEmpty)
        #expect(try await titles(store, .filter(.pages > .int(450) && .pages < .int(700))) == ["Emma", "Hyperion"])
        #expect(try await titles(store, .filter(.title > .string("P"))) == ["Ulysses", "Persuasion", "Solaris"])
        let cutoff = Date(timeIntervalSince1970: 1_600_000_000 + 5 * 86_400)
        #expect(try await titles(store, .filter(.published >= .date(cutoff))) == ["Hyperion", "Persuasion", "Solaris"])
        _ = holder
    }

    @Test("regex, contained-in and array properties", arguments: StoreKind.allCases)
    func regexAndContainedIn(_ kind: StoreKind) async throws {
        let (store, holder) = try await loaded(kind)
        #expect(try await titles(store, .filter(.title ~= .string("^[DE]"))) == ["Dune", "Emma"])
        #expect(try await titles(store, .filter(.title ~= .string("on$") && .genre == .string("scifi"))) == ["Hyperion"])
        #expect(try await titles(store, .filter(.pages ~= .string("^4"))) == ["Dune", "Emma", "Hyperion"])
        #expect(try await titles(store, .filter(.genre >> ["romance", "horror"])) == ["Emma", "Persuasion"])
        #expect(try await titles(store, .filter(.tags == .string("classic"))) == ["Dune", "Emma", "Hyperion"])
        #expect(try await titles(store, .filter(.tags >> ["space", "cyberpunk"])) == ["Neuromancer", "Hyperion", "Solaris"])
        #expect(try await titles(store, .filter(.tags == .none)) == ["Ulysses", "Persuasion"])
        #expect(try await titles(store, .filter(!(.tags == .string("classic")))) == ["Neuromancer", "Ulysses", "Persuasion", "Solaris"])
        _ = holder
    }

    @Test("contained-in by local, remote and mixed identifiers", arguments: StoreKind.allCases)
    func identifierSets(_ kind: StoreKind) async throws {
        let (store, holder) = try await loaded(kind)
        _ = try await store.set([Book(.local("l-1"), title: "Local"), Book(.remote(40, local: "l-2"), title: "Both")])
        let ids: [Book.Identifier] = [.remote(5), .local("l-1"), .local("l-2"), .remote(1), .remote(77)]
        #expect(try await titles(store, .identifiers(ids)) == ["Hyperion", "Local", "Both", "Dune"])
        #expect(try await titles(store, .filter(.identifier >> ids)) == ["Local", "Dune", "Hyperion", "Both"])
        #expect(try await titles(store, .filter(.identifier >> ids && .rating > .double(4.2))) == ["Dune", "Hyperion"])
        #expect(try await titles(store, .identifier(.remote(40))) == ["Both"])
        #expect(try await titles(store, .filter(.identifier == .identifier(.local("l-2")) || .title == .string("Emma"))) == ["Emma", "Both"])
        _ = holder
    }

    @Test("and, or, not", arguments: StoreKind.allCases)
    func logic(_ kind: StoreKind) async throws {
        let (store, holder) = try await loaded(kind)
        #expect(try await titles(store, .filter(.genre == .string("scifi") && .rating == .double(4.5))) == ["Dune", "Hyperion"])
        #expect(try await titles(store, .filter(.genre == .string("romance") || .pages > .int(700))) == ["Emma", "Ulysses", "Persuasion"])
        #expect(try await titles(store, .filter(!(.genre == .string("scifi") || .genre == .none))) == ["Emma", "Persuasion"])
        #expect(try await titles(store, .filter(.constant(false))).isEmpty)
        #expect(try await titles(store, .filter(.constant(true) && .pages < .int(250))) == ["Persuasion", "Solaris"])
        #expect(try await titles(store, .filter(!(.title ~= .string("a")))) == ["Dune", "Ulysses", "Hyperion"])
        _ = holder
    }

    @Test("multi-key order, pagination and groups", arguments: StoreKind.allCases)
    func orderingWindowsGroups(_ kind: StoreKind) async throws {
        let (store, holder) = try await loaded(kind)
        let byRating = Query<Book>.all.order([.desc(by: .rating), .asc(by: .title)])
        #expect(try await titles(store, byRating) == ["Dune", "Hyperion", "Persuasion", "Neuromancer", "Solaris", "Emma", "Ulysses"])
        #expect(try await titles(store, byRating.with(offset: 1).with(limit: 3)) == ["Hyperion", "Persuasion", "Neuromancer"])
        #expect(try await titles(store, .all.order([.desc(by: .identifier)]).with(limit: 2)) == ["Solaris", "Persuasion"])
        #expect(try await titles(store, .all.with(offset: 5)) == ["Persuasion", "Solaris"])
        #expect(try await titles(store, .all.with(offset: 50)).isEmpty)
        // A limit of Int.max, with or without an offset, is "all the rest" (no window arithmetic may overflow), on
        // each path: identifier order, one index term, a walk of the index the result is ordered by, a key set in
        // identifier order, a key set ordered by another index.
        for unlimited: Query<Book> in [.all, .filter(.genre == .string("scifi")),
                                       .filter(.pages >= .int(0)).order([.asc(by: .pages)]),
                                       .filter(.genre == .string("scifi") || .genre == .string("romance")),
                                       .filter(.genre == .string("scifi")).order([.asc(by: .pages)])] {
            for offset in [0, 1] {
                let rest = try await titles(store, unlimited.with(offset: offset))
                #expect(!rest.isEmpty)
                #expect(try await titles(store, unlimited.with(offset: offset).with(limit: .max)) == rest)
                #expect(try await titles(store, unlimited.with(offset: offset).with(limit: .max - 1)) == rest)
            }
        }
        #expect(try await titles(store, .all.with(limit: 0)).isEmpty)
        // Absent values sort first ascending; arrays by their smallest element ascending, largest descending.
        #expect(try await titles(store, .all.order([.asc(by: .genre), .desc(by: .pages)]).with(limit: 3)) == ["Ulysses", "Emma", "Persuasion"])
        #expect(try await titles(store, .filter(.tags >> ["classic", "space"]).order([.desc(by: .tags)])) == ["Hyperion", "Solaris", "Dune", "Emma"])
        let grouped = try await store.search(.filter(.pages < .int(480)).order([.asc(by: .pages)]).grouped(by: .genre))
        #expect(grouped.groupKeys == [.string("scifi"), .string("romance")])
        #expect(grouped.group(.string("scifi")).map(\.title) == ["Solaris", "Neuromancer", "Dune"])
        #expect(grouped.group(.string("romance")).map(\.title) == ["Persuasion", "Emma"])
        #expect(grouped.groupedBy == .genre)
        // An ungrouped result has no groups; a query's grouping can be set and cleared.
        let ungrouped = try await store.search(.filter(.pages < .int(480)))
        #expect(ungrouped.groupedBy == nil && ungrouped.groupKeys.isEmpty && ungrouped.groups.isEmpty)
        #expect(ungrouped.group(.string("scifi")).isEmpty)
        var regrouped = Query<Book>.all.grouped(by: .tags)
        #expect(regrouped.groupedBy == .tags)
        regrouped.groupedBy = nil
        #expect(regrouped.groupedBy == nil && regrouped == Query<Book>.all)
        _ = holder
    }

    @Test("invalid queries get typed errors", arguments: StoreKind.allCases)
    func invalidQueries(_ kind: StoreKind) async throws {
        let (store, holder) = try await loaded(kind)
        await #expect(throws: StoreError.self) { _ = try await store.search(.filter(.title ~= .string("(unclosed"))) }
        await #expect(throws: StoreError.self) { _ = try await store.search(.all.with(limit: -1)) }
        await #expect(throws: StoreError.self) { _ = try await store.search(.all.with(offset: -3)) }
        await #expect(throws: StoreError.self) { _ = try await store.search(.filter(.pages ~= .int(4))) }
        do {
            _ = try await store.search(.filter(.title ~= .string("[z-a]")))
            Issue.record("a malformed regex was accepted")
        } catch {
            guard case .invalidQuery(.invalidRegex(let pattern, _)) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(pattern == "[z-a]")
        }
        _ = holder
    }

    @Test("uniquely keeps each identifier once (the original kept only repeated ones)")
    func uniquely() throws {
        let books = [Book.remote(1, "A"), .remote(2, "B"), .remote(1, "A")]
        let result = try Query<Book>.all.uniquelyIdentified().evaluate(over: books)
        #expect(result.map(\.title) == ["A", "B"])
    }
}
