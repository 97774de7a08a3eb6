/// Reading many records in the order they lie on disk.
///
/// Records are stored in log order (the order they were committed), not in key order, until compaction rewrites
/// them. A key-order walk over records written in random key order reads a different page for nearly every record,
/// and once the range outgrows the page cache, each page is read, verified and decompressed again for every record
/// it holds. Reading in storage order instead reads each page once, while it is hot, for all the records it holds.
extension Snapshot {
    /// The records in `range` (the first `limit` of them in key order, descending when `reverse`), read whole into
    /// one ``RecordTable``: keys and values each in one buffer, in key order.
    ///
    /// The values are read in storage order: each page once, for all the records it holds, instead of once per
    /// record as a key-order walk over a range larger than the page cache may. Use it to read a large range whole;
    /// ``forEach(in:range:reverse:limit:_:)`` streams a range without holding it.
    ///
    /// - Complexity: O(log n + k log k) for k records, one page read per page they lie on. Memory: the keys and the
    ///   values in one buffer each, 24 bytes per record to find them, and 32 bytes per record more while it runs.
    /// - Throws: ``LucidError/Code/corruption`` when a page fails its checksum or a value lies outside its page,
    ///   ``LucidError/Code/io``, closed.
    public func recordTable(in keyspace: String, range: KeyRange = .all, reverse: Bool = false,
                            limit: Int? = nil) throws -> RecordTable {
        try core.checkOpen()
        var table = RecordTable()
        guard let tree = state.keyspaces[keyspace]?.primary else { return table }
        let cap = limit ?? Int.max
        guard cap > 0 else { return table }

        // Keys in key order, and where each value lies.
        var places: [StoragePlace] = []
        if range.treeLower == nil, range.treeUpper == nil {
            let count = min(cap, state.keyspaces[keyspace]?.count ?? 0)
            places.reserveCapacity(count)
            table.keyEnds.reserveCapacity(count)
        }
        var valueBytes = 0
        tree.forEach(from: range.treeLower, to: range.treeUpper, reverse: reverse) { key, location in
            places.append(StoragePlace(location, rank: places.count))
            table.keyBytes.append(contentsOf: key)
            table.keyEnds.append(table.keyBytes.count)
            valueBytes += Int(location.valueLength)
            return places.count < cap
        }

        // Values in storage order, each placed by its rank.
        places.sort { $0.order < $1.order }
        table.valueBytes.reserveCapacity(valueBytes)
        table.valueStarts = [Int](repeating: 0, count: places.count)
        table.valueLengths = [Int](repeating: 0, count: places.count)
        // The page of the records before, while they share it (and its file, for errors).
        var held: (page: UInt64, buffer: PageBuffer, file: SegmentFile?)?
        for place in places {
            let location = place.location
            let page: PageBuffer
            let file: SegmentFile?
            if let held, held.page == place.page {
                (page, file) = (held.buffer, held.file)
            } else {
                file = state.segments[UInt64(location.segment)]
                // Pages the cache holds are used; the others are read but not cached (each is read once here, and
                // caching them all would evict the working set of other reads).
                page = try PageFetch.page(at: location, file: file, cache: core.cache, storePath: core.path,
                                          caching: false)
                held = (place.page, page, file)
            }
            let range = try PageFetch.valueRange(at: location, in: page, file: file, storePath: core.path)
            table.valueStarts[place.rank] = table.valueBytes.count
            table.valueLengths[place.rank] = range.count
            table.valueBytes.append(contentsOf: page.bytes[range])
        }
        return table
    }
}

/// A record's location and rank, ordered by where its page lies: segment, then page offset, then the value's
/// offset in the page.
private struct StoragePlace {
    let location: RecordLocation
    let rank: Int

    init(_ location: RecordLocation, rank: Int) {
        self.location = location
        self.rank = rank
    }

    /// The page: segment id in the high half, page offset in the low half.
    var page: UInt64 { UInt64(location.segment) << 32 | UInt64(location.pageOffset) }

    /// Storage order as one comparable value.
    var order: (UInt64, UInt32) { (page, location.valueOffset) }
}
