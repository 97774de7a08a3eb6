import CLucidSupport
import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// CRC32C: the hardware path (the SSE4.2 instruction: three interleaved chains over 384-byte chunks, then 8 bytes
/// and 1 at a time) gives exactly the portable table path's checksum for every length, alignment and split into
/// extends.
@Suite("Engine: CRC32C")
struct ChecksumTests {
    @Test("the check value of \"123456789\" is 0xE3069283 (RFC 3720)")
    func checkValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(lucid_crc32c_extend_portable(0, Array("123456789".utf8), 9) == 0xE306_9283)
    }

    @Test("every length to 3,100 bytes at every alignment to 8, whole and in two extends, equals the portable path")
    func equalsThePortablePath() {
        var rng = SplitMix64(seed: 5)
        let bytes = rng.bytes(3_200)
        var mismatches: [String] = []
        bytes.withUnsafeBytes { buffer in
            for offset in 0..<8 {
                for length in 0...3_100 {
                    let part = UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
                    let expected = lucid_crc32c_extend_portable(0, part.baseAddress!, length)
                    if CRC32C.checksum(part) != expected { mismatches.append("offset \(offset) length \(length)") }
                    let cut = length * 2 / 5
                    let first = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: part[..<cut]))
                    if CRC32C.checksum(UnsafeRawBufferPointer(rebasing: part[cut...]), extending: first) != expected {
                        mismatches.append("offset \(offset) length \(length) cut at \(cut)")
                    }
                }
            }
        }
        #expect(mismatches.count == 0, "\(mismatches.prefix(5)) and \(max(0, mismatches.count - 5)) more")
    }

    @Test("long buffers, many chunks of three streams and around their edges, equal the portable path")
    func longBuffersEqualThePortablePath() {
        var rng = SplitMix64(seed: 7)
        let bytes = rng.bytes(200_008)
        let lengths = [383, 384, 385, 767, 768, 769, 1_151, 1_152, 1_153, 4_096, 8_191, 65_536, 65_537, 200_000]
        var mismatches: [String] = []
        bytes.withUnsafeBytes { buffer in
            for offset in 0..<8 {
                for length in lengths {
                    let part = UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
                    if CRC32C.checksum(part) != lucid_crc32c_extend_portable(0, part.baseAddress!, length) {
                        mismatches.append("offset \(offset) length \(length)")
                    }
                }
            }
        }
        #if arch(x86_64)
        #expect(lucid_crc32c_hardware() == 1, "an x86-64 CPU with SSE4.2: the hardware path is the one checked")
        #endif
        #expect(mismatches.count == 0, "\(mismatches.prefix(5)) and \(max(0, mismatches.count - 5)) more")
    }

    @Test("a flipped bit anywhere in a 4 KiB page changes its checksum")
    func detectsAFlippedBit() {
        var rng = SplitMix64(seed: 6)
        var page = rng.bytes(4_096)
        let original = CRC32C.checksum(page)
        for bit in stride(from: 0, to: page.count * 8, by: 97) {
            page[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(CRC32C.checksum(page) != original, "bit \(bit)")
            page[bit / 8] ^= 1 << UInt8(bit % 8)
        }
    }
}
