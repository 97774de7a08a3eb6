extension Snapshot {
    /// Visits the index entries matching `condition`, in term order (descending when `reverse`), with the decoded
    /// term and the raw primary key; `body` returns false to stop. A record with several matching terms is visited
    /// once per term. An entry whose term does not decode (only a damaged checkpoint can hold one; `verify()`
    /// reports it) is skipped.
    ///
    /// The key's bytes are valid only during the call: ``forEachIndexEntry(keyspace:index:condition:reverse:_:)``
    /// without an array made per entry, for a caller that copies only some keys.
    /// - Complexity: O(log n + k) for k entries visited, no I/O, no allocation per entry (a string term's
    ///   `IndexValue` aside).
    /// - Throws: only what `body` throws, which ends the walk.
    public func forEachEntry(keyspace: String, index: String, condition: IndexCondition, reverse: Bool = false,
                             _ body: (IndexValue, UnsafeRawBufferPointer) throws -> Bool) rethrows {
        try forEachRawEntry(keyspace: keyspace, index: index, condition: condition, reverse: reverse) { term, key in
            guard let (value, _) = IndexValue.decode(term) else { return true }
            return try body(value, key)
        }
    }

    /// ``forEachEntry(keyspace:index:condition:reverse:_:)`` with the term's encoded bytes, not decoded: for the
    /// callers that need the primary keys, or only to tell terms apart (two terms are equal values exactly when
    /// their encodings are equal bytes: the encoding is canonical, see ``IndexValue``). The terms are those in the
    /// condition's byte ranges, so each matches it; one that does not decode (only a damaged checkpoint can hold
    /// one; `verify()` reports it) is visited too. Both buffers are valid only during the call.
    /// - Complexity: O(log n + k) for k entries visited, no I/O, no allocation.
    /// - Throws: only what `body` throws, which ends the walk.
    public func forEachRawEntry(keyspace: String, index: String, condition: IndexCondition, reverse: Bool,
                                _ body: (_ term: UnsafeRawBufferPointer, _ key: UnsafeRawBufferPointer) throws -> Bool) rethrows {
        guard let tree = state.indexTree(index, in: keyspace) else { return }
        let ranges = reverse ? condition.entryRanges.reversed() : condition.entryRanges
        var going = true
        for range in ranges where going {
            try tree.forEach(from: range.treeLower, to: range.treeUpper, reverse: reverse) { entry, termLength in
                going = try body(UnsafeRawBufferPointer(rebasing: entry[0..<Int(termLength)]),
                                 UnsafeRawBufferPointer(rebasing: entry[Int(termLength)...]))
                return going
            }
        }
    }

    /// Visits the entries of `index` matching `condition` lazily, in term order (descending when `reverse`), with
    /// each record's primary key; `body` returns false to stop. A record with several matching terms is visited
    /// once per term. - Complexity: O(log n + k) for k entries visited, no I/O.
    public func forEachIndexEntry(keyspace: String, index: String, condition: IndexCondition, reverse: Bool = false,
                                  _ body: (IndexValue, [UInt8]) throws -> Bool) rethrows {
        try forEachEntry(keyspace: keyspace, index: index, condition: condition, reverse: reverse) { value, key in
            try body(value, Array(key))
        }
    }

    /// The primary keys of the records in `keyspace` matching `filter`, unsorted (``keys(in:where:)`` without
    /// its sort). - Complexity: O(log n + k) per condition, no I/O.
    public func keySet(in keyspace: String, where filter: IndexFilter) -> Set<[UInt8]> {
        keySet(keyspace, filter)
    }

    /// The index entries matching the query, in its order, after its offset and within its limit (entries, not
    /// distinct records). - Complexity: O(log n + offset + k), no I/O.
    public func entries(matching query: IndexQuery) -> [IndexEntry] {
        var result: [IndexEntry] = []
        var skip = max(0, query.offset)
        let limit = query.limit ?? Int.max
        guard limit > 0 else { return [] }
        forEachEntry(keyspace: query.keyspace, index: query.index, condition: query.condition,
                     reverse: query.reverse) { value, key in
            if skip > 0 { skip -= 1; return true }
            result.append(IndexEntry(value: value, key: Array(key)))
            return result.count < limit
        }
        return result
    }

    /// The primary keys of the records matching the query, in index order, each record once (at its first
    /// matching term), after the offset and within the limit. - Complexity: O(log n + offset + k), no I/O.
    public func keys(matching query: IndexQuery) -> [[UInt8]] {
        var result: [[UInt8]] = []
        forEachKey(matching: query) { key, copy in
            result.append(copy ?? Array(key))
            return true
        }
        return result
    }

    /// Calls `body` with the primary key of each record ``keys(matching:)`` returns, in the same order, the key's
    /// bytes valid only during the call; `body` returns false to stop. For a caller that copies only some keys:
    /// an equality condition visits its records without an allocation per key.
    /// - Complexity: O(log n + offset + k), no I/O.
    /// - Throws: only what `body` throws, which ends the walk.
    public func forEachKey(matching query: IndexQuery, _ body: (UnsafeRawBufferPointer) throws -> Bool) rethrows {
        try forEachKey(matching: query) { key, _ in try body(key) }
    }

    /// ``forEachKey(matching:_:)`` with the copy of the key already made, if any (a condition other than equality
    /// copies each key to tell records met before), so that a caller keeping every key copies none twice.
    private func forEachKey(matching query: IndexQuery,
                            _ body: (UnsafeRawBufferPointer, [UInt8]?) throws -> Bool) rethrows {
        var seen = SeenKeys()
        // One term's entries (term ‖ primary key) name each record once: no record of the keys met is needed.
        let distinct: Bool
        if case .equals = query.condition { distinct = true } else { distinct = false }
        var skip = max(0, query.offset)
        var remaining = query.limit ?? Int.max
        guard remaining > 0 else { return }
        try forEachRawEntry(keyspace: query.keyspace, index: query.index, condition: query.condition,
                            reverse: query.reverse) { _, key in
            var copy: [UInt8]?
            if !distinct {
                let k = Array(key)
                guard seen.insert(k) else { return true }
                copy = k
            }
            if skip > 0 { skip -= 1; return true }
            remaining -= 1
            return try body(key, copy) && remaining > 0
        }
    }

    /// The records matching the query (see ``keys(matching:)``), with their values.
    /// - Throws: corruption or I/O errors reading values.
    public func records(matching query: IndexQuery) throws -> [KeyValue] {
        let keys = keys(matching: query)
        return try zip(keys, values(forKeys: keys, in: query.keyspace)).compactMap { key, value in
            value.map { KeyValue(key: key, value: $0) }
        }
    }

    /// Number of distinct records matching `condition` in `index`. - Complexity: O(log n + k).
    public func count(keyspace: String, index: String, condition: IndexCondition) -> Int {
        var seen = Set<[UInt8]>()
        forEachRawEntry(keyspace: keyspace, index: index, condition: condition, reverse: false) { _, key in
            seen.insert(Array(key))
            return true
        }
        return seen.count
    }

    /// The primary keys of the records in `keyspace` matching `filter`, sorted by primary key.
    /// `.and` intersects and `.or` unites the sets of its parts.
    public func keys(in keyspace: String, where filter: IndexFilter) -> [[UInt8]] {
        keySet(keyspace, filter).sorted { $0.lexicographicallyPrecedes($1) }
    }

    private func keySet(_ keyspace: String, _ filter: IndexFilter) -> Set<[UInt8]> {
        switch filter {
        case .match(let index, let condition):
            var keys = Set<[UInt8]>()
            forEachRawEntry(keyspace: keyspace, index: index, condition: condition, reverse: false) { _, key in
                keys.insert(Array(key))
                return true
            }
            return keys
        case .and(let parts):
            guard var result = parts.first.map({ keySet(keyspace, $0) }) else { return [] }
            for part in parts.dropFirst() where !result.isEmpty { result.formIntersection(keySet(keyspace, part)) }
            return result
        case .or(let parts):
            return parts.reduce(into: Set<[UInt8]>()) { $0.formUnion(keySet(keyspace, $1)) }
        }
    }

    /// Names of the indexes of `keyspace` that hold at least one entry, sorted.
    public func indexNames(in keyspace: String) -> [String] {
        (state.keyspaces[keyspace]?.indexes.keys).map { $0.sorted() } ?? []
    }

    /// Number of entries in an index (a record with several terms counts once per term). - Complexity: O(1).
    public func entryCount(keyspace: String, index: String) -> Int {
        state.indexTree(index, in: keyspace)?.count ?? 0
    }
}

extension Engine {
    /// The records matching an index query, read from a fresh snapshot (see ``Snapshot/records(matching:)``).
    public func records(matching query: IndexQuery) throws -> [KeyValue] {
        try snapshot().records(matching: query)
    }

    /// The primary keys matching an index query (see ``Snapshot/keys(matching:)``).
    public func keys(matching query: IndexQuery) -> [[UInt8]] {
        snapshot().keys(matching: query)
    }

    /// The primary keys matching an AND/OR filter, sorted (see ``Snapshot/keys(in:where:)``).
    public func keys(in keyspace: String, where filter: IndexFilter) -> [[UInt8]] {
        snapshot().keys(in: keyspace, where: filter)
    }
}
