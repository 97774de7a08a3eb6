import Dispatch
import Foundation

/// A record's location and its rank in key order, for reading many records page by page
/// (``Snapshot/recordTable(in:range:reverse:limit:)``).
struct StoragePlace {
    let location: RecordLocation
    let rank: Int

    init(_ location: RecordLocation, rank: Int) {
        self.location = location
        self.rank = rank
    }

    /// The page: segment id in the high half, page offset in the low half (so ordered as the log stores pages).
    @inline(__always) var page: UInt64 { UInt64(location.segment) << 32 | UInt64(location.pageOffset) }
}

extension StoragePlace {
    /// Digit width of the radix sort: 256 buckets, so that a pass scatters into few enough places at once for the
    /// processor's write buffers and TLB.
    static let digitBits = 8

    /// Places from which the sort runs on several threads (when there are several processors): below, handing
    /// work to other threads costs more than the passes it spreads.
    static let minimumParallelSort = 1 << 16

    /// Pages start at least a page header apart (every page holds its header), so a page offset divided by the
    /// header's length still tells pages apart and keeps their order, with fewer significant bits to sort on.
    static let offsetGrain = UInt64(Format.pageHeaderLength)

    private static let processors = ProcessInfo.processInfo.activeProcessorCount

    /// Orders `places` by page (``page``), in log order, keeping the records of one page in the order they had
    /// (stable): what reading each page once needs. The results of a read never depend on the order (each place is
    /// read at its own location); which error a read reports first does (the first damaged page in log order).
    ///
    /// A least-significant-digit radix sort on one number per page: its segment relative to the lowest, times the
    /// largest page offset (in units of ``offsetGrain``) plus one, plus its offset in those units, less the
    /// smallest such number among the places. A few linear passes, one per 8 significant bits of the largest
    /// remaining number (3 for a store of a few segments of 64 MiB, fewer for places close together in the log),
    /// instead of a comparison sort's n log n comparisons. With at least ``minimumParallelSort`` places and more
    /// than one processor, the first pass scatters on the 8 most significant bits instead, and the 256 groups it
    /// makes are sorted on the bits below concurrently (`DispatchQueue.concurrentPerform`).
    /// - Complexity: O(n × passes), plus a scratch copy of `places` (32 bytes per place) while it runs.
    static func sortByPage(_ places: inout [StoragePlace]) {
        guard places.count > 1 else { return }
        // The first and last pages in log order (``page`` orders as the log does), and the largest offset.
        var firstPage = UInt64.max, lastPage = UInt64(0), highOffset = UInt64(0)
        for place in places {
            let page = place.page
            firstPage = min(firstPage, page)
            lastPage = max(lastPage, page)
            highOffset = max(highOffset, UInt64(place.location.pageOffset))
        }
        // At most 2^32 segments times 2^32 / 48 + 1 offsets: below 2^59, so the numbers fit 64 bits. The smallest
        // number is the first page's, the largest the last page's (the numbers keep the log's order).
        let lowSegment = firstPage >> 32
        let stride = highOffset / offsetGrain + 1
        let whole = DenseKey(lowSegment: lowSegment, stride: stride, base: 0)
        let key = DenseKey(lowSegment: lowSegment, stride: stride, base: whole(page: firstPage))
        let largest = key(page: lastPage)
        guard largest > 0 else { return }   // one page: nothing to move
        let significantBits = UInt64.bitWidth - largest.leadingZeroBitCount
        let passes = (significantBits + digitBits - 1) / digitBits

        var scratch = places
        places.withUnsafeMutableBufferPointer { places in
            scratch.withUnsafeMutableBufferPointer { scratch in
                if passes > 1 && places.count >= minimumParallelSort && processors > 1 {
                    sortInParallel(places, scratch, significantBits: significantBits, key: key)
                } else if radixSort(places, scratch, passes: passes, key: key) {
                    _ = places.update(fromContentsOf: scratch)
                }
            }
        }
    }

    /// The number a place is sorted on (see ``sortByPage(_:)``), less `base`.
    struct DenseKey {
        let lowSegment: UInt64
        let stride: UInt64
        let base: UInt64

