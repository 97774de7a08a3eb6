import Synchronization

/// Segments that compaction took out of the store while something still held them: a ``Snapshot`` taken before
/// the compaction (or a read in flight). Their files are unlinked, but their descriptors stay open and the file
/// system gives their space back only when the last holder lets go (engine-notes §9.8: long-lived snapshots pin
/// segments, the LMDB and bbolt caveat). The engine shows them in ``EngineStatistics`` and logs a warning once for
/// each segment still held ``EngineOptions/pinnedSegmentWarningAge`` after compaction removed it.
///
/// Each entry holds its segment weakly: once the last snapshot holding the segment is released, the file closes and
/// the entry is dropped at the next look. Cost: nothing on reads; one atomic load per commit group (``hasUnwarned``),
/// and a lock over the few entries only while some exist.
final class PinnedSegments: Sendable {
    private struct Entry {
        weak var file: SegmentFile?
        let id: UInt64
        let bytes: UInt64
        let retired: ContinuousClock.Instant
        var warned = false
    }

    /// What is pinned now (``summary(now:)``).
    struct Summary: Equatable {
        var count = 0
        var bytes: UInt64 = 0
        /// Since compaction removed the oldest segment still held; nil when none is.
        var oldestAge: Duration?
    }

    /// A segment held past the warning age (``overdue(after:now:)``), to be logged once.
    struct Overdue: Equatable {
        var id: UInt64
        var bytes: UInt64
        var age: Duration
    }

    private let entries = Mutex<[Entry]>([])
    /// Entries not yet warned about (released ones included until the next look): zero skips the lock.
    private let unwarned = Atomic<Int>(0)

    /// Whether some entry may still need a warning: one relaxed atomic load.
    var hasUnwarned: Bool { unwarned.load(ordering: .relaxed) > 0 }

    /// Records `files` (each with its size in bytes) as removed from the store at `now`. Call it once the state
    /// without them is published, with the files still referenced by the caller: an entry whose segment is already
    /// released is dropped at the next look. O(files).
    func retire(_ files: [(file: SegmentFile, bytes: UInt64)], at now: ContinuousClock.Instant) {
        guard !files.isEmpty else { return }
        entries.withLock { entries in
            for (file, bytes) in files { entries.append(Entry(file: file, id: file.id, bytes: bytes, retired: now)) }
            // Under the lock, as every change of the count is: exact whenever the lock is free.
            unwarned.add(files.count, ordering: .relaxed)
        }
    }

    /// The segments still held at `now`, dropping the entries of those released. O(entries).
    func summary(now: ContinuousClock.Instant) -> Summary {
        entries.withLock { entries in
            prune(&entries)
            var summary = Summary()
            for entry in entries {
                summary.count += 1
                summary.bytes += entry.bytes
                let age = now - entry.retired
                summary.oldestAge = Swift.max(summary.oldestAge ?? age, age)
            }
            return summary
        }
    }

    /// The segments held for at least `age` at `now` that no earlier call returned: each is returned once, for one
    /// warning. Drops the entries of released segments. O(entries).
    func overdue(after age: Duration, now: ContinuousClock.Instant) -> [Overdue] {
        entries.withLock { entries in
            prune(&entries)
            var found: [Overdue] = []
            for i in entries.indices where !entries[i].warned && now - entries[i].retired >= age {
                entries[i].warned = true
                unwarned.subtract(1, ordering: .relaxed)
                found.append(Overdue(id: entries[i].id, bytes: entries[i].bytes, age: now - entries[i].retired))
            }
            return found
        }
    }

    /// Removes the entries whose segment was released, keeping ``unwarned`` in step. (A weak load here can, rarely,
    /// take the last reference to a segment being released: its file then closes on this thread, under the lock.)
    private func prune(_ entries: inout [Entry]) {
        var released = 0
        entries.removeAll { entry in
            guard entry.file == nil else { return false }
            if !entry.warned { released += 1 }
            return true
        }
        if released > 0 { unwarned.subtract(released, ordering: .relaxed) }
    }
}

extension EngineCore {
    /// Logs one warning for each pinned segment that reached ``EngineOptions/pinnedSegmentWarningAge`` since the
    /// last call. The writer calls it before a commit group while some segment may still need one, and
    /// ``Engine/statistics`` on every read. O(pinned segments).
    func warnAboutPinnedSegments(now: ContinuousClock.Instant) {
        for segment in pinned.overdue(after: options.pinnedSegmentWarningAge, now: now) {
            options.logger.warning(
                "a snapshot still holds a segment that compaction removed: its disk space is given back only once every snapshot taken before the compaction is released",
                metadata: ["segment": "\(Format.segmentFileName(segment.id))", "bytes": "\(segment.bytes)",
                           "removed": "\(segment.age) ago"])
        }
    }
}
