import CLucidSupport

/// Asks the processor, ahead of time, for the memory that copying cached entities out of their boxes touches.
///
/// Copying an entity reads its box (``EntityBox``) and retains every object the entity refers to (a `String`
/// longer than 15 bytes, an array, a class instance). Each retain is an atomic operation, and an atomic operation
/// waits for every load before it: 20 entities copied one after the other, their boxes and strings out of the
/// processor's caches, wait for memory several times each, in turn. Asked for first, those loads overlap.
///
/// Which words of an entity hold references is learned from the first entities cached (``EntityLayout``):
/// words that pointed near their own box. The learning and the prefetches read a box's bytes as words through a
/// raw pointer: those reads, here, are this file's only unsafe work. A prefetch is a hint: it never faults,
/// whatever the address, and a word that is not an address costs at most a wasted load.
enum EntityPrefetch {
    /// The bytes of a box's object header (its metadata pointer and reference counts), before its stored entity.
    static var headerBytes: Int { 16 }
    /// How far from its box a word may point and still be taken for a reference: the objects an entity refers to
    /// are allocated with it, by the thread that decodes it, from the same part of the heap. The bound keeps
    /// integers, dates and a short string's bytes from being taken for references.
    private static var reach: UInt { 1 << 32 }
    /// The bits of a word that may hold an address: a `String`'s object word keeps flags in its top byte, and
    /// every heap object is aligned to 16 bytes.
    private static var addressBits: UInt { 0x00FF_FFFF_FFFF_FFF0 }

    /// Where `box`'s object starts (no retain). O(1).
    @inline(__always)
    static func object(_ box: AnyObject) -> UnsafeRawPointer { UnsafeRawPointer(Unmanaged.passUnretained(box).toOpaque()) }

    /// Asks for every cache line of the box object at `start`, of `objectBytes` bytes (``EntityLayout/objectBytes``).
    /// O(lines).
    @inline(__always)
    static func lines(at start: UnsafeRawPointer, objectBytes: Int) { lucid_prefetch_range(start, objectBytes) }

    /// The words of `box`'s entity (laid out as `layout` says) that hold an address near the box, as a mask (bit
    /// `i`: the entity's word `i`). O(``EntityLayout/words``).
    static func referenceWords(of box: AnyObject, _ layout: EntityLayout) -> UInt32 {
        let start = object(box)
        let base = UInt(bitPattern: start)
        var mask: UInt32 = 0
        for i in 0..<layout.words where isReference(word(i, at: start, layout), near: base) { mask |= 1 << UInt32(i) }
        return mask
    }

    /// Asks for the first line of the object each word of `mask` in the entity of the box object at `start` points
    /// to, when it points near the box (a word that held a reference in other entities may hold a short string's
    /// bytes in this one). The box itself should have been asked for (``lines(at:objectBytes:)``) beforehand.
    /// O(words in `mask`).
    @inline(__always)
    static func references(at start: UnsafeRawPointer, words mask: UInt32, _ layout: EntityLayout) {
        let base = UInt(bitPattern: start)
        var rest = mask
        while rest != 0 {
            let i = rest.trailingZeroBitCount
            rest &= rest &- 1
            let address = word(i, at: start, layout)
            if isReference(address, near: base) { lucid_prefetch(UnsafeRawPointer(bitPattern: address)) }
        }
    }

    /// Word `i` (below ``EntityLayout/words``) of the entity in the box object at `start`, its tag bits cleared
    /// (``addressBits``). O(1).
    @inline(__always)
    static func word(_ i: Int, at start: UnsafeRawPointer, _ layout: EntityLayout) -> UInt {
        start.load(fromByteOffset: layout.entityOffset &+ i &* 8, as: UInt.self) & addressBits
    }

    /// Whether `word` (its tag bits cleared) may be the address of an object allocated with the box at `base`:
    /// within ``reach`` of it, and not a small integer (under a tool that places the heap low, such as valgrind,
    /// small integers fall within reach too). With an allocator that keeps objects of different sizes far apart
    /// (AddressSanitizer's, jemalloc), fewer references are found, and fewer asked for: a loss of speed only.
    @inline(__always)
    static func isReference(_ word: UInt, near base: UInt) -> Bool {
        word >= 1 << 20 && (word &- base) &+ reach < 2 &* reach
    }
}

/// Where an entity lies in its box's object, for ``EntityPrefetch``: not generic, made from the entity type's
/// size and alignment.
struct EntityLayout: Sendable {
    /// The bytes of a box's object: its header and its entity.
    let objectBytes: Int
    /// Where the entity starts in the object.
    let entityOffset: Int
    /// How many of the entity's words may be scanned for references: at most 32 (the mask's bits), none for an
    /// entity of less than word alignment (which holds no reference).
    let words: Int

    /// The layout of a box holding an entity of `size` bytes aligned to `alignment`.
    init(size: Int, alignment: Int) {
        entityOffset = (EntityPrefetch.headerBytes + alignment - 1) & ~(alignment - 1)
        objectBytes = max(1, entityOffset + size)
        words = alignment >= 8 ? min(size / 8, 32) : 0
    }

    /// The layout of a box holding an entity of type `E`.
    init<E>(of type: E.Type) {
        self.init(size: MemoryLayout<E>.size, alignment: MemoryLayout<E>.alignment)
    }
}
