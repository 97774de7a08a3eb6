import CLucidSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which pages of a mapped segment this process has checked (header and checksum), so that later reads of them skip
/// the checksum and, in a store that reads pages in place (``EngineOptions/PageCompression/none``,
/// ``EngineOptions/PageCompression/lz4Records``), copy or decode values straight from the mapping.
///
/// One bit per 32 bytes of the mapping, indexed by the page's offset: two pages start at least a page header
/// (48 bytes) apart, so no two share a bit. The bits live in zeroed memory from `calloc`, which the system
/// provides lazily, so a bit array costs memory only where pages are read. Readers on any thread test and set
/// bits concurrently with atomic operations (``lucid_bits_test``, ``lucid_bits_set``); a bit is never cleared.
///
/// A noncopyable struct: its owner (``SegmentMapping``) holds it inline, so a reader testing a bit takes no
/// reference, and the bits are freed once, when it goes.
struct CheckedPages: ~Copyable, @unchecked Sendable {
    // @unchecked: `words` is touched only through the atomic helpers, and freed once, by deinit.
    private let words: UnsafeMutablePointer<UInt64>
    /// Bits in the array: one per 32 bytes of the mapping it describes.
    private let bitCount: Int

    /// Offset granularity: a page's bit is its offset divided by 32.
    private static let shift = 5

    /// Bits for a mapping of `length` bytes, all clear. O(1); the memory is touched as bits are set.
    init(mappingLength length: Int) {
        precondition(length > 0)
        bitCount = (length + (1 << Self.shift) - 1) >> Self.shift
        let wordCount = (bitCount + 63) / 64
        guard let memory = calloc(wordCount, MemoryLayout<UInt64>.stride) else {
            fatalError("cannot allocate \(wordCount * 8) bytes for a segment's checked-page bits")
        }
        words = memory.bindMemory(to: UInt64.self, capacity: wordCount)
    }

    deinit { free(words) }

    /// Whether the page at `offset` was checked (false for an offset past the mapping). O(1), no lock.
    @inline(__always)
    func contains(pageAt offset: UInt64) -> Bool {
        let bit = Int(truncatingIfNeeded: offset >> UInt64(Self.shift))
        return offset < UInt64(Int.max) && bit < bitCount && lucid_bits_test(words, bit) != 0
    }

    /// Records that the page at `offset` was checked (nothing for an offset past the mapping). O(1), no lock.
    func insert(pageAt offset: UInt64) {
        let bit = Int(truncatingIfNeeded: offset >> UInt64(Self.shift))
        guard offset < UInt64(Int.max), bit < bitCount else { return }
        lucid_bits_set(words, bit)
    }
}
