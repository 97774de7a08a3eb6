#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a ``PointTable``'s slots live: `calloc` for a small table, a mapping of its own in huge pages for a large one
/// (this file and the table's `deinit` are the only ones that allocate or free them).
extension PointTable {
    /// Tables of at least this many bytes are mapped on their own, in huge pages where the system gives them.
    static let mappedBytes = 4 << 20
    /// The size and alignment of a transparent huge page (x86-64, arm64 with 4 KiB pages).
    static let hugePageBytes = 2 << 20

    /// The length of the mapping that holds `capacity` slots: their bytes rounded up to whole huge pages, so that the
    /// mapping starts and ends on a huge page's boundary (the rounding is never touched, so it takes no memory).
    static func mappedLength(_ capacity: Int) -> Int {
        (capacity * MemoryLayout<Slot>.stride + hugePageBytes - 1) / hugePageBytes * hugePageBytes
    }

    /// `capacity` empty slots. An empty slot is all zero bytes, so the memory is fresh pages the kernel zeroes as
    /// they are first touched, not a pass of stores over all of them: `calloc` for a small table; for a large one
    /// an anonymous mapping aligned to 2 MiB and advised to use transparent huge pages (`MADV_HUGEPAGE`), so that
    /// its scattered probes do not each miss the TLB as well (a table of a million keys spans 18,000 4-KiB pages).
    static func allocateSlots(_ capacity: Int) -> (slots: UnsafeMutablePointer<Slot>, mapped: Bool) {
        if capacity * MemoryLayout<Slot>.stride >= mappedBytes {
            // One huge page more than needed, then the slack before the first boundary and after the table cut off:
            // both ends are page boundaries (mmap returns one; the rest are multiples of the huge page).
            let length = mappedLength(capacity)
            let mapping = mmap(nil, length + hugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            if let mapping, mapping != MAP_FAILED {
                let start = (UInt(bitPattern: mapping) + UInt(hugePageBytes - 1)) & ~UInt(hugePageBytes - 1)
                let aligned = UnsafeMutableRawPointer(bitPattern: start).unsafelyUnwrapped
                let head = aligned - mapping
                // munmap of whole pages inside a mapping fails only when splitting it exceeds the process's limit
                // of mappings; the slack then stays mapped (never touched, it takes no memory).
                if head > 0 { munmap(mapping, head) }
                let tail = hugePageBytes - head
                if tail > 0 { munmap(aligned + length, tail) }
                #if os(Linux)
                _ = madvise(aligned, length, MADV_HUGEPAGE)
                #endif
                return (aligned.bindMemory(to: Slot.self, capacity: capacity), true)
            }
        }
        guard let raw = calloc(capacity, MemoryLayout<Slot>.stride) else {
            fatalError("PointTable: cannot allocate \(capacity) slots")
        }
        return (raw.bindMemory(to: Slot.self, capacity: capacity), false)
    }
}
