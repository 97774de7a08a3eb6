import Foundation
import Synchronization
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `recordTable`'s page reads spread over threads (`StorageOrderRead`): runs cut at page boundaries cover every
/// place once; a table large enough to be read in parallel equals the key-order walk; and of several damaged
/// pages, the error is the one a serial read meets first. (On a machine with one processor the reads run in
/// order on one thread, and these tests check that path instead; CI's machines have two.)
@Suite("Engine: record tables read on several threads")
struct StorageOrderReadTests {
    static func key(_ i: Int) -> [UInt8] { Array(String(format: "so-%06d", i).utf8) }

    /// `count` records of 40 to 240 random bytes written in a shuffled key order, 100 per commit, in segments of
    /// 1 MiB; returns the live records by key.
    static func fill(_ engine: Engine, count: Int, seed: UInt64) throws -> [[UInt8]: [UInt8]] {
        var rng = SplitMix64(seed: seed)
        var order = Array(0..<count)
        for i in order.indices.reversed() { order.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        var live: [[UInt8]: [UInt8]] = [:]
        for start in stride(from: 0, to: count, by: 100) {
            var batch = WriteBatch()
            for i in order[start..<min(start + 100, count)] {
                let value = rng.bytes(40 + Int(rng.next() % 200))
                live[key(i)] = value
                batch.put(value, forKey: key(i), in: "t")
            }
            try engine.commitAndWait(batch)
        }
        return live
    }

    static func options(cacheBytes: Int) -> EngineOptions {
        var o = EngineTest.options(sync: .none, segmentSize: 1 << 20, pageCacheBytes: cacheBytes)
        o.autoCompaction = nil
        return o
    }

    @Test("run bounds start at 0, end at the count, increase, and never split a page")
    func runBounds() {
        var rng = SplitMix64(seed: 5)
        for round in 0..<300 {
            // Pages of 1 to 40 records (some rounds one long page), in page order as sortByPage leaves them.
            var places: [StoragePlace] = []
            var page: UInt32 = 0
            let total = Int(rng.next() % 3_000)
            while places.count < total {
                let records = round % 10 == 0 ? total : 1 + Int(rng.next() % 40)
                for _ in 0..<min(records, total - places.count) {
                    let location = RecordLocation(segment: page / 7, pageOffset: page % 7 * 4096, valueOffset: 0,
                                                  valueLength: 1, hasTerms: false, sequence: 1)
                    places.append(StoragePlace(location, rank: places.count))
                }
                page += 1
            }
            let runs = 1 + Int(rng.next() % 12)
            let bounds = StorageOrderRead.runBounds(places, runs: runs)
            #expect(bounds.first == 0 && bounds.last == places.count, "round \(round)")
            #expect(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 } || places.isEmpty,
                    "round \(round): increasing")
            #expect(bounds.count - 1 <= max(runs, 1), "round \(round): at most \(runs) runs")
            for start in bounds.dropFirst().dropLast() {
                #expect(places[start].page != places[start - 1].page, "round \(round): a page split at \(start)")
            }
        }
    }

    struct RunFailure: Error, Equatable { let start: Int }

    /// Places on pages of 1 to 40 records each, in page order.
    static func pagedPlaces(_ count: Int, seed: UInt64) -> [StoragePlace] {
        var rng = SplitMix64(seed: seed)
        var places: [StoragePlace] = []
        var page: UInt32 = 0
        while places.count < count {
            for _ in 0..<min(1 + Int(rng.next() % 40), count - places.count) {
                let location = RecordLocation(segment: 1, pageOffset: page * 4096, valueOffset: 0, valueLength: 1,
                                              hasTerms: false, sequence: 1)
                places.append(StoragePlace(location, rank: places.count))
            }
            page += 1
        }
        return places
    }

