import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `LZ4.withDecompressedPrefix`, the partial decode of uncached point reads: any prefix of a block decodes to the
/// first bytes of the whole block, and lengths it cannot serve are refused rather than read or written past.
@Suite("Engine: LZ4 partial decode")
struct LZ4Tests {
    /// Blocks of every kind a page holds: incompressible, highly repetitive, and text-like mixes.
    static func samples() -> [[UInt8]] {
        var rng = SplitMix64(seed: 17)
        var samples: [[UInt8]] = []
        for length in [1, 2, 15, 64, 200, 1_000, 4_096, 9_000] {
            samples.append(rng.bytes(length))
            samples.append([UInt8](repeating: UInt8(length & 0xFF), count: length))
            let words = ["genre", "title", "rating", "2026-11-25", "{\"id\":", "}"]
            var text: [UInt8] = []
            while text.count < length { text += Array(words[Int(rng.next() % UInt64(words.count))].utf8) }
            samples.append(Array(text[0..<length]))
        }
        return samples
    }

    @Test("every prefix length of every sample decodes to the sample's first bytes")
    func prefixesMatch() throws {
        for raw in Self.samples() {
            var compressed: [UInt8] = []
            _ = try #require(raw.withUnsafeBytes { LZ4.compress($0, appendingTo: &compressed) })
            let lengths = Set([1, 2, 7, raw.count / 3, raw.count / 2, raw.count - 1, raw.count].filter { $0 >= 1 && $0 <= raw.count })
            for length in lengths.sorted() {
                let decoded = compressed.withUnsafeBytes {
                    LZ4.withDecompressedPrefix($0, rawLength: raw.count, prefixLength: length) { Array($0) }
                }
                #expect(decoded == Array(raw[0..<length]), "\(raw.count) bytes, prefix \(length)")
            }
        }
    }

    @Test("one BlockCompressor's blocks, one after another, each decode alone to their input, no larger than LZ4_compress_default's plus 1%")
    func reusedCompressorBlocksAreIndependent() throws {
        let compressor = LZ4.BlockCompressor()
        var blocks: [(raw: [UInt8], block: [UInt8])] = []
        // Twice over, so that each sample also follows itself and the others: a block that referred to an earlier
        // one (its matches found through the reused state) would not decode alone.
        for raw in Self.samples() + Self.samples().reversed() {
            var block: [UInt8] = [0xAA]   // appended after what the destination holds
            let size = try #require(raw.withUnsafeBytes { compressor.compress($0, appendingTo: &block) })
            #expect(block.count == 1 + size && block[0] == 0xAA)
            blocks.append((raw, Array(block.dropFirst())))
        }
        var total = (reused: 0, fresh: 0)
        for (raw, block) in blocks {
            let decodesAlone = block.withUnsafeBytes { LZ4.decompress($0, rawLength: raw.count) } == raw
            #expect(decodesAlone, "\(raw.count) bytes")
            var fresh: [UInt8] = []
            _ = try #require(raw.withUnsafeBytes { LZ4.compress($0, appendingTo: &fresh) })
            total.reused += block.count
            total.fresh += fresh.count
        }
        #expect(total.reused * 100 <= total.fresh * 101, "\(total)")
        var empty: [UInt8] = [1, 2]
        #expect([UInt8]().withUnsafeBytes { compressor.compress($0, appendingTo: &empty) } == nil && empty == [1, 2])
    }

    @Test("one BlockCompressor over 20,000 pages of 4 KiB, past liblz4's reset of its offsets at 1 GiB: each decodes alone")
    func longRun() throws {
        let compressor = LZ4.BlockCompressor()
        // Each block moves the state's offsets by 64 KiB plus its size, so 20,000 pass 1 GiB (about 15,400).
        let pages = (0..<8).map { i in
            Array(Self.samples().filter { $0.count == 4_096 }[i % 3].map { $0 &+ UInt8(i) })
        }
        var failures = 0
        for i in 0..<20_000 {
            let raw = pages[i % pages.count]
            var block: [UInt8] = []
            guard raw.withUnsafeBytes({ compressor.compress($0, appendingTo: &block) }) != nil,
                  block.withUnsafeBytes({ LZ4.decompress($0, rawLength: raw.count) }) == raw else {
                failures += 1
                continue
            }
        }
        #expect(failures == 0)
    }

    @Test("a prefix of 0 or past the raw length, a block shorter than the prefix needs, and garbage are refused")
    func refusals() throws {
        var rng = SplitMix64(seed: 23)
        let raw = rng.bytes(3_000)
        var compressed: [UInt8] = []
        _ = try #require(raw.withUnsafeBytes { LZ4.compress($0, appendingTo: &compressed) })
        func decode(_ source: [UInt8], rawLength: Int, prefix: Int) -> [UInt8]? {
            source.withUnsafeBytes { LZ4.withDecompressedPrefix($0, rawLength: rawLength, prefixLength: prefix) { Array($0) } }
        }
        #expect(decode(compressed, rawLength: raw.count, prefix: 0) == nil)
        #expect(decode(compressed, rawLength: raw.count, prefix: raw.count + 1) == nil)
        // Cut short: the whole block's last bytes are missing, so a prefix that needs them cannot decode.
        #expect(decode(Array(compressed.dropLast(40)), rawLength: raw.count, prefix: raw.count) == nil)
        // A claimed raw length below what the block decodes to: the whole prefix fits, and that is all it returns.
        #expect(decode(compressed, rawLength: 100, prefix: 100) == Array(raw[0..<100]))
        // Random bytes as a block: refused, or exactly the prefix asked for. (liblz4 is the system library, not
        // instrumented by the fuzz run's AddressSanitizer; its own fuzzing covers its bounds.)
        for _ in 0..<200 {
            let garbage = rng.bytes(1 + Int(rng.next() % 300))
            let prefix = 1 + Int(rng.next() % 4_096)
            if let out = decode(garbage, rawLength: 4_096, prefix: prefix) {
                #expect(out.count == prefix)
            }
        }
    }
}
