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
    private static let digitBits = 8

    /// Orders `places` by page (``page``), in log order, keeping the records of one page in the order they had
    /// (stable): what reading each page once needs. Nothing else depends on the order, so correctness never does.
    ///
    /// A least-significant-digit radix sort on one number per page: its segment relative to the lowest, times the
    /// largest page offset (a byte offset) plus one, plus its offset. A few linear passes, one per 8 significant
    /// bits of the largest such number (4 for a store of a few segments of 64 MiB), instead of a comparison sort's
    /// n log n comparisons. Falls back to the standard sort, on (page, rank), when the number would not fit 64 bits.
    /// - Complexity: O(n × passes), plus a scratch copy of `places` (32 bytes per place) while it runs.
    static func sortByPage(_ places: inout [StoragePlace]) {
        guard places.count > 1 else { return }
        var lowSegment = UInt64.max, highSegment = UInt64(0), highOffset = UInt64(0)
        for place in places {
            let segment = UInt64(place.location.segment)
            lowSegment = min(lowSegment, segment)
            highSegment = max(highSegment, segment)
            highOffset = max(highOffset, UInt64(place.location.pageOffset))
        }
        let stride = highOffset + 1
        let (span, overflow) = (highSegment - lowSegment + 1).multipliedReportingOverflow(by: stride)
        guard !overflow else {
            places.sort { ($0.page, $0.rank) < ($1.page, $1.rank) }
            return
        }
        @inline(__always) func dense(_ place: StoragePlace) -> UInt64 {
            (UInt64(place.location.segment) - lowSegment) &* stride &+ UInt64(place.location.pageOffset)
        }
        let significantBits = UInt64.bitWidth - (span - 1).leadingZeroBitCount
        let passes = (significantBits + digitBits - 1) / digitBits
        guard passes > 0 else { return }

        let count = places.count
        let buckets = 1 << digitBits
        let mask = UInt64(buckets - 1)
        // Every pass's histogram, counted in one read of the input.
        var histograms = [Int](repeating: 0, count: passes * buckets)
        for place in places {
            let key = dense(place)
            for pass in 0..<passes {
                histograms[pass * buckets + Int((key >> UInt64(pass * digitBits)) & mask)] += 1
            }
        }
        var scratch = places
        var sourceIsPlaces = true
        for pass in 0..<passes {
            let shift = UInt64(pass * digitBits)
            // A pass whose digit is the same for every place would copy them unchanged: skipped.
            let first = Int((dense(sourceIsPlaces ? places[0] : scratch[0]) >> shift) & mask)
            if histograms[pass * buckets + first] == count { continue }
            var starts = [Int](repeating: 0, count: buckets)
            var total = 0
            for digit in 0..<buckets {
                starts[digit] = total
                total += histograms[pass * buckets + digit]
            }
            @inline(__always) func scatter(_ source: UnsafeBufferPointer<StoragePlace>,
                                           _ target: UnsafeMutableBufferPointer<StoragePlace>) {
                for place in source {
                    let digit = Int((dense(place) >> shift) & mask)
                    target[starts[digit]] = place
                    starts[digit] += 1
                }
            }
            if sourceIsPlaces {
                places.withUnsafeBufferPointer { s in scratch.withUnsafeMutableBufferPointer { scatter(s, $0) } }
            } else {
                scratch.withUnsafeBufferPointer { s in places.withUnsafeMutableBufferPointer { scatter(s, $0) } }
            }
            sourceIsPlaces.toggle()
        }
        if !sourceIsPlaces { swap(&places, &scratch) }
    }
}
