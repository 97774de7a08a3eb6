#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Orders writes per identifier: each applied write records its timestamp; a write whose timestamp is older
/// than the one recorded for its identifier is stale and skipped.
///
/// Timestamps are wall-clock nanoseconds, made strictly increasing within the process, so they stay comparable
/// across restarts (the original used a boot-relative clock). The record of timestamps is bounded: past
/// ``capacity`` identifiers about the older half is forgotten and the newest timestamp forgotten becomes a floor;
/// a write older than the floor for a forgotten identifier is treated as stale (never overwrite something newer).
///
/// Identifiers are recorded by their halves, as ``DualHashDictionary`` keys them (a record found by the remote
/// half first, else by the local half unless it carries another remote half; a write with both halves joins
/// what was recorded under each, the halves recorded first kept), but in two plain dictionaries keyed by the
/// halves' bytes, so that the clock costs two hash lookups per write even where the manager's entity type is not
/// specialized.
struct WriteClock {
    /// What is recorded under a half: the last timestamp and the other half known with it.
    private struct Stamp<Other: Hashable> {
        var time: UInt64
        var other: Other?
    }

    let capacity: Int
    /// By remote half (the identifier's storage key, `r` + remote bytes): timestamp and local value.
    private var byRemote: [[UInt8]: Stamp<String>] = [:]
    /// By local value: timestamp and the storage key of the remote half known with it.
    private var byLocal: [String: Stamp<[UInt8]>] = [:]
    private var issued: UInt64 = 0
    private var floor: UInt64 = 0

    /// A clock remembering about `capacity` identifiers (default 100,000).
    init(capacity: Int = 100_000) { self.capacity = capacity }

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

    /// Number of halves recorded (an identifier with both counts twice).
    var recordedCount: Int { byRemote.count + byLocal.count }

    /// Whether a write stamped `timestamp` to `identifier` is current; if so, records it.
    mutating func admit(_ identifier: some EntityIdentifierProtocol, at timestamp: UInt64) -> Bool {
        let storageKey = identifier.storageKey
        let remote = storageKey.first == 0x72 ? storageKey : nil
        let local = identifier.localValue
        // The record of this identifier: by its remote half, else by its local half unless that one was written
        // with another remote half (another entity).
        var previous: UInt64?
        var knownLocal = local
        var knownRemote = remote
        if let remote, let stamp = byRemote[remote] {
            previous = stamp.time
            knownLocal = stamp.other ?? local   // the halves recorded first are kept (`absorbing`)
        } else if let local, let stamp = byLocal[local], remote == nil || stamp.other == nil || stamp.other == remote {
            previous = stamp.time
            knownRemote = stamp.other ?? remote
        }
        if let previous {
            if timestamp < previous { return false }
        } else if timestamp < floor {
            return false
        }
        if let knownRemote { byRemote[knownRemote] = Stamp(time: timestamp, other: knownLocal) }
        if let knownLocal { byLocal[knownLocal] = Stamp(time: timestamp, other: knownRemote) }
        if recordedCount > 2 * capacity { prune() }
        return true
    }

    /// Forgets about the older half of the records: the median of a sample of about 1,024 timestamps is the cut
    /// (O(n), not a sort of every timestamp), and becomes the floor.
    private mutating func prune() {
        let step = max(1, recordedCount / 1024)
        var sample: [UInt64] = []
        sample.reserveCapacity(recordedCount / step + 1)
        var i = 0
        for stamp in byRemote.values { if i % step == 0 { sample.append(stamp.time) }; i += 1 }
        for stamp in byLocal.values { if i % step == 0 { sample.append(stamp.time) }; i += 1 }
        let cut = sample.sorted()[sample.count / 2]
        floor = max(floor, cut)
        byRemote = byRemote.filter { $0.value.time > cut }
        byLocal = byLocal.filter { $0.value.time > cut }
    }
}
