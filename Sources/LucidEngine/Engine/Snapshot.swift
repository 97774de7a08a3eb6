/// A consistent, read-only view of the store as of one commit.
///
/// Taking one costs O(1); it sees whole committed batches only and never changes, while the writer goes on.
/// It keeps the segment files it needs open until it is released, and its existence makes the writer copy the
/// B-tree nodes it modifies (copy-on-write), so do not hold snapshots longer than needed. Its point reads take the
/// engine's point index while no commit or compaction has followed it (one hashed probe per key, under a brief hold
/// of the engine's read lock, which may wait for a commit's exclusive section), its trees otherwise (a descent per
/// key): after a change, and in a snapshot taken before the index's build after open was done. Reads throw
/// ``LucidError/Code/closed`` once the engine is closed.
public struct Snapshot: Sendable {
    let core: EngineCore
    let state: EngineState
    /// The engine's ``PointIndex/epoch`` when the snapshot was taken: while the index keeps it, the snapshot's point
    /// reads take the index's answers (`Snapshot+PointReads.swift`).
    let pointEpoch: UInt64

    /// The sequence number of the last commit this snapshot sees.
    public var sequence: UInt64 { state.lastSequence }

    /// The value under `key`, or nil. - Complexity: O(1) expected for a key of at most 16 bytes while no commit or
    /// compaction has followed the snapshot (the point index answers, see `Snapshot+PointReads.swift`), else
    /// O(log n); plus one page read on a cache miss.
    /// - Throws: ``LucidError/Code/corruption`` when the page fails its checksum, ``LucidError/Code/io``, closed.
    public func get(_ key: [UInt8], in keyspace: String) throws -> [UInt8]? {
        try core.checkOpen()
        guard let location = location(forKey: key, in: keyspace) else { return nil }
        return try core.readValue(location, file: state.segments[UInt64(location.segment)])
    }

    /// The values under `keys` in `keyspace`, in the order of `keys` (nil for a key without one): the same as
    /// ``get(_:in:)`` for each key, faster for many keys scattered over a large store, because the lookups proceed
    /// together and their waits for memory overlap (the index queries' records are read this way).
    /// - Complexity: O(m) expected while the point index answers (as ``get(_:in:)``), else O(m log n), for m
    ///   keys; plus one page read per key whose page is not cached.
    /// - Throws: as ``get(_:in:)``, for the first key in order whose read fails.
    public func values(forKeys keys: [[UInt8]], in keyspace: String) throws -> [[UInt8]?] {
        try core.checkOpen()
        return try readValues(locations(forKeys: keys, in: keyspace) { $0 })
    }

    /// The values of the records at `locations`, in order (nil for nil). A store that reads pages in place
    /// (``EngineOptions/PageCompression/none`` or ``EngineOptions/PageCompression/lz4Records`` with mapped
    /// reads) copies the values of checked pages first (``PageFetch/checkedValue(at:in:records:)``); the rest are
    /// read through the cache, together (``readValuesThroughCache(_:)``). - Throws: as ``get(_:in:)``, for the first location that fails (in order
    /// among those read in place, then among the others).
    func readValues(_ locations: [RecordLocation?]) throws -> [[UInt8]?] {
        guard core.options.readsPagesInPlace else {
            return try readValuesThroughCache(locations)
        }
        var values = [[UInt8]?](repeating: nil, count: locations.count)
        var rest: [Int] = []
        for (i, location) in locations.enumerated() {
            guard let location else { continue }
            if let file = state.segments[UInt64(location.segment)],
               let value = try PageFetch.checkedValue(at: location, in: file, records: core.cache.records) {
                values[i] = value
            } else {
                rest.append(i)
            }
        }
        if !rest.isEmpty {
            for (i, value) in zip(rest, try readValuesThroughCache(rest.map { locations[$0] })) { values[i] = value }
        }
        return values
    }

