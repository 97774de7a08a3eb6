@testable import Lucid
import Testing

/// The batched probe asks for the memory that copying cached entities touches (``EntityPrefetch``): where an
/// entity lies in its box (``EntityLayout``) and which of its words hold references, learned from the first
/// entities cached. The prefetches are hints, with no effect a test can see; what the tests check is that the
/// words read are the entity's, and that the reference words found are the right ones. Where the allocator puts
/// objects differs (glibc, AddressSanitizer's), so the "references" here are addresses of boxes of the entity's own
/// size, which every allocator keeps together.
@Suite("Entity cache: prefetching cached entities")
struct EntityPrefetchTests {
    /// Six words; ``make(_:near:)`` puts addresses in words 2 and 4.
    struct Sample: Sendable {
        var words: (UInt, UInt, UInt, UInt, UInt, UInt)
    }

    /// An entity whose words 2 and 4 are addresses near `neighbour` (word 4 with a `String`'s tag bits in its top
    /// byte), the others a small integer, a count, 2^40 and `i`.
    static func make(_ i: UInt, near neighbour: AnyObject) -> Sample {
        let address = UInt(bitPattern: Unmanaged.passUnretained(neighbour).toOpaque())
        return Sample(words: (7, 40, address, 1 << 40, (address + 64) | 0xE000_0000_0000_0000, i))
    }

    @Test("a box's entity starts after the header, aligned; at most 32 of its words are scanned, none unaligned")
    func layouts() {
        let sample = EntityLayout(of: Sample.self)
        #expect(sample.entityOffset == 16 && sample.words == 6 && sample.objectBytes == 64)
        let wide = EntityLayout(size: 300, alignment: 8)
        #expect(wide.words == 32 && wide.objectBytes == 316)
        #expect(EntityLayout(size: 32, alignment: 16).entityOffset == 16)
        #expect(EntityLayout(size: 8, alignment: 32).entityOffset == 32)
        #expect(EntityLayout(size: 12, alignment: 4).words == 0)
        #expect(EntityLayout(size: 0, alignment: 1).words == 0 && EntityLayout(size: 0, alignment: 1).objectBytes == 16)
    }

    @Test("the words read from a box are its entity's, tag bits cleared")
    func wordsAreTheEntitys() {
        let layout = EntityLayout(of: Sample.self)
        let box = EntityBox(Sample(words: (0x100, 0xFF00_0000_0000_0012, 0x307, 0x1234_5678_9ABC_DEF0, 0x500, 0x600)))
        let want: [UInt] = [0x100, 0x10, 0x300, 0x0034_5678_9ABC_DEF0, 0x500, 0x600]
        #expect((0..<6).map { EntityPrefetch.word($0, at: EntityPrefetch.object(box), layout) } == want)
    }

    @Test("a word is taken for a reference when it points within 4 GiB of the box and is not a small integer")
    func referenceTest() {
        let base: UInt = 0x5555_0000_0000
        #expect(EntityPrefetch.isReference(base + 0x1000, near: base))
        #expect(EntityPrefetch.isReference(base - 0x1000, near: base))
        #expect(EntityPrefetch.isReference(base + (1 << 31), near: base))
        #expect(!EntityPrefetch.isReference(base + (1 << 33), near: base))
        #expect(!EntityPrefetch.isReference(base - (1 << 33), near: base))
        #expect(!EntityPrefetch.isReference(7, near: base))
        #expect(!EntityPrefetch.isReference(1 << 40, near: base))
        #expect(!EntityPrefetch.isReference(0x1000, near: 0x2000))   // a heap placed low: small integers still not
    }

    @Test("the reference words of a boxed entity are those holding an address near it")
    func referenceWordsOfOneEntity() {
        let layout = EntityLayout(of: Sample.self)
        let neighbour = EntityBox(Sample(words: (0, 0, 0, 0, 0, 0)))
        let box = EntityBox(Self.make(1, near: neighbour))
        #expect(EntityPrefetch.referenceWords(of: box, layout) == 0b10100)
        #expect(EntityPrefetch.referenceWords(of: box, EntityLayout(size: 0, alignment: 1)) == 0)   // nothing read
        withExtendedLifetime(neighbour) {}
    }

    @Test("the table learns the reference words from its first 64 entities, and its batched probe still finds them")
    func tableLearnsAndProbes() {
        let table = EntityCacheTable(capacityBytes: 1 << 20, layout: EntityLayout(of: Sample.self))
        let neighbour = EntityBox(Sample(words: (0, 0, 0, 0, 0, 0)))
        var boxes: [EntityBox<Sample>] = []
        var keys: [[UInt8]] = []
        for i in 0..<80 {
            // Every third entity, the first included, holds no address: what the others taught stays learned.
            let box = EntityBox(i % 3 == 0 ? Sample(words: (7, 40, 0, 0, 0, UInt(i))) : Self.make(UInt(i), near: neighbour))
            let key = (0..<9).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) }
            table.insert(box, forKey: EntityCacheKey(key), sequence: 1, at: 1, cost: 100)
            boxes.append(box)
            keys.append(key)
            let (words, samples) = table.storage.withLock { ($0.referenceWords, $0.layoutSamples) }
            #expect(samples == min(i + 1, EntityCacheTable.layoutSamples))
            #expect(words == (i == 0 ? 0 : 0b10100), "after \(i + 1) entities")
        }
        var staged = StagedKeys()
        for key in keys { key.withUnsafeBytes { staged.append($0) } }
        withUnsafeTemporaryAllocation(of: EntityCacheTable.Probe.self, capacity: keys.count) { probes in
            table.probe(staged, at: 1, into: probes)
            for i in keys.indices {
                let probe = (probes.baseAddress! + i).move()
                #expect(probe.current && probe.box.map(ObjectIdentifier.init) == ObjectIdentifier(boxes[i]), "key \(i)")
            }
        }
        withExtendedLifetime(neighbour) {}
    }
}
