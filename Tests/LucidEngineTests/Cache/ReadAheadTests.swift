import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// A page-cache miss reads the header and a learnt guess of the stored payload in one `pread`
/// (`ReadAheadEstimator`): the guess must follow the pages actually stored, stay in bounds, and never change what
/// a read returns.
@Suite("Read-ahead of page reads")
struct ReadAheadTests {
    @Test("the guess settles near the 90th percentile of the stored lengths, inside its bounds")
    func settlesNearHighPercentile() {
        let estimator = ReadAheadEstimator(maximum: 16384, minimum: 1024)
        #expect(estimator.readLength == 16384)   // before any page: the page size
        // Stored lengths spread uniformly over 4000 ..< 8000: the 90th percentile is 7600.
        var rng = SplitMix64(seed: 7)
        for _ in 0 ..< 20_000 { estimator.record(storedLength: 4000 + Int(rng.next() % 4000)) }
        let guess = estimator.readLength - ReadAheadEstimator.margin
        #expect((7000 ... 8000).contains(guess), "settled at \(guess)")
        var oneRead = 0
        for _ in 0 ..< 10_000 where 4000 + Int(rng.next() % 4000) <= estimator.readLength { oneRead += 1 }
        #expect(oneRead >= 8_500, "\(oneRead) of 10000 pages fit the first read")

        for _ in 0 ..< 10_000 { estimator.record(storedLength: 0) }
        #expect(estimator.readLength == 1024 + ReadAheadEstimator.margin)
        for _ in 0 ..< 10_000 { estimator.record(storedLength: 1 << 30) }
        #expect(estimator.readLength == 16384)
    }

    @Test("values read through a guess too short, too long, or learnt from other pages are the values written")
    func readsAreExactWhateverTheGuess() throws {
        try EngineTest.withTemporaryDirectory { dir in
            // 4 KiB pages and no page cache: every read is a miss.
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: .none, pageCacheBytes: 0))
            defer { try? engine.close() }
            var rng = SplitMix64(seed: 11)
            var expected: [[UInt8]: [UInt8]] = [:]
            // Values from highly compressible to random: stored page lengths from ~100 bytes to the whole page.
            for i in 0 ..< 400 {
                var batch = WriteBatch()
                let key = Array("k\(i)".utf8)
                let length = Int(rng.next() % 3000)
                let value: [UInt8] = i % 3 == 0 ? (0 ..< length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    : [UInt8](repeating: UInt8(i % 251), count: length)
                batch.put(value, forKey: key, in: "ks")
                expected[key] = value
                _ = try engine.commitAndWait(batch)
            }
            for _ in 0 ..< 3 {
                for (key, value) in expected.shuffled() { #expect(try engine.get(key, in: "ks") == value) }
            }
        }
    }
}

