/// How recent a page cache shard's remembered miss must be for a second miss to admit the page
/// (``PageCache/afterMiss(_:)``), adapted to what admissions have been worth lately.
///
/// 2Q's rule admits a page missed twice within the last `window` first misses. Under reads whose pages come back
/// (a working set, a skewed distribution) each admission pays for itself many times over; under uniformly random
/// reads of data larger than the cache it cannot: the page admitted is no likelier to be read again than the page
/// it evicts, and admitting it costs a whole-page decode, an allocation and a cold buffer freed. Measured at 1M
/// records with a 64 MiB cache, random gets ran 15% faster with no admissions than with 2Q's fixed window, and a
/// 1 MiB cache beat a 64 MiB one. The data layer's entity cache adapts its filter of missed keys the same way.
///
/// So the window follows two counts, ARC-style:
/// - a **benefit** is the first hit on a page admitted among the last ``maximum`` admissions;
/// - a **regret** is a miss on a page evicted lately, after it had been admitted or read again (``EvictedKeys``
///   keeps about the last `2 × maximum`): a read that the cache would have served, had it not admitted something
///   else.
///
/// With reads uniformly random the two come at about the same rate; with a working set, benefits outnumber regrets
/// by far. A benefit widens the window by ``step`` and a regret narrows it by twice that (an admission must more than
/// break even: it costs a decode), between ``minimum`` and ``maximum``. At the minimum a few pages are still
/// admitted, so a working set that appears later is seen and widens it again. An eviction counts whatever caused it
/// (a point read's admission, the writer's newly written pages, a scan's pages): a phase of heavy writes narrows
/// the window too, which delays a working set's return by a few dozen admissions.
///
/// - Complexity: O(1) per event; no allocation.
package struct AdmissionWindow {
    /// The widest window: every remembered key counts (the ghost list's capacity).
    package let maximum: Int
    /// The narrowest window.
    package let minimum: Int
    /// How far one benefit widens the window (a regret narrows it twice as far).
    package let step: Int
    /// The current window, in remembered first misses.
    package private(set) var keys: Int
    /// Admissions so far (wrapping; 0 is skipped: it marks an entry that is not young).
    private var admissions: UInt32 = 0

    /// A window for a shard remembering up to `maximum` keys, starting at its widest (2Q's fixed rule).
    package init(maximum: Int) {
        self.maximum = max(1, maximum)
        minimum = max(1, self.maximum / 32)
        step = max(1, self.maximum / 64)
        keys = self.maximum
    }

    /// Counts an admission; returns the stamp its entry keeps to be recognized as young (never 0).
    package mutating func admit() -> UInt32 {
        admissions &+= 1
        if admissions == 0 { admissions = 1 }
        return admissions
    }

    /// Called on a hit of an entry whose stamp is `stamp`: on its first hit since its admission (a non-zero stamp),
    /// counts ``firstHit(stamp:)`` and clears the stamp, so that later hits count nothing.
    @inline(__always)
    package mutating func hit(stamp: inout UInt32) {
        guard stamp != 0 else { return }
        firstHit(stamp: stamp)
        stamp = 0
    }

    /// Called on the first hit of an entry stamped `stamp` (non-zero): a benefit when the entry is among the last
    /// ``maximum`` admissions.
    package mutating func firstHit(stamp: UInt32) {
        guard admissions &- stamp < UInt32(truncatingIfNeeded: maximum) else { return }
        keys = min(maximum, keys + step)
    }

    /// A regret: a miss on a page evicted lately after it had been admitted or read again.
    package mutating func regret() {
        keys = max(minimum, keys - 2 * step)
    }
}
