import Testing
@testable import LucidEngine

/// A page's payload is stored compressed only when LZ4 saves at least 1/8 of it (docs/FORMAT.md, "Pages"), and
/// stored as it is otherwise; readers take either. Checked across the boundary: one record whose value is `n`
/// random bytes followed by zeros, for every `n` from wholly compressible to incompressible. The raw payload is
/// 3,016 bytes, a multiple of 8, so that LZ4 output of exactly 7/8 of it (2,639 bytes) can occur: the edge case.
@Suite("Page compression threshold")
struct CompressionThresholdTests {
    @Test("a page is stored compressed exactly when LZ4 saves at least 1/8 of its payload", .heavy)
    func threshold() throws {
        var random = EngineTest.SplitMix64(seed: 8)
        let noise = (0..<3_005).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        var compressedPages = 0, rawPages = 0
        var closest = Int.max   // the smallest |8 × compressed − 7 × raw| met: how near the boundary the sizes came
        for n in 0...noise.count {
            let value = Array(noise[0..<n]) + [UInt8](repeating: 0, count: noise.count - n)
            var builder = PageBuilder(pageSize: 4096, salt: 7, firstLSN: 1, syncedLSN: 0)
            builder.append(WriteBatch.Operation(kind: .put, keyspace: "t", key: Array("key".utf8), value: value,
                                                terms: []), sequence: 1)
            builder.finish()
            let raw = try #require(builder.rawPages.first?.1)
            var lz4: [UInt8] = []
            // The writer's compressor (the fast one's output differs between liblz4's one-shot and stream APIs).
            let compressedSize = try #require(raw.withUnsafeBytes { LZ4.BlockCompressor().compress($0, appendingTo: &lz4) })
            let header = try builder.output.withUnsafeBytes { bytes in
                try PageHeader.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<Format.pageHeaderLength]),
                                      expectedSalt: 7, bytesAvailable: UInt64(bytes.count)).get()
            }
            // "Saves at least 1/8", in rationals: raw − compressed ≥ raw / 8.
            let saved = raw.count - compressedSize
            let expected = 8 * saved >= raw.count
            #expect(header.isCompressed == expected, "n = \(n): raw \(raw.count) B, LZ4 \(compressedSize) B")
            #expect(Int(header.storedLength) == (expected ? compressedSize : raw.count), "n = \(n)")
            #expect(Int(header.rawLength) == raw.count)
            // Either way the page reads back to its raw payload.
            let decoded = try builder.output.withUnsafeBytes { bytes in
                try PageCodec.verifyAndDecode(
                    header: header, headerBytes: UnsafeRawBufferPointer(rebasing: bytes[0..<Format.pageHeaderLength]),
                    stored: UnsafeRawBufferPointer(rebasing: bytes[Format.pageHeaderLength...]), file: "test",
                    offset: 0, dictionary: { throw LucidError(code: .corruption, message: "no dictionary") })
            }
            #expect(decoded == raw, "n = \(n): the page does not read back")
            if expected { compressedPages += 1 } else { rawPages += 1 }
            closest = min(closest, abs(8 * compressedSize - 7 * raw.count))
        }
        #expect(compressedPages > 100 && rawPages > 100, "\(compressedPages) compressed, \(rawPages) raw")
        #expect(closest == 0, "no page compressed to exactly 7/8 of its payload (closest \(closest))")
    }

    @Test("the threshold in integers: at least 1/8 saved, exactly")
    func integerBoundary() {
        // 4,096 raw bytes: 512 saved is 1/8.
        #expect(PageBuilder.savesEnough(compressed: 3_584, raw: 4_096))
        #expect(!PageBuilder.savesEnough(compressed: 3_585, raw: 4_096))
        // 4,095 raw bytes: 1/8 is 511.875, so 512 must be saved.
        #expect(PageBuilder.savesEnough(compressed: 3_583, raw: 4_095))
        #expect(!PageBuilder.savesEnough(compressed: 3_584, raw: 4_095))
        #expect(!PageBuilder.savesEnough(compressed: 8, raw: 8))
        #expect(PageBuilder.savesEnough(compressed: 7, raw: 8))
    }
}
