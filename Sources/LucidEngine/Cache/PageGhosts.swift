/// The keys of pages a cache shard dropped after a single read: a bounded FIFO, so that a page missed again while
/// it is remembered is admitted to the cache for good (2Q's "A1out" list). Keys only, no page bytes.
///
/// - Complexity: O(1) expected per operation; memory for `capacity` keys and their index.
package struct PageGhosts {
    private static let none = UInt64.max
    private var ring: [UInt64]
    private var next = 0
    private var index: PageSlotTable

    /// Remembers at most `capacity` keys (at least one), forgetting the oldest first.
    package init(capacity: Int) {
        ring = [UInt64](repeating: Self.none, count: max(1, capacity))
        index = PageSlotTable(capacity: max(1, capacity))
    }

    /// Whether `key` is remembered; forgets it when it is (its page is being admitted).
    package mutating func take(_ key: UInt64) -> Bool { take(key, within: ring.count) }

    /// Whether `key` is among the `window` keys remembered last; forgets it when it is remembered at all (a key
    /// remembered earlier than that is forgotten, and its caller remembers it anew).
    package mutating func take(_ key: UInt64, within window: Int) -> Bool {
        guard let slot = index.value(for: key) else { return false }
        index.remove(key)
        ring[slot] = Self.none
        // The key remembered last sits just before `next`: its age is 0.
        let age = next > slot ? next - slot - 1 : next + ring.count - slot - 1
        return age < window
    }

    /// Remembers `key`, forgetting the oldest key when full.
    package mutating func remember(_ key: UInt64) {
        guard index.value(for: key) == nil else { return }
        let oldest = ring[next]
        if oldest != Self.none { index.remove(oldest) }
        ring[next] = key
        index.set(next, for: key)
        next = next + 1 == ring.count ? 0 : next + 1
    }
}
