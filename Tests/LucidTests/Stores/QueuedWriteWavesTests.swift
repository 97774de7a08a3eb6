import Foundation
import Synchronization
import Testing
import Lucid
import LucidEngine
import LucidEngineTestSupport

/// Queued writes must be transparent: the same batches queued behind held syncs, published in waves or raced by
/// concurrent writers, leave what they leave one batch at a time, durably.
@Suite("Queued writes in waves")
struct QueuedWriteWavesTests {
    typealias Item = QueryChecks.Item
    typealias Step = QueuedWritesTests.Step
    typealias GatedStore = QueuedWritesTests.GatedStore

    static func item(_ id: Item.Identifier, _ name: String) -> Item { BatchSequenceTests.item(id, name) }

    /// Items as "identifier name", for failure messages.
    static func describe(_ items: [Item]) -> [String] { items.map { "\($0.identifier) \($0.name)" } }

    /// A batch whose enqueue fails validation (a key over 1024 bytes) after it rewrote a key an earlier, still
    /// queued batch wrote: the earlier batch's record must stay visible to the writes begun after it.
    @Test("a batch refused by the engine does not hide the queued write it rewrote")
    func refusedBatchKeepsEarlierQueuedRecord() async throws {
        let gated = try GatedStore(), single = try TemporaryStore()
        let queued = DiskStore<Item>(engine: gated.engine), reference = DiskStore<Item>(engine: single.engine)
        let long = String(repeating: "x", count: 1100)
        let held = try await QueuedWritesTests.holdSync(gated) { () throws(StoreError) in
            try queued.beginSetNow([Self.item(.local("l1"), "A")])
        }
        #expect(throws: StoreError.self) {
            _ = try queued.beginSetNow([Self.item(.local("l1"), "B"), Self.item(.local(long), "too long")])
        }
        let c = try queued.beginSetNow([Self.item(.remote(1, local: "l1"), "C")])
        gated.fileSystem.syncGate.open()
        _ = try await held.value
        _ = try await c.finish()

