import Testing
import LucidEngineTestSupport
@testable import LucidEngine

/// `StoragePlace.sortByPage`, the radix sort that puts a record table's reads in storage order: it returns the
/// places it was given, grouped by page in log order, each page's places in the order they came (so records of one
/// page keep key order), on one thread and on several.
@Suite("Engine: storage-order sort")
struct StoragePlaceTests {
    static func place(segment: UInt32, page: UInt32, valueOffset: UInt32 = 0, rank: Int) -> StoragePlace {
        StoragePlace(RecordLocation(segment: segment, pageOffset: page, valueOffset: valueOffset, valueLength: 1,
                                    hasTerms: false, sequence: UInt64(rank)), rank: rank)
    }

    /// Checks that `sorted` holds exactly the ranks of `original`, with pages ascending and the ranks of each page
    /// ascending (they come in rank order: the sort is stable).
    static func expectSorted(_ sorted: [StoragePlace], from original: [StoragePlace]) {
        #expect(sorted.map(\.rank).sorted() == original.map(\.rank))
        let byRank = Dictionary(uniqueKeysWithValues: original.map { ($0.rank, $0.page) })
        for place in sorted { #expect(byRank[place.rank] == place.page) }
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            #expect(a.page <= b.page)
            if a.page == b.page { #expect(a.rank < b.rank) }
        }
    }

    /// A page offset rounded down to where a page may start: pages lie at least a page header apart.
    static func pageStart(_ offset: UInt64) -> UInt32 { UInt32(offset - offset % UInt64(Format.pageHeaderLength)) }

    @Test("pages spread over segments and offsets of 8 to 32 bits come out grouped, in log order, stable",
          arguments: [UInt32(2_000), 1 << 16, 1 << 26, UInt32.max])
    func radixOrder(highestOffset: UInt32) {
        var rng = SplitMix64(seed: UInt64(highestOffset))
        // Few pages, so that many places share one and stability shows.
        let pages = (0..<300).map { _ in
            (segment: UInt32(3 + rng.next() % 5), page: Self.pageStart(rng.next() % (UInt64(highestOffset) + 1)))
        }
        let original = (0..<5_000).map { rank in
            let p = pages[Int(rng.next() % UInt64(pages.count))]
            return Self.place(segment: p.segment, page: p.page, valueOffset: UInt32(rng.next() % 4096), rank: rank)
        }
        var sorted = original
        StoragePlace.sortByPage(&sorted)
        Self.expectSorted(sorted, from: original)
    }

    /// Page offsets 256 grains apart share their low digit, so the first pass is skipped; with offsets below
    /// 2^16 one pass runs (its result is in the scratch array, which must be copied back), with offsets below
    /// 2^24 two do.
    @Test("passes whose digit every place shares are skipped, whatever the number of passes left",
          arguments: [UInt64(1) << 16, 1 << 24])
    func skippedPasses(offsetLimit: UInt64) {
        var rng = SplitMix64(seed: offsetLimit)
        let step = StoragePlace.offsetGrain << 8
        let original = (0..<3_000).map { rank in
            Self.place(segment: 2, page: UInt32(rng.next() % (offsetLimit / step) * step), rank: rank)
        }
        var sorted = original
        StoragePlace.sortByPage(&sorted)
        Self.expectSorted(sorted, from: original)
    }

    @Test("the widest segment ids and offsets sort on eight digits")
    func widest() {
        var rng = SplitMix64(seed: 9)
        let original = (0..<2_000).map { rank in
            Self.place(segment: rng.next() % 2 == 0 ? 0 : UInt32.max,
                       page: rng.next() % 2 == 0 ? 0 : Self.pageStart(UInt64(UInt32.max) - 48 * (rng.next() % 3)),
                       rank: rank)
        }
        var sorted = original
        StoragePlace.sortByPage(&sorted)
        Self.expectSorted(sorted, from: original)
        #expect(Set(sorted.map(\.page)).count == 8)
    }

    /// Enough places for the parallel path (on a machine with more than one processor): a scatter on the top
    /// digit, then each group sorted on its own. Pages spread over six segments of 64 MiB (three passes), packed a
    /// page header apart at the start of a segment (neighbouring pages differ in the lowest digit only), or
    /// clustered in 64 KiB of one segment, 60 MiB in (spread over groups once the smallest number is taken off).
    @Test("a sort large enough for several threads gives the same order", arguments: [0, 1, 2])
    func parallelOrder(layout: Int) {
        var rng = SplitMix64(seed: UInt64(40 + layout))
        let count = 3 * StoragePlace.minimumParallelSort
        let original = (0..<count).map { rank in
            switch layout {
            case 0:
                return Self.place(segment: UInt32(rng.next() % 6), page: Self.pageStart(rng.next() % (64 << 20)),
                                  rank: rank)
            case 1:
                return Self.place(segment: UInt32(rng.next() % 2),
                                  page: UInt32(rng.next() % 5_000) * UInt32(Format.pageHeaderLength), rank: rank)
            default:
                return Self.place(segment: 9, page: Self.pageStart(60 << 20 + rng.next() % (1 << 16)), rank: rank)
            }
        }
        var sorted = original
        StoragePlace.sortByPage(&sorted)
        Self.expectSorted(sorted, from: original)
    }

    @Test("one page, one place and no places are left as they are")
    func trivial() {
        let onePage = (0..<100).map { Self.place(segment: 7, page: 4096, valueOffset: UInt32(100 - $0), rank: $0) }
        var sorted = onePage
        StoragePlace.sortByPage(&sorted)
        #expect(sorted.map(\.rank) == onePage.map(\.rank))
        var single = [Self.place(segment: 1, page: 1, rank: 0)]
        StoragePlace.sortByPage(&single)
        #expect(single.map(\.rank) == [0])
        var none: [StoragePlace] = []
        StoragePlace.sortByPage(&none)
        #expect(none.isEmpty)
    }
}
