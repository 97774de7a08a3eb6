/// One keyspace in memory: its primary tree (key → record location) and one tree per secondary index name,
/// whose keys are `encoded term ‖ primary key` (the term encoding is prefix-free, so entries sort by term, then
/// key) and whose values are the term's length, so the primary key can be sliced off an entry.
struct KeyspaceState: Sendable {
    var primary = BTree<RecordLocation>()
    var indexes: [String: BTree<UInt16>] = [:]

    var count: Int { primary.count }
    var isEmpty: Bool { primary.isEmpty }
    /// True when some index holds an entry (so old records may carry terms that an update must remove).
    var hasIndexEntries: Bool { indexes.values.contains { !$0.isEmpty } }

    /// Adds the entries of `terms` for `key`.
    mutating func insertTerms(_ terms: [IndexTerm], forKey key: UnsafeRawBufferPointer) {
        for term in terms {
            let entry = Self.entryKey(term: term.term, primaryKey: key)
            indexes[term.index, default: BTree()].updateValue(UInt16(term.term.count), forKey: entry)
        }
    }

    /// Removes the entries of `terms` for `key`; drops an index tree that becomes empty.
    mutating func removeTerms(_ terms: [IndexTerm], forKey key: UnsafeRawBufferPointer) {
        for term in terms {
            let entry = Self.entryKey(term: term.term, primaryKey: key)
            indexes[term.index]?.removeValue(forKey: entry)
            if indexes[term.index]?.isEmpty == true { indexes[term.index] = nil }
        }
    }

    @inline(__always)
    static func entryKey(term: [UInt8], primaryKey: UnsafeRawBufferPointer) -> [UInt8] {
        var entry = term
        entry.append(contentsOf: primaryKey)
        return entry
    }
}

extension RecordCodec {
    /// The index terms stored after a value that ends at `valueEnd` in a raw page payload; nil when malformed.
    static func terms(afterValueEndingAt valueEnd: Int, in payload: UnsafeRawBufferPointer) -> [IndexTerm]? {
        guard valueEnd >= 0, valueEnd <= payload.count else { return nil }
        var r = ByteReader(payload, offset: valueEnd)
        guard let count = r.length(max: Format.maxIndexTermsPerRecord) else { return nil }
        var terms: [IndexTerm] = []
        terms.reserveCapacity(count)
        for _ in 0..<count {
            guard let nl = r.length(max: Format.maxIndexNameLength), nl >= 1, let name = r.slice(nl),
                  let tl = r.length(max: Format.maxIndexTermLength), let term = r.bytes(tl) else { return nil }
            terms.append(IndexTerm(index: String(decoding: name, as: UTF8.self), term: term))
        }
        return terms
    }
}
