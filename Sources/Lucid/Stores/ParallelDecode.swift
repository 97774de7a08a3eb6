import Dispatch
import Foundation

/// Decoding the entities of a large result on several threads.
///
/// An unfiltered full scan (`all()`, a query whose only condition is an order or a window) reads every record of
/// the keyspace in one pass over the pages and then decodes each one (and a fetch by key that reads as many
/// records decodes them the same way, `DiskStore.fetch`): on a million records the decoding is most
/// of the time, and each record decodes independently of the others (``LocalEntity/decodeRecord(_:)`` is a pure
/// function of the bytes). So a large result is cut into contiguous chunks, at least one per processor, decoded
/// by `DispatchQueue.concurrentPerform` (the calling thread taking part) straight into the result's storage, and
/// comes back in the same order, with the same error, as a loop would give.
enum ParallelDecode {
    /// Results with fewer records than this are decoded on the calling thread: handing work to other threads
    /// costs some tens of microseconds.
    static let minimumCount = 4096

    /// Records per chunk at most, so that threads that finish early take more chunks.
    static let chunkSize = 16_384

    /// Records per chunk at least, when a result is cut into one chunk per processor.
    static let minimumChunk = 1_024

    private static let processors = ProcessInfo.processInfo.activeProcessorCount

    /// Whether ``compactMap(count:_:)`` decodes `count` records on several threads. O(1).
    static func runsInParallel(count: Int) -> Bool { count >= minimumCount && processors > 1 }

    /// The non-nil `transform(i)` for `i` in `0 ..< count`, in order: `compactMap` over the indices, on several
    /// threads when `count` is large. `transform` is called at most once per index, from any thread, at the same
    /// time as other calls: it must only read what it shares. When some call throws, the error is that of the
    /// smallest index that throws, as a loop would report, and every entity decoded is released.
    ///
    /// - Complexity: O(count) calls of `transform`, spread over the processors; the result's storage is allocated
    ///   for `count` entities.
    static func compactMap<E: Sendable>(count: Int,
                                        _ transform: @Sendable (Int) throws(StoreError) -> E?) throws(StoreError) -> [E] {
        try withoutActuallyEscaping(transform) { (transform) throws(StoreError) -> [E] in
            try compactMap(count: count, perChunk: { () throws(StoreError) in transform })
        }
    }

    /// ``compactMap(count:_:)`` with a transform made for each chunk by `makeTransform`, called once per chunk on
    /// the thread that decodes it: for a transform holding state that must not be shared between threads (a
    /// filter's compiled regexes). - Throws: the error of `makeTransform` or `transform` for the smallest index,
    /// as a loop calling `makeTransform` once would report (`makeTransform` is not called for a count of 0). A
    /// result that kept few records still holds the room of `count`.
    static func compactMap<E: Sendable>(
        count: Int, perChunk makeTransform: @Sendable () throws(StoreError) -> (Int) throws(StoreError) -> E?
    ) throws(StoreError) -> [E] {
        guard runsInParallel(count: count) else {
            var out: [E] = []
            guard count > 0 else { return out }
            let transform = try makeTransform()
            out.reserveCapacity(count)
            for i in 0 ..< count {
                if let entity = try transform(i) { out.append(entity) }
            }
            return out
        }
        // One chunk per processor at least, of chunkSize records at most; chunk c is start(c) ..< start(c + 1).
        let chunks = Swift.max((count + chunkSize - 1) / chunkSize, Swift.min(processors, count / minimumChunk))
        @Sendable func start(_ c: Int) -> Int { c * count / chunks }
        var kept = [Int](repeating: 0, count: chunks)
        var failures = [StoreError?](repeating: nil, count: chunks)
        var failure: StoreError?
        let result = withoutActuallyEscaping(makeTransform) { makeTransform in
            [E](unsafeUninitializedCapacity: count) { buffer, initialized in
                kept.withUnsafeMutableBufferPointer { kept in
                    failures.withUnsafeMutableBufferPointer { failures in
                        let work = Work(base: buffer.baseAddress!, kept: kept, failures: failures,
                                        makeTransform: makeTransform)
                        DispatchQueue.concurrentPerform(iterations: chunks) { c in
                            work.run(chunk: c, from: start(c), to: start(c + 1))
                        }
                    }
                }
                if let first = failures.firstIndex(where: { $0 != nil }) {
                    for c in 0 ..< chunks { (buffer.baseAddress! + start(c)).deinitialize(count: kept[c]) }
                    failure = failures[first]
                    initialized = 0
                    return
                }
                // Close the gaps the chunks' filtered-out records left (regions may overlap: a move handles it).
                var end = kept[0]
                for c in 1 ..< chunks where kept[c] > 0 {
                    (buffer.baseAddress! + end).moveInitialize(from: buffer.baseAddress! + start(c), count: kept[c])
                    end += kept[c]
                }
                initialized = end
            }
        }
        if let failure { throw failure }
        return result
    }

    /// One scan's chunks and where their results go. `@unchecked Sendable` for the pointers only: each chunk
    /// writes only its own range of the result and its own `kept` and `failures` slots, and nothing outlives the
    /// call (`transform` is `@Sendable`).
    private struct Work<E: Sendable>: @unchecked Sendable {
        let base: UnsafeMutablePointer<E>
        let kept: UnsafeMutableBufferPointer<Int>
        let failures: UnsafeMutableBufferPointer<StoreError?>
        let makeTransform: @Sendable () throws(StoreError) -> (Int) throws(StoreError) -> E?

        /// Decodes `start ..< end` into the result from `start` on, the kept entities first; stops at an error.
        func run(chunk c: Int, from start: Int, to end: Int) {
            var n = 0
            defer { kept[c] = n }
            let transform: (Int) throws(StoreError) -> E?
            do throws(StoreError) { transform = try makeTransform() } catch {
                failures[c] = error
                return
            }
            for i in start ..< end {
                do throws(StoreError) {
                    if let entity = try transform(i) {
                        (base + start + n).initialize(to: entity)
                        n += 1
                    }
                } catch {
                    failures[c] = error
                    break
                }
            }
        }
    }
}
