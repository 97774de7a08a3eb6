import CLucidSupport

/// ``EntityCacheTable``'s probe of many keys under one hold of the lock, for a query's walk.
extension EntityCacheTable {
    /// ``probe(_:hash:at:)`` of every key of `keys`, under one hold of the lock, the result for key `i` in
    /// `probes[i]` (`probes` holds `keys.count` uninitialized probes on entry, initialized on return). The probes
    /// proceed in steps over all the keys (their buckets asked for, then their slots, then every line of their
    /// boxes, then the objects the boxed entities refer to, before any box is retained: ``EntityPrefetch``), so
    /// that their waits for memory overlap instead of following each other, and the lock is taken once, not once
    /// per key (each atomic operation of a lock also waits for every load before it).
    /// - Complexity: O(keys) expected.
    func probe(_ keys: borrowing StagedKeys, at snapshot: UInt64, into probes: UnsafeMutableBufferPointer<Probe>) {
        let n = keys.count
        precondition(probes.count >= n, "entity cache: fewer probes than staged keys")
        guard capacityBytes > 0 else {
            for i in 0..<n { (probes.baseAddress! + i).initialize(to: Probe()) }
            return
        }
        // For each key: its candidate slot (-1: none), then the object of its box once confirmed (its address
        // only: the slot keeps the box alive while the lock is held).
        withUnsafeTemporaryAllocation(of: Int.self, capacity: n) { found in
            withUnsafeTemporaryAllocation(of: UnsafeRawPointer?.self, capacity: n) { objects in
                storage.withLock { s in probe(keys, at: snapshot, into: probes, found: found, objects: objects, in: &s) }
            }
        }
    }

    /// ``probe(_:at:into:)`` under the lock, with its scratch buffers (`keys.count` uninitialized elements each).
    @inline(__always)
    private func probe(_ keys: borrowing StagedKeys, at snapshot: UInt64, into probes: UnsafeMutableBufferPointer<Probe>,
                       found: UnsafeMutableBufferPointer<Int>, objects: UnsafeMutableBufferPointer<UnsafeRawPointer?>,
                       in s: inout Storage) {
        let n = keys.count
        for i in 0..<n { s.index.prefetch(keys[i].hash) }
        s.slots.withUnsafeBufferPointer { slots in
            for i in 0..<n {
                found[i] = s.index.firstSlot(keys[i].hash) ?? -1
                if found[i] >= 0 { Self.prefetch(slots.baseAddress! + found[i]) }
            }
        }
        // Each candidate confirmed by its key (another key with the same hash: the full search), and its box asked
        // for before any box is retained.
        for i in 0..<n {
            objects[i] = nil
            guard found[i] >= 0 else { continue }
            let entry = keys[i]
            if entry.head.isWhole {
                if s.slots[found[i]].head != entry.head {
                    found[i] = s.index.find(entry.hash) { s.slots[$0].head == entry.head } ?? -1
                }
            } else {
                found[i] = keys.withLongKey(i) { raw in Self.find(raw, head: entry.head, hash: entry.hash, in: s) ?? -1 }
            }
            if found[i] >= 0, let object = s.slots[found[i]].box.map(EntityPrefetch.object) {
                objects[i] = object
                EntityPrefetch.lines(at: object, objectBytes: layout.objectBytes)
            }
        }
        // What the entities found refer to, asked for before the loop below retains any box (and before the caller
        // copies any entity, retaining what it refers to).
        let words = s.referenceWords
        if words != 0 {
            for i in 0..<n {
                if let object = objects[i] { EntityPrefetch.references(at: object, words: words, layout) }
            }
        }
        for i in 0..<n {
            (probes.baseAddress! + i).initialize(to: Self.probe(slot: found[i] >= 0 ? found[i] : nil, hash: keys[i].hash,
                                                                at: snapshot, in: &s, capacity: capacityBytes))
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