        /// The number of the page `page` (as ``StoragePlace/page`` gives it: segment high, offset low).
        @inline(__always) func callAsFunction(page: UInt64) -> UInt64 {
            (((page >> 32) - lowSegment) &* stride &+ (page & 0xFFFF_FFFF) / offsetGrain) &- base
        }

        @inline(__always) func callAsFunction(_ place: StoragePlace) -> UInt64 { self(page: place.page) }
    }

    /// Scatters `places` into `scratch` on the 8 most significant of the keys' `significantBits` bits, then sorts
    /// each of the 256 groups on the bits below, concurrently, leaving every group's result in `places`.
    private static func sortInParallel(_ places: UnsafeMutableBufferPointer<StoragePlace>,
                                       _ scratch: UnsafeMutableBufferPointer<StoragePlace>,
                                       significantBits: Int, key: DenseKey) {
        let buckets = 1 << digitBits
        let shift = UInt64(significantBits - digitBits)
        var starts = [Int](repeating: 0, count: buckets + 1)
        for place in places { starts[Int(key(place) >> shift) + 1] += 1 }
        for digit in 0..<buckets { starts[digit + 1] += starts[digit] }
        var next = starts
        for place in places {
            let digit = Int(key(place) >> shift)
            scratch[next[digit]] = place
            next[digit] += 1
        }
        // Each group is sorted in its own range of both buffers: no task touches another's. (The digits below may
        // reach into the top one: within a group those bits are equal, so sorting on them changes nothing.)
        let passes = (Int(shift) + digitBits - 1) / digitBits
        let groups = Groups(places: places, scratch: scratch, starts: starts, passes: passes, key: key)
        DispatchQueue.concurrentPerform(iterations: buckets) { groups.sort($0) }
    }

    /// The groups of ``sortInParallel(_:_:significantBits:key:)``. `@unchecked Sendable`: task `g` reads and writes the
    /// range `starts[g]..<starts[g + 1]` of both buffers only, and the buffers outlive the tasks.
    private struct Groups: @unchecked Sendable {
        let places: UnsafeMutableBufferPointer<StoragePlace>
        let scratch: UnsafeMutableBufferPointer<StoragePlace>
        let starts: [Int]
        let passes: Int
        let key: DenseKey

        func sort(_ group: Int) {
            let range = starts[group]..<starts[group + 1]
            guard !range.isEmpty else { return }
            let source = UnsafeMutableBufferPointer(rebasing: scratch[range])
            let target = UnsafeMutableBufferPointer(rebasing: places[range])
            if !radixSort(source, target, passes: passes, key: key) { _ = target.update(fromContentsOf: source) }
        }
    }

    /// Sorts `source` on digits `0..<passes` of `key` (least significant first, stable), `target` (as long) as
    /// its scratch; returns whether the result ended in `target` rather than `source`. A pass whose digit every
    /// place shares is skipped. O(count × passes).
    static func radixSort(_ source: UnsafeMutableBufferPointer<StoragePlace>,
                          _ target: UnsafeMutableBufferPointer<StoragePlace>,
                          passes: Int, key: DenseKey) -> Bool {
        let count = source.count
        guard count > 1, passes > 0 else { return false }
        let buckets = 1 << digitBits
        let mask = UInt64(buckets - 1)
        // Every pass's histogram, counted in one read of the input.
        var histograms = [Int](repeating: 0, count: passes * buckets)
        for place in source {
            let key = key(place)
            for pass in 0..<passes {
                histograms[pass * buckets + Int((key >> UInt64(pass * digitBits)) & mask)] += 1
            }
        }
        var inTarget = false
        var starts = [Int](repeating: 0, count: buckets)
        for pass in 0..<passes {
            let shift = UInt64(pass * digitBits)
            let (from, to) = inTarget ? (target, source) : (source, target)
            // A pass whose digit is the same for every place would copy them unchanged: skipped.
            if histograms[pass * buckets + Int((key(from[0]) >> shift) & mask)] == count { continue }
            var total = 0
            for digit in 0..<buckets {
                starts[digit] = total
                total += histograms[pass * buckets + digit]
            }
            for place in from {
                let digit = Int((key(place) >> shift) & mask)
                to[starts[digit]] = place
                starts[digit] += 1
            }
            inTarget.toggle()
        }
        return inTarget
    }
}
