/// A term a record is indexed under in a named secondary index of its keyspace.
///
/// Terms are logged with the record, in the same atomic batch, so recovery rebuilds indexes without user code.
/// A record may carry several terms for one index (one per element of an array property) or none.
public struct IndexTerm: Sendable, Hashable {
    /// The index name (1 ... 255 UTF-8 bytes).
    public var index: String
    /// The encoded, byte-comparable term (at most 1024 bytes).
    public var term: [UInt8]

    /// A term `term` in index `index`.
    public init(index: String, term: [UInt8]) {
        self.index = index
        self.term = term
    }

    /// A term holding `value`'s byte-comparable encoding (see ``IndexValue``).
    public init(index: String, value: IndexValue) {
        self.index = index
        self.term = value.encoded
    }

    /// The typed value, when ``term`` is a valid ``IndexValue`` encoding (every committed term is).
    public var value: IndexValue? {
        guard let (value, length) = IndexValue.decode(term[...]), length == term.count else { return nil }
        return value
    }
}

/// An atomic group of puts and deletes, possibly across keyspaces.
///
/// Either every operation of a committed batch is visible (to readers, and after any crash) or none is.
/// Operations apply in order: a later put of the same key wins. Limits (checked at commit, which throws
/// ``LucidError/Code/invalidArgument``): keyspace names 1 ... 255 UTF-8 bytes, keys at most 1024 bytes,
/// values at most 4 MiB, at most 4096 index terms per record, at most 512 MiB of records per batch.
public struct WriteBatch: Sendable {
    enum Kind: UInt8, Sendable { case put = 1, delete = 2 }

    struct Operation: Sendable {
        var kind: Kind
        var keyspace: String
        var key: [UInt8]
        var value: [UInt8]
        var terms: [IndexTerm]
    }

    private(set) var operations: [Operation] = []
    /// Approximate encoded size, for group-commit sizing.
    private(set) var approximateBytes = 0

    /// An empty batch.
    public init() {}

    /// Number of operations.
    public var count: Int { operations.count }
    /// True when the batch has no operation.
    public var isEmpty: Bool { operations.isEmpty }

    /// Stores `value` under `key` in `keyspace`, replacing any previous value and index terms.
    public mutating func put(_ value: [UInt8], forKey key: [UInt8], in keyspace: String,
                             indexTerms: [IndexTerm] = []) {
        operations.append(Operation(kind: .put, keyspace: keyspace, key: key, value: value, terms: indexTerms))
        approximateBytes += 16 + keyspace.utf8.count + key.count + value.count
            + indexTerms.reduce(0) { $0 + 4 + $1.index.utf8.count + $1.term.count }
    }

    /// Removes `key` from `keyspace` (and its index terms). Removing a missing key is not an error.
    public mutating func delete(_ key: [UInt8], in keyspace: String) {
        operations.append(Operation(kind: .delete, keyspace: keyspace, key: key, value: [], terms: []))
        approximateBytes += 16 + keyspace.utf8.count + key.count
    }

    /// Checks every limit; throws ``LucidError/Code/invalidArgument`` naming the first operation that breaks one.
    func validate() throws {
        guard approximateBytes <= Format.maxBatchBytes else {
            throw LucidError.invalidArgument("batch of about \(approximateBytes) bytes exceeds \(Format.maxBatchBytes)")
        }
        for (i, op) in operations.enumerated() {
            let ks = op.keyspace.utf8.count
            guard ks >= 1 && ks <= Format.maxKeyspaceNameLength else {
                throw LucidError.invalidArgument("operation \(i): keyspace name must be 1...255 UTF-8 bytes")
            }
            guard op.key.count <= Format.maxKeyLength else {
                throw LucidError.invalidArgument("operation \(i): key of \(op.key.count) bytes exceeds \(Format.maxKeyLength)")
            }
            guard op.value.count <= Format.maxValueLength else {
                throw LucidError.invalidArgument("operation \(i): value of \(op.value.count) bytes exceeds \(Format.maxValueLength)")
            }
            guard RecordCodec.encodedSize(op, seqDelta: UInt64.max) <= Format.maxRawPageLength else {
                throw LucidError.invalidArgument("operation \(i): the record with its index terms exceeds \(Format.maxRawPageLength) bytes")
            }
            guard op.terms.count <= Format.maxIndexTermsPerRecord else {
                throw LucidError.invalidArgument("operation \(i): more than \(Format.maxIndexTermsPerRecord) index terms")
            }
            for term in op.terms {
                let n = term.index.utf8.count
                guard n >= 1 && n <= Format.maxIndexNameLength else {
                    throw LucidError.invalidArgument("operation \(i): index name must be 1...255 UTF-8 bytes")
                }
                guard term.term.count <= Format.maxIndexTermLength else {
                    throw LucidError.invalidArgument("operation \(i): index term exceeds \(Format.maxIndexTermLength) bytes")
                }
                // Index entries are `term ‖ primary key`; only a self-delimiting (IndexValue) term keeps them ordered.
                guard IndexValue.isValidEncoding(term.term) else {
                    throw LucidError.invalidArgument("operation \(i): index term is not an IndexValue encoding")
                }
            }
        }
    }
}
