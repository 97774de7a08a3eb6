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
    /// ``forEach(in:range:reverse:limit:_:)`` streams a range without holding it. A large table is read on every
    /// processor from 4,096 records (``StorageOrderRead``) and sorted on every processor from 65,536, the calling
    /// thread taking part.
    ///
    /// - Complexity: O(log n + k) for k records (they are put in storage order by a radix sort on their page,
    ///   ``StoragePlace/sortByPage(_:)``), one page read per page they lie on. Memory: the keys and the values in
    ///   one buffer each, 16 bytes per record to find them, and 64 bytes per record more while it runs.
    /// - Throws: ``LucidError/Code/corruption`` when a page fails its checksum or a value lies outside its page,
    ///   ``LucidError/Code/io``, closed.
    public func recordTable(in keyspace: String, range: KeyRange = .all, reverse: Bool = false,
                            limit: Int? = nil) throws -> RecordTable {
        try core.checkOpen()
        var table = RecordTable()
        guard let tree = state.keyspace(keyspace)?.primary else { return table }
        let cap = limit ?? Int.max
        guard cap > 0 else { return table }

        // Keys in key order, where each value lies, and where it goes in the table (values in key order too).
        var places: [StoragePlace] = []
        if range.treeLower == nil, range.treeUpper == nil {
            let count = min(cap, state.keyspace(keyspace)?.count ?? 0)
            places.reserveCapacity(count)
            table.keyEnds.reserveCapacity(count)
            table.valueEnds.reserveCapacity(count)
        }
        var valueBytes = 0
        tree.forEach(from: range.treeLower, to: range.treeUpper, reverse: reverse) { key, location in
            if places.isEmpty, range.treeLower == nil, range.treeUpper == nil, key.count <= 64 {
                // Keys of one keyspace often share a length: room for that many, grown as usual if they do not
                // (not for a long first key, which could reserve far more than the keys take).
                table.keyBytes.reserveCapacity(key.count * table.keyEnds.capacity)
            }
            places.append(StoragePlace(location, rank: places.count))
            table.keyBytes.append(contentsOf: key)
            table.keyEnds.append(table.keyBytes.count)
            valueBytes += Int(location.valueLength)
            table.valueEnds.append(valueBytes)
            return places.count < cap
        }

        // Values read in storage order, a page at a time, each copied to its place in key order.
        StoragePlace.sortByPage(&places)
        table.valueBytes = try table.valueEnds.withUnsafeBufferPointer { ends in
            try [UInt8](unsafeUninitializedCapacity: valueBytes) { values, initialized in
                let out = ValueOutput(bytes: values, ends: ends)
                try StorageOrderRead.forEachRun(of: places) { run in
                    var first = run.startIndex
                    while first < run.endIndex {
                        let page = run[first].page
                        var end = first + 1
                        while end < run.endIndex && run[end].page == page { end += 1 }
                        try readValues(of: run[first..<end], into: out)
                        first = end
                    }
                }
                // Every rank's value was copied once, and the values' lengths sum to the buffer's.
                initialized = valueBytes
            }
        }
        return table
    }

    /// Copies the values of `places`, which all lie on one page, into `out` at their ranks: the page is taken
    /// from the cache when it holds it, else read and verified but not cached (each page is read once here, and
    /// caching them all would evict the working set of other reads).
    /// - Throws: as ``PageFetch/valueRange(at:in:file:storePath:)`` and the page's read.
    private func readValues(of places: ArraySlice<StoragePlace>, into out: ValueOutput) throws {
        guard let location = places.first?.location else { return }
        let file = state.segments[UInt64(location.segment)]
        let page = try PageFetch.page(at: location, file: file, cache: core.cache, storePath: core.path,
                                      caching: false)
        try page.bytes.withUnsafeBufferPointer { bytes in
            for place in places {
                let range = try PageFetch.valueRange(at: place.location, in: page, file: file, storePath: core.path)
                out.copy(UnsafeBufferPointer(rebasing: bytes[range]), rank: place.rank)
            }
        }
    }
}

/// Where ``Snapshot/recordTable(in:range:reverse:limit:)`` writes values: one buffer holding them in key order,
/// each ending where the table's `valueEnds` says (computed from the index before any is read).
private struct ValueOutput {
    let bytes: UnsafeMutableBufferPointer<UInt8>
    let ends: UnsafeBufferPointer<Int>

    /// Copies `value` to the place of rank `rank`. Its length is its index entry's, which placed it, so a value
    /// of another length is a bug here, stopped before it writes out of its place.
    @inline(__always)
    func copy(_ value: UnsafeBufferPointer<UInt8>, rank: Int) {
        let start = rank == 0 ? 0 : ends[rank - 1]
        precondition(value.count == ends[rank] - start && ends[rank] <= bytes.count,
                     "a value's length differs from its index entry's")
        if let source = value.baseAddress, value.count > 0 {
            (bytes.baseAddress! + start).initialize(from: source, count: value.count)
        }
    }
}