    /// The run holding the first places fails late, after every later run failed at once: the error must still be
    /// the first run's (an error slot the first failure in time fills would report another). On one processor, or
    /// while the other threads of the pool are busy (tests run in parallel), the runs go in order on this thread
    /// and the first fails first anyway; run alone on two processors, that mutation fails this test.
    @Test("the error is the first failing run's in page order, not the first to fail in time")
    func firstRunsErrorWins() {
        let places = Self.pagedPlaces(2 * StorageOrderRead.minimumParallelRecords, seed: 8)
        #expect(throws: RunFailure(start: 0)) {
            try StorageOrderRead.forEachRun(of: places) { run in
                if run.startIndex == 0 { usleep(50_000) }
                throw RunFailure(start: run.startIndex)
            }
        }
        // Every place is offered once, in runs of whole pages, whatever the threads.
        let seen = Mutex([Int](repeating: 0, count: places.count))
        let wholePages = Mutex(true)
        #expect(throws: Never.self) {
            try StorageOrderRead.forEachRun(of: places) { run in
                let first = run.first!, last = run.last!
                let splitBefore = run.startIndex > 0 && places[run.startIndex - 1].page == first.page
                let splitAfter = run.endIndex < places.count && places[run.endIndex].page == last.page
                if splitBefore || splitAfter { wholePages.withLock { $0 = false } }
                seen.withLock { for place in run { $0[place.rank] += 1 } }
            }
        }
        #expect(seen.withLock { $0.allSatisfy { $0 == 1 } })
        #expect(wholePages.withLock { $0 })
    }

    @Test("a table read on several threads equals the key-order walk", .heavy, arguments: [0, 1 << 20])
    func largeTableMatchesTheWalk(cacheBytes: Int) throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: cacheBytes))
            defer { try? engine.close() }
            let count = 4 * StorageOrderRead.minimumParallelRecords
            let live = try Self.fill(engine, count: count, seed: 21)
            let snapshot = engine.snapshot()
            #expect(engine.core.currentState().manifest.segments.count >= 2, "the records span segments")
            let table = try snapshot.recordTable(in: "t")
            #expect(table.count == count)
            #expect(table.map(\.key) == live.keys.sorted { $0.lexicographicallyPrecedes($1) })
            #expect(table.allSatisfy { live[$0.key] == $0.value })
            for (range, reverse) in [(KeyRange.from(Self.key(1_000), to: Self.key(count - 500)), true),
                                     (KeyRange(lower: .included(Self.key(3_000))), false)] {
                var walked: [KeyValue] = []
                try snapshot.forEach(in: "t", range: range, reverse: reverse, limit: nil) {
                    walked.append($0)
                    return true
                }
                #expect(walked.count >= StorageOrderRead.minimumParallelRecords)
                #expect(Array(try snapshot.recordTable(in: "t", range: range, reverse: reverse)) == walked)
            }
        }
    }

    @Test("of two damaged pages, the error names the first in storage order, as a serial read would")
    func firstDamagedPageInStorageOrder() throws {
        try EngineTest.withTemporaryDirectory { dir in
            let engine = try Engine.open(at: dir, options: Self.options(cacheBytes: 0))
            defer { try? engine.close() }
            let count = 4 * StorageOrderRead.minimumParallelRecords
            _ = try Self.fill(engine, count: count, seed: 22)
            let state = engine.core.currentState()
            // A record near the start of the log and one near its end: their pages fall in different runs.
            var locations: [RecordLocation] = []
            state.keyspaces["t"]?.primary.forEach { _, location in
                locations.append(location)
                return true
            }
            locations.sort { ($0.segment, $0.pageOffset) < ($1.segment, $1.pageOffset) }
            let early = locations[locations.count / 10], late = locations[locations.count * 9 / 10]
            #expect(early.segment != late.segment || early.pageOffset != late.pageOffset)
            for location in [late, early] {
                let file = try #require(state.segments[UInt64(location.segment)])
                let payloadByte = UInt64(location.pageOffset) + UInt64(Format.pageHeaderLength) + 3
                try CorruptionHelpers.flipBit(path: file.path, offset: payloadByte, bit: 6)
            }
            let earlyFile = try #require(state.segments[UInt64(early.segment)])
            for _ in 0..<5 {
                do {
                    _ = try engine.snapshot().recordTable(in: "t")
                    Issue.record("damaged pages must fail their checksum")
                } catch let error as LucidError {
                    #expect(error.code == .corruption && error.file == earlyFile.path
                            && error.offset == UInt64(early.pageOffset), "\(error)")
                }
            }
        }
    }
}
