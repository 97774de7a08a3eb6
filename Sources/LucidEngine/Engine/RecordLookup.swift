/// A record looked up in the engine's current state without taking a snapshot (``Engine/lookUp(_:in:)``): the
/// state's sequence, the record's handle, and the segment that holds its value, kept open for the read that
/// follows (``Engine/value(of:)``) even if a compaction removes it meanwhile.
///
/// For a layer that reads one key at a time and keeps something derived from values (the data layer's decoded
/// entities): a ``Snapshot`` retains and releases every table of the engine's state, several times the cost of a
/// lookup that finds its answer in such a cache. Several reads that must agree with each other take a snapshot.
public struct RecordLookup: Sendable {
    /// The sequence of the last commit of the state the key was looked up in (what ``Snapshot/sequence`` of a
    /// snapshot taken at that moment gives).
    public let sequence: UInt64
    /// The record, or nil when the key has none in that state.
    public let handle: RecordHandle?
    /// The segment holding the record's value.
    let file: SegmentFile?
}

extension Engine {
    /// The sequence of the last commit readers see now (``Snapshot/sequence`` of a snapshot taken now).
    /// - Complexity: O(1), one hold of the state's read lock; no copy of the state.
    public var currentSequence: UInt64 { core.state.read { $0.lastSequence } }

    /// The record under `key` in `keyspace` in the current state, without reading its value and without a
    /// snapshot: ``Snapshot/handle(forKey:in:)`` of a snapshot taken now, cheaper (no copy of the state).
    /// - Complexity: O(1) expected for a key of at most 16 bytes (``EngineOptions/pointIndex``), else O(log n); no
    ///   I/O. - Throws: ``LucidError/Code/closed`` once the engine is closed.
    public func lookUp(_ key: [UInt8], in keyspace: String) throws -> RecordLookup {
        try core.checkOpen()
        return core.state.withReadAccess { s in core.recordLookup(core.location(forKey: key, in: keyspace, of: s), in: s) }
    }

    /// ``lookUp(_:in:)`` that first runs `meanwhile` with the current state's sequence (the lookup's
    /// ``RecordLookup/sequence``) while the processor loads the key's point-index slot, so that work of the
    /// caller's own that the lookup may make needless (a probe of a cache it keeps by sequence) overlaps the
    /// lookup's wait for memory, and both see the same state. When `meanwhile` returns false the key is not looked
    /// up and the result is nil.
    ///
    /// `meanwhile` runs under the engine state's read lock: it must be short, and must neither call the engine
    /// nor wait for anything that may.
    /// - Complexity: as ``lookUp(_:in:)``, plus `meanwhile`. - Throws: ``LucidError/Code/closed`` once the engine
    ///   is closed (before `meanwhile` runs).
    public func lookUp(_ key: [UInt8], in keyspace: String,
                       meanwhile: (_ sequence: UInt64) -> Bool) throws -> RecordLookup? {
        try core.checkOpen()
        return core.lookUp(key, in: keyspace, meanwhile: meanwhile)
    }

    /// The value of the record `lookup` found (nil when it found none), as ``Snapshot/value(of:)`` reads it.
    /// - Complexity: one page read on a cache miss. - Throws: as ``Snapshot/value(of:)``;
    ///   ``LucidError/Code/invalidArgument`` for a lookup of another engine.
    public func value(of lookup: RecordLookup) throws -> [UInt8]? {
        try core.checkOpen()
        guard let handle = lookup.handle else { return nil }
        guard handle.engine == ObjectIdentifier(core) else {
            throw LucidError(code: .invalidArgument, message: "record lookup from another engine")
        }
        return try core.readValue(handle.location, file: lookup.file)
    }
}
