import Testing
@testable import Lucid
import LucidEngineTestSupport

/// The memory store's non-generic bookkeeping (``InMemoryTable``) against a plain model of an LRU cache, with its
/// invariants checked after every step.
@Suite("Memory store bookkeeping")
struct InMemoryTableTests {
    /// Least recently used last; the titles held.
    struct Model {
        var order: [Int] = []
        var titles: [Int: String] = [:]
        let limit: Int

        mutating func use(_ id: Int) {
            guard let at = order.firstIndex(of: id) else { return }
            order.remove(at: at)
            order.insert(id, at: 0)
        }

        mutating func set(_ id: Int, _ title: String) {
            if titles[id] != nil { order.removeAll { $0 == id } }
            order.insert(id, at: 0)
            titles[id] = title
            while order.count > limit { titles[order.removeLast()] = nil }
        }

        mutating func remove(_ id: Int) {
            order.removeAll { $0 == id }
            titles[id] = nil
        }
    }

    @Test("random gets, sets, batches and removes keep the LRU order and contents of a model", arguments: [1, 5, 17])
    func againstModel(limit: Int) throws {
        let store = InMemoryStore<Book>(limit: limit)
        var model = Model(limit: limit)
        var rng = SplitMix64(seed: UInt64(limit))
        for step in 0 ..< 3_000 {
            let id = Int(rng.next() % 40)
            switch rng.next() % 6 {
            case 0, 1:
                let got = store.getNow(.remote(id))
                #expect(got?.title == model.titles[id], "step \(step): get \(id)")
                model.use(id)
            case 2:
                let title = "t\(step)"
                let stored = store.setNow([Book.remote(id, title)])
                #expect(stored.map(\.title) == [title])
                model.set(id, title)
            case 3:
                // A batch, one identifier twice: the later write merges over the earlier.
                let other = Int(rng.next() % 40)
                let batch = [Book.remote(id, "a\(step)"), Book.remote(other, "b\(step)"), Book.remote(id, "c\(step)")]
                store.setNow(batch)
                model.set(id, "a\(step)")
                model.set(other, "b\(step)")
                model.set(id, "c\(step)")
            case 4:
                store.removeNow([.remote(id)])
                model.remove(id)
            default:
                let ids = [id, Int(rng.next() % 40)]
                let found = try store.searchNow(.identifiers(ids.map { .remote($0) }))
                #expect(Set(found.entities.map(\.title)) == Set(ids.compactMap { model.titles[$0] }), "step \(step)")
                // The search touches what it found, in the order of the ids asked.
                for id in ids where model.titles[id] != nil { model.use(id) }
            }
            store.checkInvariants()
            #expect(store.count == model.order.count)
            #expect(store.identifiersByRecency.map { $0.remoteValue } == model.order, "step \(step)")
        }
    }

    @Test("an entity stored once by each half alone, then with both: one entity, filed under both")
    func halvesFoldTogether() {
        let store = InMemoryStore<Book>(limit: 10)
        store.setNow([Book(.local("l1"), title: "by local")])
        store.setNow([Book(.remote(1), title: "by remote")])
        store.checkInvariants()
        #expect(store.count == 2)
        store.setNow([Book(.remote(1, local: "l1"), title: "both")])
        store.checkInvariants()
        #expect(store.count == 1)
        #expect(store.getNow(.local("l1"))?.title == "both")
        #expect(store.getNow(.remote(1))?.title == "both")
        store.removeNow([.local("l1")])
        store.checkInvariants()
        #expect(store.count == 0)
        #expect(store.getNow(.remote(1)) == nil)
    }
}
