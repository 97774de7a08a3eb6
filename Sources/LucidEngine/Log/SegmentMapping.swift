import Synchronization

/// A segment's read-only mapping (``FileMapping``) and which of its pages this process has checked
/// (``CheckedPages``): a page's checksum is verified once per mapping, and, for a store that reads pages in place
/// (``EngineOptions/PageCompression/none``, ``EngineOptions/PageCompression/lz4Records``), a checked page stored
/// without whole-page compression lets reads skip the page cache and copy (or decode) values in place.
final class SegmentMapping: Sendable {
    let file: FileMapping
    /// The pages whose header and checksum a read from this mapping verified.
    let checkedPages: CheckedPages
    /// Whether point reads take values of checked pages stored without whole-page compression straight from the
    /// mapping (``SegmentFile/checkedValue(pageAt:range:records:)``).
    let readsInPlace: Bool

    init(file: FileMapping, readsInPlace: Bool) {
        self.file = file
        self.readsInPlace = readsInPlace
        checkedPages = CheckedPages(mappingLength: file.bytes.count)
    }

    var bytes: UnsafeRawBufferPointer { file.bytes }
}

/// A segment's current ``SegmentMapping``, which readers use without taking a lock or a reference.
///
/// A read that misses the page cache asks for the mapping twice (to prefetch the page, then to read it), and a
/// read of a checked page in place once. Behind a `Mutex`, each ask would lock, unlock and, to use the mapping
/// outside the lock, retain and release it: four atomic writes to memory that every reader of the segment shares.
/// Here a reader loads one word.
///
/// **Why it is sound.** The slot keeps every mapping ever installed until the slot itself goes (with its
/// segment), so the address a reader loads names a live mapping for as long as the reader holds the segment, even
/// if a newer mapping replaces it meanwhile. A segment is mapped at most twice (while active, and once more when
/// it is sealed longer than that mapping), so keeping the old ones costs address space only.
///
/// Noncopyable, so that its owner (``SegmentFile``) holds it inline and a reader takes no reference to it either.
struct MappingSlot: ~Copyable, Sendable {
    /// The unretained address of the newest mapping installed; 0 when there is none.
    private let current = Atomic<UInt>(0)
    /// Every mapping installed, oldest first: their owner.
    private let installed = Mutex<[SegmentMapping]>([])

    init() {}

    /// Makes `mapping` the one readers get from now on; earlier ones stay mapped until the slot goes. O(1)
    /// amortized.
    func install(_ mapping: SegmentMapping) {
        installed.withLock { mappings in
            mappings.append(mapping)
            current.store(UInt(bitPattern: Unmanaged.passUnretained(mapping).toOpaque()), ordering: .releasing)
        }
    }

    /// Calls `body` with the current mapping (nil when there is none), borrowed: valid during the call only.
    /// Takes no lock and no reference. O(1) + `body`.
    @inline(__always)
    func withCurrent<R>(_ body: (SegmentMapping?) throws -> R) rethrows -> R {
        guard let address = UnsafeRawPointer(bitPattern: current.load(ordering: .acquiring)) else {
            return try body(nil)
        }
        return try Unmanaged<SegmentMapping>.fromOpaque(address)._withUnsafeGuaranteedRef { try body($0) }
    }
}
