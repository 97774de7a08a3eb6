import CLucidSupport

extension PageCache {
    /// Where an entry holds its page's storage reference (a `PageBuffer` is its byte array, one reference).
    private static let entryPageOffset: Int = {
        assert(MemoryLayout<PageBuffer>.size == MemoryLayout<UnsafeRawPointer>.size, "a PageBuffer is one array reference")
        return MemoryLayout<Entry>.offset(of: \Entry.page)!
    }()

    /// How many bytes of a value ``copyValues(_:)`` prefetches (from its start).
    private static let prefetchedValueBytes = 1024

    /// One value a batched read wants: `length` bytes at `offset` of the page `key`.
    struct ValueRequest {
        var key: Key
        var offset: Int
        var length: Int
    }

    /// The values of `requests` copied out of their cached pages, in order; nil where the page is not cached or
    /// the range lies outside it (the caller reads those alone, through the miss path, which counts the miss and
    /// reports the error). Each hit marks its page recently used and counts as a hit.
    ///
    /// Same result as ``withPage(for:_:)`` per request, but in three passes over all of them, each taking the
    /// request's shard lock briefly: find the slot (and prefetch its entry), read the entry (and prefetch the page's
    /// bytes of the value), copy. A hit otherwise waits for memory three times in a row (entry, page, value); here
    /// the waits of the different requests overlap. A page evicted between passes is a miss. (A fourth pass to
    /// prefetch the slot table's lines cost more in locking than it saved, measured on index queries at 1M records.)
    /// - Complexity: O(m) for m requests, three lock acquisitions per hit, one allocation per value copied.
    ///   Requests are taken in groups of `BTreeLayout.lookupGroup`.
    func copyValues(_ requests: [ValueRequest]) -> [[UInt8]?] {
        var values: [[UInt8]?] = []
        values.reserveCapacity(requests.count)
        // In groups small enough that what one pass prefetches is still in the processor's cache when it is read.
        for start in stride(from: 0, to: requests.count, by: BTreeLayout.lookupGroup) {
            copyValues(requests[start ..< min(requests.count, start + BTreeLayout.lookupGroup)], to: &values)
        }
        return values
    }

    private func copyValues(_ requests: ArraySlice<ValueRequest>, to values: inout [[UInt8]?]) {
        let m = requests.count
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: m) { slots in
            for (r, request) in requests.enumerated() {
                slots[r] = shards[shardIndex(request.key)].mutex.withLock { shard in
                    guard let slot = shard.slots.value(for: request.key.packed) else { return -1 }
                    shard.entries.withUnsafeBufferPointer { lucid_prefetch($0.baseAddress.unsafelyUnwrapped + slot) }
                    return Int32(truncatingIfNeeded: slot)
                }
            }
            for (r, request) in requests.enumerated() where slots[r] >= 0 {
                shards[shardIndex(request.key)].mutex.withLock { shard in
                    let slot = Int(slots[r])
                    guard slot < shard.entries.count, shard.entries[slot].key == request.key else { return }
                    // The page's storage object is found from the entry alone, without reading the object (its
                    // header would be waited for) or retaining it (a write, waited for too): an array is one
                    // reference to a 32-byte header followed by the elements. Addresses only; nothing is read there.
                    let storage = shard.entries.withUnsafeBufferPointer { entries in
                        UnsafeRawPointer(entries.baseAddress.unsafelyUnwrapped + slot)
                            .load(fromByteOffset: Self.entryPageOffset, as: UnsafeRawPointer.self)
                    }
                    lucid_prefetch(storage)
                    // Every line of the value, up to a bound (a value is copied whole in the next pass).
                    let start = storage + 32 + max(0, request.offset)
                    var line = 0
                    repeat {
                        lucid_prefetch(start + line)
                        line += 64
                    } while line < min(request.length, Self.prefetchedValueBytes)
                }
            }
            var hits: UInt64 = 0
            for (r, request) in requests.enumerated() {
                guard slots[r] >= 0 else { values.append(nil); continue }
                values.append(shards[shardIndex(request.key)].mutex.withLock { shard in
                    let slot = Int(slots[r])
                    guard slot < shard.entries.count, shard.entries[slot].key == request.key,
                          let value = shard.entries[slot].page.copy(offset: request.offset, length: request.length)
                    else { return nil }
                    shard.noteHit(slot)
                    hits += 1
                    return value
                })
            }
            if hits > 0 { hitCount.add(hits, ordering: .relaxed) }
        }
    }
}
