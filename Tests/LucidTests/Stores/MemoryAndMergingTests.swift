import Foundation
import Testing
import Lucid

/// A note whose `merging` keeps fields the update lacks (a partial payload must not erase them).
struct Note: LocalEntity {
    typealias Identifier = EntityIdentifier<Note, String>
    var identifier: Identifier
    var text: String?
    var author: String?

    enum IndexName: String, EntityIndexName { case author }
    func entityIndexValue(for indexName: IndexName) -> EntityIndexValue { .optional(author) { .string($0) } }

    func merging(_ updated: Note) -> Note {
        Note(identifier: updated.identifier, text: updated.text ?? text, author: updated.author ?? author)
    }
}

@Suite("Memory store and merging")
struct MemoryAndMergingTests {
    @Test("the LRU limit evicts for real, reads count as uses")
    func lruEviction() async throws {
        let store = InMemoryStore<Book>(limit: 3)
        store.setNow((1...3).map { Book.remote($0, "b\($0)") })
        #expect(store.getNow(.remote(1)) != nil)            // 1 is now the most recently used
        _ = try await store.search(.filter(.title == .string("b2")))   // so is 2
        store.setNow([Book.remote(4, "b4")])                 // evicts 3, the least recently used
        #expect(store.count == 3)
        #expect(store.getNow(.remote(3)) == nil)
        #expect(try await store.search(.all).map(\.title) == ["b1", "b2", "b4"])
        store.setNow((5...10).map { Book.remote($0, "b\($0)") })
        #expect(store.count == 3)
        #expect(try await store.search(.all).map(\.title) == ["b8", "b9", "b10"])
        // Evicted entities are gone, not only forgotten by the recency list (bug 1.15.7 of the original).
        #expect(try await store.search(.filter(.title == .string("b1"))).isEmpty)
    }

    @Test("every store merges a write over the stored entity", arguments: ["memory", "disk", "cache"])
    func merging(_ kind: String) async throws {
        let temp = try TemporaryStore()
        let store: any Store<Note> = switch kind {
        case "memory": InMemoryStore<Note>()
        case "disk": DiskStore<Note>(engine: temp.engine)
        default: CacheStore(memory: InMemoryStore<Note>(limit: 10), disk: DiskStore<Note>(engine: temp.engine))
        }
        _ = try await store.set([Note(identifier: .remote("n1"), text: "hello", author: "ann")])
        let stored = try await store.set([Note(identifier: .remote("n1"), text: nil, author: "bob")])
        #expect(stored.first?.text == "hello")
        #expect(try await store.get(byID: .remote("n1")) == Note(identifier: .remote("n1"), text: "hello", author: "bob"))
        // The index follows the merged value.
        #expect(try await store.search(.filter(.author == .string("bob"))).count == 1)
        #expect(try await store.search(.filter(.author == .string("ann"))).isEmpty)
        // Two writes of one entity in a single batch merge in order.
        _ = try await store.set([Note(identifier: .remote("n2"), text: "a", author: nil),
                                 Note(identifier: .remote("n2"), text: nil, author: "cy")])
        #expect(try await store.get(byID: .remote("n2")) == Note(identifier: .remote("n2"), text: "a", author: "cy"))
    }
}
