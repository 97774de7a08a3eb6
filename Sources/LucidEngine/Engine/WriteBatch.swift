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
///
/// A batch copies what it is given into one buffer of its own, laid out as the log stores records
/// (docs/FORMAT.md, "record"), so the writer encodes a record with one copy and reads no operation's arrays:
/// `put` costs O(key + value + terms) bytes copied and no allocation but the buffer's growth.
public struct WriteBatch: Sendable {
    enum Kind: UInt8, Sendable { case put = 1, delete = 2 }

    /// One operation held in arrays of its own: what compaction, the fuzzing support and tests build to encode a
    /// record outside a batch. A batch stores its operations packed instead (``Entry``).
    struct Operation: Sendable {
        var kind: Kind
        var keyspace: String
        var key: [UInt8]
        var value: [UInt8]
        var terms: [IndexTerm]
    }

    /// Where operation `i`'s record body lies in ``storage``. Every field is a plain integer, so reading entries retains
    /// and releases nothing (an operation of arrays retained four or more of them on each copy, and the writer,
    /// which reads what another thread wrote, paid a cache miss for each).
    struct Entry: Sendable {
        var kind: Kind
        /// The keyspace's position in ``keyspaceNames``.
        var keyspace: Int
        /// The record's body: from the keyspace name's length to the end of its terms (``RecordCodec``: the
        /// record but its kind and sequence delta).
        var bodyStart: Int
        var bodyEnd: Int
        var keyStart: Int
        var keyLength: Int
        var valueStart: Int
        var valueLength: Int
        /// Number of index terms, and where the first begins (after the count).
        var termCount: Int
        var termsStart: Int

        var bodyLength: Int { bodyEnd - bodyStart }
    }

    /// The operations' record bodies, one after another.
    private(set) var storage = ByteWriter()
    /// The operations, in order.
    private(set) var entries: [Entry] = []
    /// The keyspaces the operations name, each once, in order of first appearance.
    private(set) var keyspaceNames: [String] = []
    /// Approximate encoded size, for group-commit sizing.
    private(set) var approximateBytes = 0
    /// The first operation that breaks a limit and what it breaks, found as it is added; ``validate()`` throws it.
    private var violation: (operation: Int, reason: String)?
    /// The position in ``keyspaceNames`` of the last operation's keyspace: consecutive operations usually share one.
    private var lastKeyspace = -1

    /// An empty batch.
    public init() {}

    /// Number of operations.
    public var count: Int { entries.count }
    /// True when the batch has no operation.
    public var isEmpty: Bool { entries.isEmpty }

    /// Stores `value` under `key` in `keyspace`, replacing any previous value and index terms.
    ///
    /// Copies the bytes into the batch: O(key + value + terms).
    public mutating func put(_ value: [UInt8], forKey key: [UInt8], in keyspace: String,
                             indexTerms: [IndexTerm] = []) {
        append(.put, keyspace: keyspace, key: key, value: value, terms: indexTerms)
        approximateBytes += 16 + keyspace.utf8.count + key.count + value.count
            + indexTerms.reduce(0) { $0 + 4 + $1.index.utf8.count + $1.term.count }
    }

    /// Removes `key` from `keyspace` (and its index terms). Removing a missing key is not an error.
    public mutating func delete(_ key: [UInt8], in keyspace: String) {
        append(.delete, keyspace: keyspace, key: key, value: [], terms: [])
        approximateBytes += 16 + keyspace.utf8.count + key.count
    }

    /// Appends an operation built outside a batch (compaction's and the tests' ``Operation``).
    mutating func append(_ op: Operation) {
        switch op.kind {
        case .put: put(op.value, forKey: op.key, in: op.keyspace, indexTerms: op.terms)
        case .delete: delete(op.key, in: op.keyspace)
        }
    }

    /// Checks every limit; throws ``LucidError/Code/invalidArgument`` naming the first operation that breaks one.
    func validate() throws {
        guard approximateBytes <= Format.maxBatchBytes else {
            throw LucidError.invalidArgument("batch of about \(approximateBytes) bytes exceeds \(Format.maxBatchBytes)")
        }
        if let violation { throw LucidError.invalidArgument("operation \(violation.operation): \(violation.reason)") }
    }

