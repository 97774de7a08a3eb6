import Dispatch
import Foundation

/// The page reads of ``Snapshot/recordTable(in:range:reverse:limit:)``, spread over the processors when there are
/// enough of them.
///
/// The places arrive sorted by page. They are cut into runs at page boundaries, and each run is read by one task of
/// `DispatchQueue.concurrentPerform` (the calling thread taking part): each page is still read once, by the task
/// whose run holds it. Tasks share nothing they write but the output buffer, where each writes only the places of
/// its own records (a record's place is fixed by its rank before any page is read), and their own error slot.
///
/// What the threads buy: a large table's time goes to verifying and decompressing pages, copying values and the
/// kernel's first touch of the output buffer's memory, all of which run in parallel.
enum StorageOrderRead {
    /// Tables with fewer records than this are read on the calling thread: handing work to other threads costs
    /// some tens of microseconds, a few dozen page reads.
    static let minimumParallelRecords = 4096

    /// Runs per processor, so that a run of slow pages (misses, larger pages) does not leave the others idle.
    private static let runsPerProcessor = 4

    private static let processors = ProcessInfo.processInfo.activeProcessorCount

    /// Calls `read(run)` for consecutive runs of `places` that together cover it, each holding every place of each
    /// page it touches. Concurrently when `places` holds at least ``minimumParallelRecords`` and the machine has
    /// more than one processor; in order on this thread otherwise.
    /// - Throws: the error of the first run in page order that failed (the error a serial read would have met
    ///   first); the other runs may have been read in full or in part.
    static func forEachRun(of places: [StoragePlace],
                           _ read: (ArraySlice<StoragePlace>) throws -> Void) throws {
        guard places.count >= minimumParallelRecords, processors > 1 else {
            try read(places[...])
            return
        }
        let bounds = runBounds(places, runs: processors * runsPerProcessor)
        var errors = [(any Error)?](repeating: nil, count: bounds.count - 1)
        try withoutActuallyEscaping(read) { read in
            errors.withUnsafeMutableBufferPointer { slots in
                let tasks = Tasks(places: places, bounds: bounds, errors: slots, read: read)
                DispatchQueue.concurrentPerform(iterations: bounds.count - 1) { tasks.run($0) }
            }
            if let error = errors.lazy.compactMap({ $0 }).first { throw error }
        }
    }

    /// Where the runs start, and `places.count` last: about `runs` runs of equal length, each start moved forward
    /// to the first place of a page, so that no page is split between runs. Strictly increasing when `places` is
    /// not empty (`[0, 0]` when it is). O(count) at most: each start walks at most one page's places.
    static func runBounds(_ places: [StoragePlace], runs: Int) -> [Int] {
        var bounds = [0]
        let runs = max(1, min(runs, places.count))
        for run in 1..<max(runs, 1) {
            var start = max(run * places.count / runs, bounds[bounds.count - 1] + 1)
            while start < places.count && places[start].page == places[start - 1].page { start += 1 }
            if start >= places.count { break }
            bounds.append(start)
        }
        bounds.append(places.count)
        return bounds
    }

    /// One read's tasks. `@unchecked Sendable`: task `i` reads the places of run `i` (which no task writes) and
    /// writes `errors[i]` only, plus what `read` writes for its own run's records (see the type's comment); none of
    /// it outlives ``forEachRun(of:_:)``.
    private struct Tasks: @unchecked Sendable {
        let places: [StoragePlace]
        let bounds: [Int]
        let errors: UnsafeMutableBufferPointer<(any Error)?>
        let read: (ArraySlice<StoragePlace>) throws -> Void

        func run(_ i: Int) {
            do { try read(places[bounds[i]..<bounds[i + 1]]) } catch { errors[i] = error }
        }
    }
}
