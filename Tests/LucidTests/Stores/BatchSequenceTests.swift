import Foundation
import Testing
import Lucid
import LucidEngineTestSupport

/// A batch written with one `set` must leave what writing its entities one `set` at a time leaves: each entity
/// merges with what the batch's earlier entities left, never with a record the batch already replaced.
@Suite("Batches apply in order")
struct BatchSequenceTests {
    typealias Item = QueryChecks.Item

    static func item(_ identifier: Item.Identifier, _ name: String) -> Item {
        Item(identifier: identifier, name: name, group: nil, score: 0, rank: 0, tags: [])
    }

    @Test("a plain entity replaced by its remote half, then written by its local half, in one batch")
    func replacedThenWrittenByTheOtherHalf() async throws {
        let holder = try TemporaryStore()
        let disk = DiskStore<Item>(engine: holder.engine)
        _ = try await disk.set([Self.item(.remote(1, local: "l1"), "synced")])
        // The first write replaces the synced record with one that has only the remote half (a plain entity
        // keeps the halves it is written with); the second no longer matches it, so it is a new entity.
        _ = try await disk.set([Self.item(.remote(1), "by remote"), Self.item(.local("l1"), "by local")])
        let names = try disk.searchNow(.all).entities.map(\.name).sorted()
        #expect(names == ["by local", "by remote"])
        #expect(try disk.getNow(.remote(1))?.name == "by remote")
        #expect(try disk.getNow(.local("l1"))?.name == "by local")
        #expect(try holder.engine.verify().ok)
    }

    @Test("a local id shared by two remote ids matches the first in key order, within a batch as one at a time")
    func sharedLocalValueWithinBatch() async throws {
        let batched = try TemporaryStore(), single = try TemporaryStore()
        let stores = (DiskStore<Item>(engine: batched.engine), DiskStore<Item>(engine: single.engine))
        let first = Self.item(.remote(1, local: "l1"), "one")
        let batch = [Self.item(.remote(2, local: "l1"), "two"), Self.item(.local("l1"), "by local")]
        _ = try await stores.0.set([first])
        _ = try await stores.1.set([first])
        _ = try await stores.0.set(batch)
        for item in batch { _ = try await stores.1.set([item]) }
        let names = (try stores.0.searchNow(.all).entities.map(\.name), try stores.1.searchNow(.all).entities.map(\.name))
        #expect(names.0 == names.1, "batched \(names.0), one at a time \(names.1)")
        #expect(try batched.engine.verify().ok)
    }

    /// Local values by remote value: two of them equal as `String`s but not as bytes (ids compare by bytes).
    static let locals = ["l0", "l1", "l2", "l3", "\u{e9}", "e\u{301}"]

    /// Random identifiers over few values, in all three forms (a remote value always pairs with the same local).
    static func identifier<I>(_ rng: inout SplitMix64, _ make: (Int, String, Int) -> I) -> I {
        let n = Int(rng.next() % 6)
        return make(n, locals[n], Int(rng.next() % 3))
    }

    @Test("random batches of plain and of mutable entities equal the same writes one at a time",
          arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func randomBatches(seed: UInt64) async throws {
        var rng = SplitMix64(seed: seed)
        let batched = try TemporaryStore(), single = try TemporaryStore()
        let items = (DiskStore<Item>(engine: batched.engine), DiskStore<Item>(engine: single.engine))
        let books = (DiskStore<Book>(engine: batched.engine), DiskStore<Book>(engine: single.engine))
        let memory = (InMemoryStore<Item>(), InMemoryStore<Book>())
        for step in 0..<300 {
            let count = 1 + Int(rng.next() % 6)
            let itemBatch = (0..<count).map { i in
                Self.item(Self.identifier(&rng) { n, local, form in
                    form == 0 ? .local(local) : form == 1 ? .remote(n, local: local) : .remote(n)
                }, "\(step).\(i)")
            }
            let bookBatch = (0..<count).map { i in
                Book(Self.identifier(&rng) { n, local, form in
                    form == 0 ? .local(local) : form == 1 ? .remote(n, local: local) : .remote(n)
                }, title: "\(step).\(i)")
            }
            if rng.next() % 5 == 0 {
                let ids = itemBatch.prefix(2).map(\.identifier), bookIDs = bookBatch.prefix(2).map(\.identifier)
                try await items.0.remove(ids)
                try await books.0.remove(bookIDs)
                for id in ids { try await items.1.remove([id]) }
                for id in bookIDs { try await books.1.remove([id]) }
                try await memory.0.remove(ids)
                try await memory.1.remove(bookIDs)
            } else {
                _ = try await items.0.set(itemBatch)
                _ = try await books.0.set(bookBatch)
                for item in itemBatch { _ = try await items.1.set([item]) }
                for book in bookBatch { _ = try await books.1.set([book]) }
                memory.0.setNow(itemBatch)
                memory.1.setNow(bookBatch)
            }
            let itemStates = [try items.0.searchNow(.all).entities, try items.1.searchNow(.all).entities,
                              try await memory.0.search(.all).entities]
            let bookStates = [try books.0.searchNow(.all).entities, try books.1.searchNow(.all).entities,
                              try await memory.1.search(.all).entities]
            #expect(itemStates[0] == itemStates[1] && itemStates[0] == itemStates[2],
                    "seed \(seed) step \(step): \(itemBatch.map(\.identifier)) gave \(itemStates.map { $0.map(\.identifier) })")
            #expect(bookStates[0] == bookStates[1] && bookStates[0] == bookStates[2], "seed \(seed) step \(step)")
            if itemStates[0] != itemStates[1] || bookStates[0] != bookStates[1] { break }
        }
        #expect(try batched.engine.verify().ok)
        #expect(try single.engine.verify().ok)
    }
}
