extension WriteBatch {
    /// A batch's operations read in place: its entries and the bytes they point into, valid only inside
    /// ``withPacked(_:)``. Reading an operation this way copies and retains nothing.
    struct Packed {
        let entries: UnsafeBufferPointer<Entry>
        let bytes: UnsafeRawBufferPointer

        var count: Int { entries.count }

        @inline(__always) subscript(i: Int) -> Entry { entries[i] }

        /// Operation `i`'s key.
        @inline(__always) func key(_ i: Int) -> UnsafeRawBufferPointer {
            let e = entries[i]
            return UnsafeRawBufferPointer(rebasing: bytes[e.keyStart ..< e.keyStart + e.keyLength])
        }

        /// Operation `i`'s record body (``Entry/bodyStart`` ..< ``Entry/bodyEnd``).
        @inline(__always) func body(_ i: Int) -> UnsafeRawBufferPointer {
            let e = entries[i]
            return UnsafeRawBufferPointer(rebasing: bytes[e.bodyStart ..< e.bodyEnd])
        }

        /// Calls `body` with each index term of operation `i`, in order: the index name's UTF-8 bytes and the term.
        /// O(terms' bytes); the batch wrote them, so they always parse.
        @inline(__always)
        func forEachTerm(_ i: Int, _ body: (_ index: UnsafeRawBufferPointer, _ term: UnsafeRawBufferPointer) -> Void) {
            let e = entries[i]
            guard e.termCount > 0 else { return }
            var r = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[e.termsStart ..< e.bodyEnd]))
            for _ in 0 ..< e.termCount {
                guard let nl = r.length(max: Int.max), let name = r.slice(nl),
                      let tl = r.length(max: Int.max), let term = r.slice(tl)
                else { preconditionFailure("WriteBatch: a term the batch wrote does not parse") }
                body(name, term)
            }
        }

        /// Operation `i`'s keyspace name as this operation spelled it (its record's bytes; ``keyspaceNames`` holds
        /// one spelling per name, names being equal as strings are).
        func keyspaceSpelling(_ i: Int) -> String {
            var r = ByteReader(body(i))
            guard let length = r.length(max: Int.max), let name = r.slice(length) else {
                preconditionFailure("WriteBatch: a keyspace name the batch wrote does not parse")
            }
            return String(decoding: name, as: UTF8.self)
        }

        /// Operation `i`'s index terms, as arrays of their own.
        func terms(_ i: Int) -> [IndexTerm] {
            var terms: [IndexTerm] = []
            terms.reserveCapacity(entries[i].termCount)
            forEachTerm(i) { name, term in
                terms.append(IndexTerm(index: String(decoding: name, as: UTF8.self), term: Array(term)))
            }
            return terms
        }
    }

    /// Calls `body` with the operations read in place. O(1).
    @inline(__always)
    func withPacked<R>(_ body: (Packed) throws -> R) rethrows -> R {
        try entries.withUnsafeBufferPointer { entries in
            try storage.bytes.withUnsafeBytes { bytes in try body(Packed(entries: entries, bytes: bytes)) }
        }
    }

    /// The operations as arrays of their own (tests, and paths that are not hot). O(bytes).
    var operations: [Operation] {
        withPacked { ops in
            (0 ..< ops.count).map { i in
                let e = ops[i]
                return Operation(kind: e.kind, keyspace: ops.keyspaceSpelling(i), key: Array(ops.key(i)),
                                 value: Array(ops.bytes[e.valueStart ..< e.valueStart + e.valueLength]),
                                 terms: ops.terms(i))
            }
        }
    }

    /// Operation `i`'s index terms, as arrays of their own. O(terms' bytes).
    func terms(of i: Int) -> [IndexTerm] { withPacked { $0.terms(i) } }
}
