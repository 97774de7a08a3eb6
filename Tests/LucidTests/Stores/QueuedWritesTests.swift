import Foundation
import Testing
import Lucid
import LucidEngine
import LucidEngineTestSupport

/// Writes begun while earlier ones wait for their sync: each merges over the queued writes before it (which no
/// snapshot shows yet), none is visible before it is durable, and one sync makes all of them durable.
@Suite("Queued writes")
struct QueuedWritesTests {
    typealias Item = QueryChecks.Item

    /// A disk store on an engine over an in-memory file system whose syncs the test can hold.
    final class GatedStore: @unchecked Sendable {
        let fileSystem = FaultFileSystem()
        let engine: Engine

        init() throws {
            var options = EngineOptions()
            options.fileSystem = fileSystem
            options.syncMode = .always
            options.autoCompaction = nil
            engine = try Engine.open(at: "/gated", options: options)
        }

        var syncs: UInt64 { engine.statistics.syncs }

        deinit { try? engine.close() }
    }

    /// Holds the engine's next sync at the gate: starts `first` and returns once its sync waits there.
    static func holdSync(_ gated: GatedStore, behind first: @escaping @Sendable () async throws -> Void)
        async -> Task<Void, any Error> {
        gated.fileSystem.syncGate.close()
        let task = Task { try await first() }
        #expect(await gated.fileSystem.syncGate.awaitWaiting(1), "the first write never reached its sync")
        return task
    }

    /// One random write of the batch tests: a set of up to three items, or the removal of two ids.
    enum Step: Sendable {
        case set([Item])
        case remove([Item.Identifier])
    }

    /// A random step; a set when `settingOnly` (a set always queues a batch; a removal of absent ids does not).
    static func randomStep(_ rng: inout SplitMix64, _ n: Int, settingOnly: Bool = false) -> Step {
        let items = (0..<(1 + Int(rng.next() % 3))).map { i in
            BatchSequenceTests.item(BatchSequenceTests.identifier(&rng) { id, local, form in
                form == 0 ? .local(local) : form == 1 ? .remote(id, local: local) : .remote(id)
            }, "\(n).\(i)")
        }
        return rng.next() % 5 == 0 && !settingOnly ? .remove(items.prefix(2).map(\.identifier)) : .set(items)
    }

    @Test("random writes begun behind a held sync equal the same writes one at a time; two syncs make them durable",
          arguments: [UInt64(1), 2, 3, 4])
    func randomQueuedWrites(seed: UInt64) async throws {
        var rng = SplitMix64(seed: seed)
        let gated = try GatedStore(), single = try TemporaryStore()
        let queued = DiskStore<Item>(engine: gated.engine), reference = DiskStore<Item>(engine: single.engine)
        var n = 0
        for round in 0..<12 {
            let before = try queued.searchNow(.all).entities
            let syncsBefore = gated.syncs
            n += 1
            let first = Self.randomStep(&rng, n, settingOnly: true)
            let held = await Self.holdSync(gated) {
                switch first {
                case .set(let items): _ = try await queued.set(items)
                case .remove(let ids): try await queued.remove(ids)
                }
            }
            var steps = [first], writes: [StoreWrite<Item>] = []
            for i in 0..<(2 + Int(rng.next() % 8)) {
                n += 1
                let step = Self.randomStep(&rng, n, settingOnly: i == 0)
                steps.append(step)
                switch step {
                case .set(let items): writes.append(try queued.beginSetNow(items))
                case .remove(let ids): writes.append(try queued.beginRemoveNow(ids))
                }
            }
            // Nothing queued is visible before it is durable.
            #expect(try queued.searchNow(.all).entities == before, "seed \(seed) round \(round)")
            #expect(queued.queuedRecordCount > 0)
            gated.fileSystem.syncGate.open()
            try await held.value
            for write in writes { _ = try await write.finish() }
            #expect(gated.syncs - syncsBefore == 2, "seed \(seed) round \(round): the queued writes took one sync")
            #expect(queued.queuedRecordCount == 0)

            for step in steps {
                switch step {
                case .set(let items): for item in items { _ = try await reference.set([item]) }
                case .remove(let ids): for id in ids { try await reference.remove([id]) }
                }
            }
            let (got, expected) = (try queued.searchNow(.all).entities, try reference.searchNow(.all).entities)
            #expect(got == expected, "seed \(seed) round \(round): \(got.map(\.identifier)) != \(expected.map(\.identifier))")
            if got != expected { break }
        }
        #expect(try gated.engine.verify().ok)
    }

    @Test("a write whose sync fails fails every write queued behind it; none of them is stored or merged over")
    func failedSyncFailsTheQueue() async throws {
        let gated = try GatedStore()
        let store = DiskStore<Book>(engine: gated.engine)
        _ = try await store.set([Book.remote(1, "kept", genre: "a")])
        _ = gated.fileSystem.failOperation([.sync], nth: 1)
        let held = await Self.holdSync(gated) { _ = try await store.set([Book(.remote(1, local: "x"), title: "lost")]) }
        // Merges over the held write (it carries local "x" now), then moves nothing: also lost.
        let behind = [try store.beginSetNow([Book(.local("x"), title: "lost too")]),
                      try store.beginRemoveNow([.remote(1)])]
        gated.fileSystem.syncGate.open()
        await #expect(throws: StoreError.self) { try await held.value }
        for write in behind {
            await #expect(throws: StoreError.self) { _ = try await write.finish() }
        }
        #expect(store.queuedRecordCount == 0)
        #expect(throws: StoreError.self) { _ = try store.beginSetNow([Book.remote(2, "refused")]) }
        #expect(try store.getNow(.remote(1))?.title == "kept")
        #expect(try store.getNow(.local("x")) == nil)
    }

    @Test("writers through a CoreManager share syncs; the continuous query ends on the last state")
    func managerWritersShareSyncs() async throws {
        let gated = try GatedStore()
        let disk = DiskStore<Book>(engine: gated.engine)
        let manager = CoreManager(store: disk)
        let query = Query<Book>.filter(.genre == .string("g")).order([.asc(by: .title)])
        let (collector, observing) = try await ContinuousQueryTests.observe(manager, query)
        defer { observing.cancel() }
        let syncsBefore = gated.syncs
        let held = await Self.holdSync(gated) { try await manager.set(Book.remote(0, "t0", genre: "g")) }
        let writers = (1..<8).map { i in
            Task { try await manager.set(Book.remote(i, "t\(i)", genre: "g")) }
        }
        #expect(await ContinuousQueryTests.eventually { disk.queuedRecordCount == 8 }, "every writer queued its batch")
        gated.fileSystem.syncGate.open()
        try await held.value
        for writer in writers { _ = try await writer.value }
        #expect(gated.syncs - syncsBefore == 2)
        let titles = (0..<8).map { "t\($0)" }
        #expect(try await manager.search(withQuery: query).once.map(\.title) == titles)
        #expect(await ContinuousQueryTests.eventually { await collector.last == titles })
    }
}
