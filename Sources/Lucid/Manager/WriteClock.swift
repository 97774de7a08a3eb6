#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Orders writes per identifier: each applied write records its timestamp; a write whose timestamp is older
/// than the one recorded for its identifier is stale and skipped.
///
/// Timestamps are wall-clock nanoseconds, made strictly increasing within the process, so they stay comparable
/// across restarts (the original used a boot-relative clock). The record of timestamps is bounded: records go
/// into a current generation; once it holds ``capacity`` halves it becomes the previous one and the generation
/// before it is forgotten, its newest timestamp becoming a floor: a write older than the floor for a forgotten
/// identifier is treated as stale (never overwrite something newer). Forgetting costs no rehashing, and the
/// clock holds between `capacity` and twice `capacity` halves.
///
/// Identifiers are recorded by their halves, as ``DualHashDictionary`` keys them (a record found by the remote
/// half first, else by the local half unless it carries another remote half; a write with both halves joins
/// what was recorded under each, the halves recorded first kept), but in plain dictionaries keyed by the halves'
/// bytes (a local value's UTF-8, as identifiers compare them: `"e\u{301}"` and `"\u{e9}"` are two ids), so that
/// the clock costs a few hash lookups per write even where the manager's entity type is not specialized. A write
/// records both halves it knows in the current generation, so a record found there is the newest for its
/// identifier, and one found only in the previous generation is the newest too.
///
/// What forgetting loses besides timestamps: which halves go together. After the generation that linked an
/// entity's local and remote halves is forgotten, a write naming it by one half only is judged by what is
/// recorded under that half (or by the floor), so a write by the other half alone may pass it. Writes that name
/// an entity by a half its record holds (its remote value, with or without the local one) are never admitted out
/// of order (a forgotten one's may be refused: it is judged against the floor).
struct WriteClock {
    /// What is recorded under a half: the last timestamp and the other half known with it.
    private struct Stamp {
        var time: UInt64
        var other: ByteKey?
    }

    /// The records of one generation.
    private struct Generation {
        /// By remote half (the identifier's storage key, `r` + remote bytes): timestamp and local value (UTF-8).
        var byRemote: [ByteKey: Stamp] = [:]
        /// By local value (UTF-8): timestamp and the storage key of the remote half known with it.
        var byLocal: [ByteKey: Stamp] = [:]
        /// The newest timestamp recorded in this generation.
        var newest: UInt64 = 0

        var count: Int { byRemote.count + byLocal.count }
    }

    let capacity: Int
    private var current = Generation()
    private var previous = Generation()
    private var issued: UInt64 = 0
    private var floor: UInt64 = 0

    /// A clock remembering about `capacity` identifiers (default 100,000).
    init(capacity: Int = 100_000) { self.capacity = max(1, capacity) }

    /// A strictly increasing wall-clock timestamp in nanoseconds.
    mutating func now() -> UInt64 {
        issued = max(issued + 1, Self.wallClock())
        return issued
    }

    static func wallClock() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Number of halves recorded, over both generations (an identifier with both counts twice; one written in
    /// both generations counts in each).
    var recordedCount: Int { current.count + previous.count }

    /// Whether a write stamped `timestamp` to `identifier` is current; if so, records it. O(1) hash lookups.
    mutating func admit(_ identifier: some EntityIdentifierProtocol, at timestamp: UInt64) -> Bool {
        let halves = IdentifierHalves(storageKey: identifier.storageKey, localValue: identifier.localValue)
        let remote = halves.remote
        let local = halves.local
        // The record of this identifier: by its remote half, else by its local half unless that one was written
        // with another remote half (another entity).
        var previousTime: UInt64?
        var knownLocal = local
        var knownRemote = remote
        if let remote, let stamp = current.byRemote[remote] ?? previous.byRemote[remote] {
            previousTime = stamp.time
            knownLocal = stamp.other ?? local   // the halves recorded first are kept (`absorbing`)
        } else if let local, let stamp = current.byLocal[local] ?? previous.byLocal[local],
                  remote == nil || stamp.other == nil || stamp.other == remote {
            previousTime = stamp.time
            knownRemote = stamp.other ?? remote
        }
        if let previousTime {
            if timestamp < previousTime { return false }
        } else if timestamp < floor {
            return false
        }
        if let knownRemote { current.byRemote[knownRemote] = Stamp(time: timestamp, other: knownLocal) }
        if let knownLocal { current.byLocal[knownLocal] = Stamp(time: timestamp, other: knownRemote) }
        current.newest = max(current.newest, timestamp)
        if current.count >= capacity { rotate() }
        return true
    }

    /// Forgets the previous generation (its newest timestamp becomes the floor) and starts a new current one,
    /// sized as the last one grew. O(1) but for freeing the forgotten records.
    private mutating func rotate() {
        floor = max(floor, previous.newest)
        previous = current
        current = Generation()
        current.byRemote.reserveCapacity(previous.byRemote.count)
        current.byLocal.reserveCapacity(previous.byLocal.count)
    }
}
