import Foundation
import Testing
@testable import Lucid

/// Which observations a write affects: the identifiers a write touched are found in a result by Lucid's
/// identifier rule (`dualEquals`), whether they are few (compared one by one) or many (looked up by halves).
@Suite("Query observers")
struct QueryObserversTests {
    @Test("TouchedHalves answers as dualEquals over the touched identifiers, on random local/remote mixes")
    func touchedHalvesMatchesDualEquals() {
        for seed in UInt64(1)...50 {
            var rng = SplitMix(seed: seed)
            func id() -> Book.Identifier {
                let local = "l\(rng.next() % 5)", remote = Int(rng.next() % 5)
                return switch rng.next() % 3 {
                case 0: .local(local)
                case 1: .remote(remote)
                default: .remote(remote, local: local)
                }
            }
            let touched = (0 ..< Int(rng.next() % 12)).map { _ in id() }
            let halves = QueryObservers<Book>.TouchedHalves(touched)
            for _ in 0 ..< 40 {
                let probe = id()
                let expected = touched.contains { $0.dualEquals(probe) }
                if halves.contains(probe) != expected {
                    Issue.record("seed \(seed): \(probe) in \(touched): halves \(!expected), dualEquals \(expected)")
                    return
                }
            }
        }
    }

    @Test("a result entity filed under its local value alone is refreshed when removed among few or many ids",
          arguments: [4, 5])
    func removalByLocalHalf(count: Int) async throws {
        let (manager, temp) = try CoreManagerTests.manager()
        try await manager.set([Book(.local("b"), title: "b", genre: "x"), Book.remote(1, "c", genre: "x")])
        let (collector, task) = try await ContinuousQueryTests.observe(manager, Query<Book>.filter(.genre == .string("x")).order([.asc(by: .title)]))
        #expect(await eventually { await collector.last == ["b", "c"] })
        // (local a, remote 5) and (local b, remote 5) share a remote half: a DualHashSet of them forgets local b.
        let others = (100 ..< 100 + count - 2).map { Book.Identifier.remote($0) }
        try await manager.remove([Book.Identifier.remote(5, local: "a"), .remote(5, local: "b")] + others)
        #expect(try await manager.get(byID: .local("b")) == nil, "the store removed it")
        #expect(await eventually { await collector.last == ["c"] }, "\(count) ids")
        task.cancel()
        _ = temp
    }
}
