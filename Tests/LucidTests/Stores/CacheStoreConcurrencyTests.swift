import Foundation
import Synchronization
import Testing
import Lucid
import LucidEngine
import LucidEngineTestSupport

@Suite("Cache store under concurrent writes")
struct CacheStoreConcurrencyTests {
    /// A real engine in a temporary directory with the given sync mode.
    final class Dir: @unchecked Sendable {
        let path: String
        let engine: Engine
        init(syncMode: EngineOptions.SyncMode = .always) throws {
            let name = "lucid-cache-race-\(getpid())-\(UUID().uuidString.prefix(8))"
            path = FileManager.default.temporaryDirectory.path + "/" + name
            var options = EngineOptions()
            options.syncMode = syncMode
            engine = try Engine.open(at: path, options: options)
        }
        deinit {
            try? engine.close()
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    // MARK: 1. A batch with two entities of one id: the later one, equal to the cached copy, is dropped when alone.

    @Test("duplicate ids in a batch: the cache store (alone) ends like a disk store applying the batch")
    func duplicateInBatch() async throws {
        let dirA = try Dir(syncMode: .none), dirB = try Dir(syncMode: .none)
        let cache = CacheStore(memory: InMemoryStore<Book>(), disk: DiskStore<Book>(engine: dirA.engine))
        let plain = DiskStore<Book>(engine: dirB.engine)
        let c = Book.remote(1, "C"), a = Book.remote(1, "A")
        _ = try await cache.set([c])
        _ = try await plain.set([c])
        let viaCache = try await cache.set([a, c])
        let viaDisk = try await plain.set([a, c])
        #expect(viaCache.map(\.title) == viaDisk.map(\.title))          // ["A","A"] vs ["A","C"]
        #expect(try cache.disk.getNow(.remote(1))?.title == "C")         // "A": the second entity was lost
    }

    // MARK: 2. A partially unchanged set resolves its answer from memory after later writes were applied.

    @Test("finish() of a partially unchanged set returns what this write stored, not a later write's values")
    func thenResolvesLate() async throws {
        let dir = try Dir(syncMode: .none)
        let cache = CacheStore(memory: InMemoryStore<Book>(), disk: DiskStore<Book>(engine: dir.engine))
        _ = try await cache.set([Book.remote(1, "C")])
        // Alone: X unchanged (skipped), Y new.
        let w1 = try cache.beginSetNow([Book.remote(1, "C"), Book.remote(2, "Y")])
        let w2 = try cache.beginSetNow([Book.remote(1, "D")])
        _ = try await w2.finish()
        let r1 = try await w1.finish()
        #expect(r1.map(\.title) == ["C", "Y"])                           // got ["D", "Y"]
        let w3 = try cache.beginSetNow([Book.remote(1, "D"), Book.remote(3, "Z")])
        let w4 = try cache.beginRemoveNow([.remote(1)])
        _ = try await w4.finish()
        #expect(try await w3.finish().map(\.title) == ["D", "Z"])
    }

    // MARK: 3. get's disk hit cached after a write that was running when the get began has updated memory.

    @Test("a disk hit read before a running write publishes is never cached over it",
          arguments: [EngineOptions.SyncMode.none, .always])
    func staleCacheRace(mode: EngineOptions.SyncMode) async throws {
        let dir = try Dir(syncMode: mode)
        let cache = CacheStore(memory: InMemoryStore<Book>(), disk: DiskStore<Book>(engine: dir.engine))
        let id = Book.Identifier.remote(1)
        _ = try await cache.set([Book.remote(1, "v0")])
        let flags = Flags()
        // Rounds: the writer sets v(i); meanwhile the reader drops the id from memory and reads it back (from the
        // disk) until the write has finished, then stops. Memory must then lack the entity or hold v(i).
        let reader = Thread {
            var last = 0
            while !flags.stop.load(ordering: .acquiring) {
                let r = flags.round.load(ordering: .acquiring)
                guard r > last else { usleep(20); continue }   // idle between rounds without taking a core
                last = r
                while flags.done.load(ordering: .acquiring) < r {
                    cache.memory.removeNow([id])
                    if r % 2 == 0 { _ = try? cache.getNow(id) } else { _ = try? cache.searchNow(.identifiers([id])) }
                    flags.reads.add(1, ordering: .relaxed)
                }
                flags.ack.store(r, ordering: .releasing)
            }
        }
        reader.start()
        var stale = 0
        for i in 1...500 {
            flags.round.store(i, ordering: .releasing)
            _ = try await cache.set([Book.remote(1, "v\(i)")])
            flags.done.store(i, ordering: .releasing)
            while flags.ack.load(ordering: .acquiring) < i { await Task.yield() }
            if let m = cache.memory.getNow(id), m.title != "v\(i)" { stale += 1 }
        }
        flags.stop.store(true, ordering: .releasing)
        while !reader.isFinished { try await Task.sleep(for: .milliseconds(1)) }
        let reads = flags.reads.load(ordering: .relaxed)
        #expect(stale == 0, "memory held an older value than the disk after \(stale) writes (\(reads) reads)")
    }

    final class Flags: Sendable {
        let stop = Atomic<Bool>(false)
        let reads = Atomic<Int>(0)
        let round = Atomic<Int>(0), done = Atomic<Int>(0), ack = Atomic<Int>(0)
    }

    // MARK: 4. Concurrent writers and readers; final state equals the writes applied in begin order.

    typealias Step = WriteStep<Book>
    /// The writes in the order they began (appended under the lock held while beginning them).
    final class OrderLog: Sendable {
        let steps = Mutex<[Step]>([])
        func withLock<R>(_ body: (inout [Step]) throws(StoreError) -> R) throws(StoreError) -> R {
            try steps.withLock { s throws(StoreError) in try body(&s) }
        }
    }

    @Test("8 tasks racing writes and reads on a cache store: memory equals disk, disk equals writes in begin order",
          arguments: [UInt64(1), 2, 3])
    func randomRace(seed: UInt64) async throws {
        let dir = try Dir(), refDir = try Dir(syncMode: .none)
        let disk = DiskStore<Book>(engine: dir.engine)
        let cache = CacheStore(memory: InMemoryStore<Book>(limit: 6), disk: disk)
        let reference = DiskStore<Book>(engine: refDir.engine)
        let order = OrderLog()
        let ids = 12, titles = ["a", "b", "c"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    var rng = SplitMix64(seed: seed &* 1000 &+ UInt64(t))
                    var pending: [StoreWrite<Book>] = []
                    for _ in 0..<300 {
                        let r = rng.next() % 10
                        if r < 4 {
                            // A batch of distinct ids (duplicates: see duplicateInBatch).
                            var seen = Set<Int>(), batch: [Book] = []
                            for _ in 0..<(1 + Int(rng.next() % 3)) {
                                let id = Int(rng.next() % UInt64(ids))
                                if seen.insert(id).inserted {
                                    let title = titles[Int(rng.next() % 3)]
                                    batch.append(Book.remote(id, title, pages: Int(rng.next() % 2)))
                                }
                            }
                            let w = try order.withLock { o throws(StoreError) -> StoreWrite<Book> in
                                let step = Step.set(batch), write = try step.begin(on: cache)
                                o.append(step)
                                return write
                            }
                            pending.append(w)
                        } else if r == 4 {
                            let rm: [Book.Identifier] = [.remote(Int(rng.next() % UInt64(ids)))]
                            let w = try order.withLock { o throws(StoreError) -> StoreWrite<Book> in
                                let step = Step.remove(rm), write = try step.begin(on: cache)
                                o.append(step)
                                return write
                            }
                            pending.append(w)
                        } else if r < 8 {
                            _ = try cache.getNow(.remote(Int(rng.next() % UInt64(ids))))
                        } else {
                            let pair = (Int(rng.next() % UInt64(ids)), Int(rng.next() % UInt64(ids)))
                            let q = Query<Book>.identifiers([.remote(pair.0), .remote(pair.1)])
                            _ = try cache.searchNow(q)
                        }
                        if pending.count > 3 || rng.next() % 4 == 0 {
                            for w in pending { _ = try await w.finish() }
                            pending.removeAll()
                        }
                    }
                    for w in pending { _ = try await w.finish() }
                }
            }
            try await group.waitForAll()
        }
        for step in order.steps.withLock({ $0 }) { try await step.apply(to: reference) }
        let got = try disk.searchNow(.all).entities, expected = try reference.searchNow(.all).entities
        #expect(got == expected, "seed \(seed): disk differs from the writes in begin order")
        for m in try cache.memory.searchNow(.all).entities {
            let d = try disk.getNow(m.identifier)
            #expect(d == m, "seed \(seed): memory holds \(m.title)/\(m.pages), disk \(String(describing: d))")
        }
        for e in expected { #expect(try cache.getNow(e.identifier) == e) }
    }
}
