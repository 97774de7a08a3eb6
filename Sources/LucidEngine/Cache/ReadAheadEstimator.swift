import Synchronization

/// How many payload bytes a page-cache miss should read along with the page header, learnt from the pages read.
///
/// A miss reads the header and a guess of the stored payload in one `pread`; a payload longer than the guess
/// costs a second `pread` (``SegmentFile/readPage(at:fileEnd:expectedStoredLength:)``). Guessing the page size
/// wastes most of the read on compressed stores: a 16 KiB page of JSON-like records is stored in 5–9 KiB, and
/// the kernel copies, and looks up, every byte asked for. The estimator tracks about the 90th percentile of the
/// stored lengths seen (a stochastic quantile estimate: up by 9 steps when a payload is longer, down by one when
/// it is shorter), so about one miss in ten takes the second read, and reads a margin past it.
///
/// Thread-safe and lock-free: concurrent updates may lose a step, which only slows the estimate down. Any value
/// it holds is a valid guess: it never leaves `minimum ... maximum`. - Complexity: O(1) per call.
final class ReadAheadEstimator: Sendable {
    /// Payload bytes asked for at the start and at most (the writer's page size).
    let maximum: Int
    /// Payload bytes asked for at least.
    let minimum: Int
    private let estimate: Atomic<Int>

    /// Bytes an estimate moves by per page read.
    static let step = 32
    /// Bytes read past the estimate (a page a little longer than the estimate still takes one read).
    static let margin = 256

    /// An estimator starting at, and never above, `maximum` payload bytes, and never below `minimum`.
    init(maximum: Int, minimum: Int = 1024) {
        self.maximum = max(maximum, 0)
        self.minimum = min(max(minimum, 0), self.maximum)
        estimate = Atomic(self.maximum)
    }

    /// Payload bytes the next miss should read with the header.
    var readLength: Int {
        min(estimate.load(ordering: .relaxed) + Self.margin, maximum)
    }

    /// Records the stored payload length of a page just read.
    func record(storedLength: Int) {
        let current = estimate.load(ordering: .relaxed)
        let next = storedLength > current ? current + 9 * Self.step : current - Self.step
        estimate.store(min(max(next, minimum), maximum), ordering: .relaxed)
    }
}
