import CLucidSupport

/// ``EntityCacheTable``'s probe of many keys under one hold of the lock, for a query's walk.
extension EntityCacheTable {
    /// ``probe(_:hash:at:)`` of every key of `keys`, under one hold of the lock, the result for key `i` in
    /// `probes[i]` (`probes` holds `keys.count` uninitialized probes on entry, initialized on return). The probes
    /// proceed in steps over all the keys (their buckets asked for, then their slots, then their boxes, before
    /// any is read), so that their waits for memory overlap instead of following each other, and the lock is
    /// taken once, not once per key (each atomic operation of a lock also waits for every load before it).
    /// - Complexity: O(keys) expected.
    func probe(_ keys: borrowing StagedKeys, at snapshot: UInt64, into probes: UnsafeMutableBufferPointer<Probe>) {
        let n = keys.count
        precondition(probes.count >= n, "entity cache: fewer probes than staged keys")
        guard capacityBytes > 0 else {
            for i in 0..<n { (probes.baseAddress! + i).initialize(to: Probe()) }
            return
        }
        withUnsafeTemporaryAllocation(of: Int.self, capacity: n) { found in
            storage.withLock { s in
                for i in 0..<n { s.index.prefetch(keys[i].hash) }
                s.slots.withUnsafeBufferPointer { slots in
                    for i in 0..<n {
                        found[i] = s.index.firstSlot(keys[i].hash) ?? -1
                        if found[i] >= 0 { Self.prefetch(slots.baseAddress! + found[i]) }
                    }
                }
                // Each candidate confirmed by its key (another key with the same hash: the full search), and its
                // box asked for before any box is retained.
                for i in 0..<n where found[i] >= 0 {
                    let entry = keys[i]
                    if entry.head.isWhole {
                        if s.slots[found[i]].head != entry.head {
                            found[i] = s.index.find(entry.hash) { s.slots[$0].head == entry.head } ?? -1
                        }
                    } else {
                        found[i] = keys.withLongKey(i) { raw in
                            Self.find(raw, head: entry.head, hash: entry.hash, in: s) ?? -1
                        }
                    }
                    if found[i] >= 0, let box = s.slots[found[i]].box {
                        lucid_prefetch(UnsafeRawPointer(bitPattern: UInt(bitPattern: ObjectIdentifier(box))))
                    }
                }
                for i in 0..<n {
                    (probes.baseAddress! + i).initialize(to: Self.probe(slot: found[i] >= 0 ? found[i] : nil,
                                                                        hash: keys[i].hash, at: snapshot, in: &s,
                                                                        capacity: capacityBytes))
                }
            }
        }
    }

    /// Asks for every line a slot lies on (a probe reads its first 64 bytes, and a hit its admission stamp at the
    /// end; 96 bytes in all): the first byte's, the 65th's and the last's cover a slot of at most 128 bytes
    /// wherever it starts. O(1).
    @inline(__always)
    private static func prefetch(_ slot: UnsafePointer<Slot>) {
        let raw = UnsafeRawPointer(slot)
        lucid_prefetch(raw)
        lucid_prefetch(raw + 64)
        lucid_prefetch(raw + (MemoryLayout<Slot>.stride - 1))
    }
}