    private mutating func append(_ kind: Kind, keyspace: String, key: [UInt8], value: [UInt8], terms: [IndexTerm]) {
        let space = lastKeyspace >= 0 && keyspaceNames[lastKeyspace] == keyspace ? lastKeyspace
            : keyspaceIndex(of: keyspace)
        lastKeyspace = space
        // Room for the whole body at once (a small batch would otherwise grow its buffer several times for one
        // record), growing geometrically (repeated exact reservations would copy quadratically).
        let bodySize = RecordCodec.bodySize(keyspace: keyspace, key: key, value: value, terms: terms)
        let needed = storage.count + bodySize
        if needed > storage.bytes.capacity { storage.bytes.reserveCapacity(max(needed, 2 * storage.bytes.capacity)) }
        let bodyStart = storage.count
        let at = RecordCodec.encodeBody(keyspace: keyspace, key: key, value: value, terms: terms, into: &storage)
        let entry = Entry(kind: kind, keyspace: space, bodyStart: bodyStart, bodyEnd: storage.count, keyStart: at.key,
                          keyLength: key.count, valueStart: at.value, valueLength: value.count,
                          termCount: terms.count, termsStart: at.terms)
        if violation == nil {
            violation = Self.violation(keyspace: keyspace, key: key, value: value, terms: terms,
                                       recordLength: RecordCodec.encodedSize(entry, seqDelta: UInt64.max))
                .map { (entries.count, $0) }
        }
        entries.append(entry)
    }

    /// The position of `keyspace` in ``keyspaceNames``, appending it when the batch does not name it yet. O(names).
    private mutating func keyspaceIndex(of keyspace: String) -> Int {
        if let known = keyspaceNames.firstIndex(of: keyspace) { return known }
        keyspaceNames.append(keyspace)
        return keyspaceNames.count - 1
    }

    /// What makes an operation break a limit, or nil.
    private static func violation(keyspace: String, key: [UInt8], value: [UInt8], terms: [IndexTerm],
                                  recordLength: Int) -> String? {
        let ks = keyspace.utf8.count
        guard ks >= 1 && ks <= Format.maxKeyspaceNameLength else { return "keyspace name must be 1...255 UTF-8 bytes" }
        guard key.count <= Format.maxKeyLength else {
            return "key of \(key.count) bytes exceeds \(Format.maxKeyLength)"
        }
        guard value.count <= Format.maxValueLength else {
            return "value of \(value.count) bytes exceeds \(Format.maxValueLength)"
        }
        guard recordLength <= Format.maxRawPageLength else {
            return "the record with its index terms exceeds \(Format.maxRawPageLength) bytes"
        }
        guard terms.count <= Format.maxIndexTermsPerRecord else {
            return "more than \(Format.maxIndexTermsPerRecord) index terms"
        }
        for term in terms {
            let n = term.index.utf8.count
            guard n >= 1 && n <= Format.maxIndexNameLength else { return "index name must be 1...255 UTF-8 bytes" }
            guard term.term.count <= Format.maxIndexTermLength else {
                return "index term exceeds \(Format.maxIndexTermLength) bytes"
            }
            // Index entries are `term ‖ primary key`; only a self-delimiting (IndexValue) term keeps them ordered.
            guard IndexValue.isValidEncoding(term.term) else { return "index term is not an IndexValue encoding" }
        }
        return nil
    }
}

extension WriteBatch {
    /// The operations of `batches`, one after another, in one batch: their bytes copied once (O(bytes)), the
    /// entries moved by the bytes before them and their keyspaces named in the new batch's list.
    init(concatenating batches: [WriteBatch]) {
        self.init()
        storage = ByteWriter(capacity: batches.reduce(0) { $0 + $1.storage.count })
        entries.reserveCapacity(batches.reduce(0) { $0 + $1.count })
        for batch in batches {
            let base = storage.count
            if violation == nil, let theirs = batch.violation { violation = (theirs.operation + entries.count, theirs.reason) }
            let spaces = batch.keyspaceNames.map { keyspaceIndex(of: $0) }
            batch.storage.bytes.withUnsafeBytes { storage.raw($0) }
            batch.entries.withUnsafeBufferPointer { moved in
                for var e in moved {
                    e.keyspace = spaces[e.keyspace]
                    e.bodyStart += base
                    e.bodyEnd += base
                    e.keyStart += base
                    e.valueStart += base
                    e.termsStart += base
                    entries.append(e)
                }
            }
            approximateBytes += batch.approximateBytes
        }
    }
}