        _ = try await reference.set([Self.item(.local("l1"), "A")])
        await #expect(throws: StoreError.self) {
            _ = try await reference.set([Self.item(.local("l1"), "B"), Self.item(.local(long), "too long")])
        }
        _ = try await reference.set([Self.item(.remote(1, local: "l1"), "C")])
        let got = try queued.searchNow(.all).entities.map(\.identifier)
        let expected = try reference.searchNow(.all).entities.map(\.identifier)
        #expect(got == expected, "\(got) != \(expected)")
    }

    /// Two records carrying one local value (two remote ids paired with it): a local-only id matches the first
    /// in key order, whether the records are stored or queued.
    @Test("a local id shared by two remote ids matches the same record queued or not")
    func sharedLocalValueAcrossQueuedBatches() async throws {
        let gated = try GatedStore(), single = try TemporaryStore()
        let queued = DiskStore<Item>(engine: gated.engine), reference = DiskStore<Item>(engine: single.engine)
        let steps: [[Item]] = [[Self.item(.remote(1, local: "l1"), "one")],
                               [Self.item(.remote(2, local: "l1"), "two")],
                               [Self.item(.local("l1"), "by local")]]
        _ = try await queued.set(steps[0])
        let held = try await QueuedWritesTests.holdSync(gated) { () throws(StoreError) in
            try queued.beginSetNow(steps[1])
        }
        let last = try queued.beginSetNow(steps[2])
        gated.fileSystem.syncGate.open()
        _ = try await held.value
        _ = try await last.finish()
        for step in steps { _ = try await reference.set(step) }
        let got = Self.describe(try queued.searchNow(.all).entities)
        let expected = Self.describe(try reference.searchNow(.all).entities)
        #expect(got == expected, "\(got) != \(expected)")
    }

    /// A random step. `paired`: a remote value always comes with the same local one (as BatchSequenceTests);
    /// else any local value goes with any remote one, one item per set.
    static func randomStep(_ rng: inout SplitMix64, _ n: Int, paired: Bool, settingOnly: Bool) -> Step {
        let count = paired ? 1 + Int(rng.next() % 3) : 1
        let items = (0..<count).map { i -> Item in
            let r = Int(rng.next() % 4), l = Int(rng.next() % 3), form = rng.next() % 3
            let local = paired ? BatchSequenceTests.locals[r] : ["l0", "l1", "\u{e9}"][l]
            let id: Item.Identifier = form == 0 ? .local(local) : form == 1 ? .remote(r, local: local) : .remote(r)
            return item(id, "\(n).\(i)")
        }
        return rng.next() % 4 == 0 && !settingOnly ? .remove(items.map(\.identifier)) : .set(items)
    }

    /// Waves of writes: each begun while one group waits at the held sync and others are queued; between waves
    /// one group is let through (published and retired, or, without waiting, maybe still being published).
    @Test("writes begun in waves over partly published queues equal the same batches one after another",
          arguments: [(UInt64(1), true), (2, true), (3, true), (4, false), (5, false), (6, false), (7, false)])
    func waves(seed: UInt64, paired: Bool) async throws {
        var rng = SplitMix64(seed: seed)
        let gated = try GatedStore(), sequential = try TemporaryStore(), single = try TemporaryStore()
        let queued = DiskStore<Item>(engine: gated.engine)
        let batches = DiskStore<Item>(engine: sequential.engine), reference = DiskStore<Item>(engine: single.engine)
        let gate = gated.fileSystem.syncGate
        defer { gate.open() }   // a closed gate would hang the engine's close in deinit
        var n = 0
        for round in 0..<6 {
            var steps: [Step] = [], writes: [StoreWrite<Item>] = []
            func begin(_ step: Step) throws {
                steps.append(step)
                writes.append(try step.begin(on: queued))
            }
            gate.close()
            n += 1
            try begin(Self.randomStep(&rng, n, paired: paired, settingOnly: true))
            #expect(await gate.awaitWaiting(1, timeout: QueuedWritesTests.patience))
            for _ in 0..<5 {
                for i in 0..<(1 + Int(rng.next() % 5)) {
                    n += 1
                    try begin(Self.randomStep(&rng, n, paired: paired, settingOnly: i == 0))
                }
                let before = gate.passed
                gate.allow(1)
                if rng.next() % 3 != 0 {
                    // Published and retired, the next group held at the sync (or nothing left).
                    #expect(await QueuedWritesTests.eventually {
                        gate.passed > before && (gate.waiting == 1 || queued.queuedRecordCount == 0)
                    })
                } else if rng.next() % 2 == 0 {
                    // Begun while the group may be publishing and retiring.
                    for _ in 0..<200 where gate.passed == before { usleep(5) }
                }
            }
            gate.open()
            for write in writes { _ = try await write.finish() }
            #expect(queued.queuedRecordCount == 0)
            for step in steps {
                try await step.apply(to: batches)
                try await step.apply(to: reference, oneAtATime: true)
            }
            let got = try queued.searchNow(.all).entities
            let expected = try batches.searchNow(.all).entities
            let oneAtATime = try reference.searchNow(.all).entities
            #expect(got == expected, "seed \(seed) round \(round): \(Self.describe(got)) != \(Self.describe(expected))")
            #expect(got == oneAtATime, "seed \(seed) round \(round) (one at a time): \(Self.describe(got))")
            if got != expected { break }
        }
        #expect(try gated.engine.verify().ok)
    }

    final class Order: Sendable { let steps = Mutex<[Step]>([]) }

    /// Concurrent writers on an open gate (publish and retire race with preparation): the result equals the
    /// batches applied one after another in the order they began.
    @Test("concurrent writers equal their batches applied in the order they began", arguments: [UInt64(1), 2, 3, 4])
    func concurrentWriters(seed: UInt64) async throws {
        let gated = try GatedStore(), sequential = try TemporaryStore()
        let queued = DiskStore<Item>(engine: gated.engine), batches = DiskStore<Item>(engine: sequential.engine)
        let order = Order()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<8 {
                group.addTask {
                    var rng = SplitMix64(seed: seed &* 1000 &+ UInt64(w))
                    for k in 0..<60 {
                        let step = Self.randomStep(&rng, w * 1000 + k, paired: seed % 2 == 1, settingOnly: false)
                        let write = try order.steps.withLock { steps throws -> StoreWrite<Item> in
                            steps.append(step)
                            return try step.begin(on: queued)
                        }
                        _ = try await write.finish()
                    }
                }
            }
            try await group.waitForAll()
        }
        for step in order.steps.withLock({ $0 }) { try await step.apply(to: batches) }
        let got = try queued.searchNow(.all).entities, expected = try batches.searchNow(.all).entities
        #expect(got == expected, "\(Self.describe(got)) != \(Self.describe(expected))")
        #expect(queued.queuedRecordCount == 0)
        #expect(try gated.engine.verify().ok)
    }
}
