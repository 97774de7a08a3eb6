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

        deinit {
            // A test that failed with the gate closed must not leave the writer waiting there forever.
            fileSystem.syncGate.open()
            try? engine.close()
        }
    }

    /// Closes the sync gate, begins a write with `begin` on this thread (so that reaching its sync needs no task
    /// of the busy test pool) and returns once that sync waits at the gate, with a task finishing the write.
    static func holdSync<E: LocalEntity>(_ gated: GatedStore, _ begin: () throws(StoreError) -> StoreWrite<E>)
        async throws -> Task<[E], any Error> {
        gated.fileSystem.syncGate.close()
        let write = try begin()
        #expect(await gated.fileSystem.syncGate.awaitWaiting(1, timeout: patience),
                "the first write never reached its sync")
        return Task { try await write.finish() }
    }

    /// How long a wait for other tasks may take: the whole suite shares two threads with tests that block them.
    static let patience = Duration.seconds(300)

    /// Waits until `condition` holds (up to ``patience``); returns whether it did.
    static func eventually(_ condition: @Sendable () async -> Bool) async -> Bool {
        await LucidTests.eventually(timeout: patience, condition)
    }

    /// One random write of the batch tests: a set of up to three items, or the removal of two ids.
    typealias Step = WriteStep<Item>

    /// A random step; a set when `settingOnly` (a set of new entities always queues a batch; a removal of absent
    /// ids does not).
    static func randomStep(_ rng: inout SplitMix64, _ n: Int, settingOnly: Bool = false) -> Step {
        let items = (0..<(1 + Int(rng.next() % 3))).map { i in
            BatchSequenceTests.item(BatchSequenceTests.identifier(&rng) { id, local, form in
                form == 0 ? .local(local) : form == 1 ? .remote(id, local: local) : .remote(id)
            }, "\(n).\(i)")
        }
        return rng.next() % 5 == 0 && !settingOnly ? .remove(items.prefix(2).map(\.identifier)) : .set(items)
    }

    @Test("random writes begun behind a held sync equal the same writes one at a time; two syncs make them durable",
          arguments: [UInt64(1), 2, 3, 4], [false, true])
    func randomQueuedWrites(seed: UInt64, cached: Bool) async throws {
        var rng = SplitMix64(seed: seed)
        let gated = try GatedStore(), single = try TemporaryStore()
        let queued = DiskStore<Item>(engine: gated.engine), reference = DiskStore<Item>(engine: single.engine)
        // Over a cache store, memory (of a few entities) must end equal to the disk, and rewrites of an entity
        // equal to its cached copy must not be lost behind a queued write.
        let cache = cached ? CacheStore(memory: InMemoryStore<Item>(limit: 4), disk: queued) : nil
        func begin(_ step: Step) throws(StoreError) -> StoreWrite<Item> {
            if let cache { return try step.begin(on: cache) }
            return try step.begin(on: queued)
        }
        var n = 0, history: [[Item]] = []
        func nextStep(settingOnly: Bool) -> Step {
            n += 1
            if !settingOnly && !history.isEmpty && rng.next() % 4 == 0 {
                return .set(history[Int(rng.next() % UInt64(history.count))])
            }
            let step = Self.randomStep(&rng, n, settingOnly: settingOnly)
            if case .set(let items) = step { history.append(items) }
            return step
        }
        for round in 0..<12 {
            let before = try queued.searchNow(.all).entities
            let syncsBefore = gated.syncs
            let first = nextStep(settingOnly: true)
            let held = try await Self.holdSync(gated) { () throws(StoreError) in try begin(first) }
            var steps = [first], writes: [StoreWrite<Item>] = []
            for i in 0..<(2 + Int(rng.next() % 8)) {
                let step = nextStep(settingOnly: i == 0)
                steps.append(step)
                writes.append(try begin(step))
            }
            // Nothing queued is visible before it is durable.
            #expect(try queued.searchNow(.all).entities == before, "seed \(seed) round \(round)")
            #expect(queued.queuedRecordCount > 0)
            gated.fileSystem.syncGate.open()
            _ = try await held.value
            for write in writes { _ = try await write.finish() }
            #expect(gated.syncs - syncsBefore == 2, "seed \(seed) round \(round): the queued writes took one sync")
            #expect(queued.queuedRecordCount == 0)

            for step in steps { try await step.apply(to: reference, oneAtATime: true) }
            let (got, expected) = (try queued.searchNow(.all).entities, try reference.searchNow(.all).entities)
            #expect(got == expected,
                    "seed \(seed) round \(round): \(got.map(\.identifier)) != \(expected.map(\.identifier))")
            if let cache {
                for entity in try cache.memory.searchNow(.all).entities {
                    #expect(try queued.getNow(entity.identifier) == entity,
                            "seed \(seed) round \(round): memory holds \(entity)")
                }
                for entity in expected { #expect(try cache.getNow(entity.identifier) == entity) }
            }
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
        let held = try await Self.holdSync(gated) { () throws(StoreError) in
            try store.beginSetNow([Book(.remote(1, local: "x"), title: "lost")])
        }
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
        // The first write goes to the store directly: the writers behind it, through the manager, need tasks.
        let held = try await Self.holdSync(gated) { () throws(StoreError) in
            try disk.beginSetNow([Book.remote(0, "t0", genre: "g")])
        }
        let writers = (1..<8).map { i in
            Task { try await manager.set(Book.remote(i, "t\(i)", genre: "g")) }
        }
        #expect(await Self.eventually { disk.queuedRecordCount == 8 }, "every writer queued its batch")
        gated.fileSystem.syncGate.open()
        _ = try await held.value
        for writer in writers { _ = try await writer.value }
        #expect(gated.syncs - syncsBefore == 2)
        let titles = (0..<8).map { "t\($0)" }
        #expect(try await manager.search(withQuery: query).once.map(\.title) == titles)
        #expect(await Self.eventually { await collector.last == titles })
    }
}