    /// The values of the records at `locations`, in order (nil for nil): cached pages first, all together
    /// (``PageCache/copyValues(_:)``); then each miss alone, and each value too large to copy under the cache's
    /// lock, as ``get(_:in:)`` reads it. - Throws: as ``get(_:in:)``, for the first location in order that fails.
    private func readValuesThroughCache(_ locations: [RecordLocation?]) throws -> [[UInt8]?] {
        var requests: [PageCache.ValueRequest] = []
        requests.reserveCapacity(locations.count)
        for case let location? in locations where location.valueLength <= PageFetch.copyUnderLockLimit {
            requests.append(PageCache.ValueRequest(key: PageCache.Key(location), offset: Int(location.valueOffset),
                                                   length: Int(location.valueLength)))
        }
        let cached = core.cache.copyValues(requests)
        var r = 0
        return try locations.map { location in
            guard let location else { return nil }
            if location.valueLength <= PageFetch.copyUnderLockLimit {
                defer { r += 1 }
                if let value = cached[r] { return value }
            }
            // A store that reads pages in place looked this record up in its record cache already.
            return try core.readValue(location, file: state.segments[UInt64(location.segment)], lookingUpRecord: false)
        }
    }

    /// Whether `key` holds a value, without reading it. - Complexity: as ``get(_:in:)``'s lookup (O(1) expected
    /// while the point index answers, else O(log n)), no I/O.
    public func contains(_ key: [UInt8], in keyspace: String) -> Bool {
        location(forKey: key, in: keyspace) != nil
    }

    /// The index terms stored with the record under `key`, in the order they were committed (empty when it has
    /// none), or nil when there is no such record. Lets a tool copy records with their terms (`lucidctl dump`).
    /// - Complexity: the lookup as ``get(_:in:)``'s, plus one verified page read on a cache miss (the terms follow
    ///   the value in its page).
    /// - Throws: ``LucidError/Code/corruption`` when the page fails its checksum or the terms do not decode,
    ///   ``LucidError/Code/io``, closed.
    public func indexTerms(forKey key: [UInt8], in keyspace: String) throws -> [IndexTerm]? {
        try core.checkOpen()
        guard let location = location(forKey: key, in: keyspace) else { return nil }
        return try PageFetch.terms(at: location, file: state.segments[UInt64(location.segment)], cache: core.cache,
                                   storePath: core.path)
    }

    /// Number of keys in `keyspace`. - Complexity: O(1).
    public func count(in keyspace: String) -> Int { state.keyspace(keyspace)?.count ?? 0 }

    /// Names of the keyspaces that hold at least one key, sorted.
    public func keyspaces() -> [String] { state.keyspaces.filter { !$0.value.isEmpty }.keys.sorted() }

    /// Calls `body` for each record in `range`, in key order (descending when `reverse`), at most `limit`
    /// times; `body` returns false to stop early. Values are read lazily through the cache, a page held across the
    /// records it holds when they are next to each other in key order (``KeyOrderReader``).
    public func forEach(in keyspace: String, range: KeyRange = .all, reverse: Bool = false, limit: Int? = nil,
                        _ body: (KeyValue) throws -> Bool) throws {
        try core.checkOpen()
        guard let tree = state.keyspace(keyspace)?.primary else { return }
        var remaining = limit ?? Int.max
        guard remaining > 0 else { return }
        var reader = KeyOrderReader(core: core)
        try tree.forEach(from: range.treeLower, to: range.treeUpper, reverse: reverse) { key, location in
            let value = try reader.value(at: location, file: state.segments[UInt64(location.segment)])
            remaining -= 1
            return try body(KeyValue(key: Array(key), value: value)) && remaining > 0
        }
    }

    /// The records in `range`, in key order (descending when `reverse`), at most `limit` of them.
    /// Reads them in storage order (see ``recordTable(in:range:reverse:limit:)``): each page once.
    /// - Complexity: O(log n + k), one page read per page the k records lie on.
    public func scan(in keyspace: String, range: KeyRange = .all, reverse: Bool = false,
                     limit: Int? = nil) throws -> [KeyValue] {
        Array(try recordTable(in: keyspace, range: range, reverse: reverse, limit: limit))
    }

    /// The keys in `range` without reading values. - Complexity: O(log n + k), no I/O.
    public func keys(in keyspace: String, range: KeyRange = .all, reverse: Bool = false,
                     limit: Int? = nil) -> [[UInt8]] {
        guard let tree = state.keyspace(keyspace)?.primary else { return [] }
        var result: [[UInt8]] = []
        let cap = limit ?? Int.max
        guard cap > 0 else { return [] }
        tree.forEach(from: range.treeLower, to: range.treeUpper, reverse: reverse) { key, _ in
            result.append(Array(key))
            return result.count < cap
        }
        return result
    }
}
