import Foundation
import Testing
import Lucid

/// Reads results from a continuous query on its own task, so the test can wait for a given one.
actor Collector {
    private(set) var results: [[String]] = []
    func append(_ titles: [String]) { results.append(titles) }
    var last: [String]? { results.last }
}

@Suite("Continuous queries")
struct ContinuousQueryTests {
    static func observe(_ manager: CoreManager<Book>, _ query: Query<Book>) async throws -> (Collector, Task<Void, Never>) {
        let collector = Collector()
        let continuous = try await manager.search(withQuery: query).continuous
        let task = Task {
            for await result in continuous { await collector.append(result.map(\.title)) }
        }
        return (collector, task)
    }

    @Test("the current result first, then every change; offset and limit re-applied")
    func updates() async throws {
        let (manager, temp) = try CoreManagerTests.manager()
        try await manager.set([Book.remote(1, "a", genre: "x"), Book.remote(2, "b", genre: "y")])
        let query = Query<Book>.filter(.genre == .string("x")).order([.asc(by: .title)]).with(limit: 2)
        let (collector, task) = try await Self.observe(manager, query)
        #expect(await eventually { await collector.last == ["a"] })
        try await manager.set(Book.remote(3, "c", genre: "x"))
        #expect(await eventually { await collector.last == ["a", "c"] })
        // A third match: the limit holds (the original let paginated observers grow past it).
        try await manager.set(Book.remote(4, "0", genre: "x"))
        #expect(await eventually { await collector.last == ["0", "a"] })
        // A write that does not touch the result emits nothing.
        let before = await collector.results.count
        try await manager.set(Book.remote(5, "z", genre: "y"))
        // An entity leaving the filter, and a removal.
        try await manager.set(Book.remote(4, "0", genre: "y"))
        #expect(await eventually { await collector.last == ["a", "c"] })
        try await manager.remove(atID: .remote(1))
        #expect(await eventually { await collector.last == ["c"] })
        #expect(await collector.results.count == before + 2)
        task.cancel()
        _ = temp
    }

    @Test("a result entity written or removed among others is found, whether few or many are written at once")
    func touchedAmongMany() async throws {
        // The manager compares up to a few written identifiers with a result's one by one and hashes more: a write
        // that only takes an entity out of the filter (so the filter alone does not flag it) must refresh either way.
        let (manager, temp) = try CoreManagerTests.manager()
        try await manager.set((1...3).map { Book.remote($0, "x\($0)", genre: "x") } + (10...30).map { Book.remote($0, "y\($0)", genre: "y") })
        let (collector, task) = try await Self.observe(manager, Query<Book>.filter(.genre == .string("x")).order([.asc(by: .title)]))
        #expect(await eventually { await collector.last == ["x1", "x2", "x3"] })
        for (written, leaving) in [(1, 1), (4, 2), (5, 3)] {
            // `leaving` goes to genre "y" together with `written - 1` entities that stay out of the filter.
            let others = (0 ..< written - 1).map { Book.remote(10 + $0, "y\(10 + $0)", genre: "y") }
            try await manager.set(others + [Book.remote(leaving, "x\(leaving)", genre: "y")])
            let expected = (leaving + 1 ..< 4).map { "x\($0)" }
            #expect(await eventually { await collector.last == expected }, "\(written) written")
        }
        // Removals: one alone, then one among six.
        try await manager.set((1...3).map { Book.remote($0, "x\($0)", genre: "x") })
        #expect(await eventually { await collector.last == ["x1", "x2", "x3"] })
        try await manager.remove(atID: .remote(2))
        #expect(await eventually { await collector.last == ["x1", "x3"] })
        try await manager.remove((20...24).map { Book.Identifier.remote($0) } + [.remote(3)])
        #expect(await eventually { await collector.last == ["x1"] })
        task.cancel()
        _ = temp
    }

    @Test("an offset window shifts when something sorts before it")
    func offsetWindow() async throws {
        let (manager, temp) = try CoreManagerTests.manager()
        try await manager.set((1...5).map { Book.remote($0, "t\($0)") })
        let (collector, task) = try await Self.observe(manager, Query<Book>.all.order([.asc(by: .title)]).with(offset: 2).with(limit: 2))
        #expect(await eventually { await collector.last == ["t3", "t4"] })
        try await manager.set(Book.remote(9, "t0"))
        #expect(await eventually { await collector.last == ["t2", "t3"] })
        try await manager.remove([.remote(9), .remote(1)])
        #expect(await eventually { await collector.last == ["t4", "t5"] })
        task.cancel()
        _ = temp
    }

    @Test("observers of one query share one observation; stopping releases it")
    func sharingAndRelease() async throws {
        let (manager, temp) = try CoreManagerTests.manager()
        try await manager.set(Book.remote(1, "a"))
        let (c1, t1) = try await Self.observe(manager, .all)
        let (c2, t2) = try await Self.observe(manager, .all)
        let (c3, t3) = try await Self.observe(manager, .filter(.title == .string("a")))
        #expect(await eventually {
            let (a, b, c) = (await c1.last, await c2.last, await c3.last)
            return a == ["a"] && b == ["a"] && c == ["a"]
        })
        #expect(manager.observedQueryCount == 2)
        try await manager.set(Book.remote(2, "b"))
        #expect(await eventually {
            let (a, b) = (await c1.last, await c2.last)
            return a == ["a", "b"] && b == ["a", "b"]
        })
        t1.cancel()
        t3.cancel()
        #expect(await eventually { manager.observedQueryCount == 1 })
        t2.cancel()
        #expect(await eventually { manager.observedQueryCount == 0 })
        // A continuous sequence that is never iterated registers nothing.
        let unused = try await manager.search(withQuery: .all).continuous
        #expect(manager.observedQueryCount == 0)
        _ = unused
        _ = temp
    }

    @Test("a dropped iterator is released without cancellation")
    func droppedIterator() async throws {
        let (manager, temp) = try CoreManagerTests.manager()
        do {
            var iterator = try await manager.search(withQuery: .all).continuous.makeAsyncIterator()
            _ = await iterator.next()
            #expect(manager.observedQueryCount == 1)
        }
        #expect(await eventually { manager.observedQueryCount == 0 })
        _ = temp
    }

    @Test("a slow observer gets the latest result, not a backlog")
    func slowObserver() async throws {
        let (manager, temp) = try CoreManagerTests.manager()
        var iterator = try await manager.search(withQuery: .all.order([.asc(by: .pages)])).continuous.makeAsyncIterator()
        #expect(await iterator.next()?.isEmpty == true)
        for i in 1...20 { try await manager.set(Book.remote(i, "b\(i)", pages: i)) }
        // Twenty results were published while nobody read: the next one is the latest.
        #expect(await iterator.next()?.count == 20)
        _ = temp
    }
}
