/// A record found in a snapshot, not read yet: where its value is and which commit wrote it.
///
/// A layer that keeps something derived from values (decoded entities, say) looks the key up once, compares
/// ``sequence`` with what it kept, and reads the value with ``Snapshot/value(of:)`` only when they differ.
/// Within one open engine, a key and a sequence name one value: every commit that writes the key gives it a
/// greater sequence, and compaction moves records with their sequences.
public struct RecordHandle: Sendable, Hashable {
    let location: RecordLocation
    /// The open engine the handle comes from (its core), so that another engine refuses it.
    let engine: ObjectIdentifier

    /// The sequence number of the commit that wrote the value (see ``Snapshot/sequence``).
    public var sequence: UInt64 { location.sequence }

    /// The value's length in bytes. - Complexity: O(1), no I/O.
    public var valueLength: Int { Int(location.valueLength) }
}

extension Snapshot {
    /// The record under `key`, without reading its value, or nil. - Complexity: as ``get(_:in:)``'s lookup (O(1)
    /// expected while the point index answers, else O(log n)), no I/O.
    /// - Throws: ``LucidError/Code/closed`` once the engine is closed (as ``get(_:in:)``).
    public func handle(forKey key: [UInt8], in keyspace: String) throws -> RecordHandle? {
        try core.checkOpen()
        guard let location = location(forKey: key, in: keyspace) else { return nil }
        return RecordHandle(location: location, engine: ObjectIdentifier(core))
    }

    /// The value of a record this snapshot found (``handle(forKey:in:)``); ``get(_:in:)`` is the two in one.
    /// - Complexity: one page read on a cache miss.
    /// - Throws: ``LucidError/Code/corruption`` when the page fails its checksum, ``LucidError/Code/io``, closed;
    ///   ``LucidError/Code/invalidArgument`` for a handle from another engine (or another opening of this store),
    ///   or whose segment this snapshot does not have (a handle from a snapshot older than a compaction that
    ///   removed its segment).
    public func value(of handle: RecordHandle) throws -> [UInt8] {
        try core.checkOpen()
        try check(handle)
        return try core.readValue(handle.location, file: state.segments[UInt64(handle.location.segment)])
    }

    /// The records under `keys` (``handle(forKey:in:)`` for each, in order), looked up together as
    /// ``values(forKeys:in:)`` looks them up. - Complexity: as ``values(forKeys:in:)``'s lookups, no I/O.
    /// - Throws: ``LucidError/Code/closed`` once the engine is closed.
    public func handles(forKeys keys: [[UInt8]], in keyspace: String) throws -> [RecordHandle?] {
        try core.checkOpen()
        let engine = ObjectIdentifier(core)
        return locations(forKeys: keys, in: keyspace) { location in
            location.map { RecordHandle(location: $0, engine: engine) }
        }
    }

    /// The values of records this snapshot found (``value(of:)`` for each, in order), read together as
    /// ``values(forKeys:in:)`` reads them. - Complexity: one page read per record whose page is not cached.
    /// - Throws: as ``value(of:)``: a foreign or outdated handle before any read; then read errors, for the first
    ///   record in order that fails.
    public func values(of handles: [RecordHandle]) throws -> [[UInt8]] {
        try core.checkOpen()
        for handle in handles { try check(handle) }
        return try readValues(handles.map(\.location)).map { $0! }   // nil only for a nil location
    }

    /// Refuses a handle from another engine or for a segment this snapshot does not have (see ``value(of:)``).
    private func check(_ handle: RecordHandle) throws {
        guard handle.engine == ObjectIdentifier(core) else {
            throw LucidError(code: .invalidArgument, message: "record handle from another engine")
        }
        guard state.segments[UInt64(handle.location.segment)] != nil else {
            throw LucidError(code: .invalidArgument,
                             message: "record handle for segment \(handle.location.segment), which this snapshot does not have")
        }
    }
}
