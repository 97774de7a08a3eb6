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
/// ``capacity`` identifiers the older half is forgotten and its newest timestamp becomes a floor; a write
/// older than the floor for a forgotten identifier is treated as stale (never overwrite something newer).
struct WriteClock<Key: DualHashable> {
    static var capacity: Int { 100_000 }
    private var last = DualHashDictionary<Key, UInt64>()
    private var issued: UInt64 = 0
    private var floor: UInt64 = 0

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

    /// Whether a write stamped `timestamp` to `key` is current; if so, records it.
    mutating func admit(_ key: Key, at timestamp: UInt64) -> Bool {
        if let previous = last[key] {
            if timestamp < previous { return false }
        } else if timestamp < floor {
            return false
        }
        last[key] = timestamp
        if last.count > Self.capacity { prune() }
        return true
    }

    private mutating func prune() {
        let stamps = last.map(\.value).sorted()
        let cut = stamps[stamps.count / 2]
        floor = max(floor, cut)
        var kept = DualHashDictionary<Key, UInt64>()
        for (key, stamp) in last where stamp > cut { kept[key] = stamp }
        last = kept
    }
}
