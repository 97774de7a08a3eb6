#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Progress on standard error: a redrawn bar on a terminal, plain lines otherwise (at every tenth of the total,
/// or every few seconds when the total is unknown). Thread-safe: compaction reports from its own thread.
final class ProgressReporter: Sendable {
    private struct State {
        var lastDraw: ContinuousClock.Instant?
        var nextTenth = 1
        var drewBar = false
        var finished = false
        var done: UInt64 = 0
        var total: UInt64?
        var detail = ""
        var updated = false
    }

    private let label: String
    private let interactive: Bool
    private let state = Mutex(State())
    private let clock = ContinuousClock()

    /// A reporter whose lines start with `label` (e.g. `compacting`).
    init(label: String, interactive: Bool = Console.stderrIsTerminal) {
        self.label = label
        self.interactive = interactive
    }

    /// Reports `done` of `total` bytes (total nil or 0: unknown), with a short `detail` such as a record count.
    func update(done: UInt64, total: UInt64?, detail: String) {
        let now = clock.now
        let line: String? = state.withLock { s in
            guard !s.finished else { return nil }
            (s.done, s.total, s.detail, s.updated) = (done, total, detail, true)
            let fraction = total.flatMap { $0 > 0 ? min(1, Double(done) / Double($0)) : nil }
            if interactive {
                if let last = s.lastDraw, now - last < .milliseconds(100) { return nil }
                s.lastDraw = now
                s.drewBar = true
                return "\r" + barText(fraction: fraction, done: done, total: total, detail: detail) + "\u{1B}[K"
            }
            if let fraction {
                let tenths = Int(fraction * 10)
                guard tenths >= s.nextTenth, tenths < 10 else { return nil }
                s.nextTenth = tenths + 1
                return plainText(fraction: fraction, done: done, total: total, detail: detail) + "\n"
            }
            if let last = s.lastDraw, now - last < .seconds(2) { return nil }
            if s.lastDraw == nil { s.lastDraw = now; return nil }
            s.lastDraw = now
            return plainText(fraction: nil, done: done, total: total, detail: detail) + "\n"
        }
        if let line { Console.write(Array(line.utf8), to: STDERR_FILENO) }
    }

    /// Completes the bar (or prints the last plain line) with the last values reported; prints nothing when
    /// nothing was reported.
    func finish() {
        let line: String? = state.withLock { s in
            guard !s.finished else { return nil }
            s.finished = true
            guard s.updated else { return nil }
            let (done, total, detail) = (s.done, s.total, s.detail)
            if interactive {
                return "\r" + barText(fraction: 1, done: done, total: total ?? done, detail: detail) + "\u{1B}[K\n"
            }
            return plainText(fraction: total == nil ? nil : 1, done: done, total: total, detail: detail) + "\n"
        }
        if let line { Console.write(Array(line.utf8), to: STDERR_FILENO) }
    }

    /// Stops reporting after a failure: ends a drawn bar's line, prints nothing else (the error follows).
    func abandon() {
        let line: String? = state.withLock { s in
            guard !s.finished else { return nil }
            s.finished = true
            return s.drewBar ? "\n" : nil
        }
        if let line { Console.write(Array(line.utf8), to: STDERR_FILENO) }
    }

    private func barText(fraction: Double?, done: UInt64, total: UInt64?, detail: String) -> String {
        let width = 30
        guard let fraction else { return "\(label): \(Console.bytes(done))  \(detail)" }
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        return "\(label) [\(bar)] \(percent(fraction))  \(Console.bytes(done)) / \(Console.bytes(total ?? done))  \(detail)"
    }

    private func plainText(fraction: Double?, done: UInt64, total: UInt64?, detail: String) -> String {
        guard let fraction else { return "\(label): \(Console.bytes(done)), \(detail)" }
        return "\(label): \(Int((fraction * 100).rounded(.down)))% (\(Console.bytes(done)) of \(Console.bytes(total ?? done)), \(detail))"
    }

    private func percent(_ fraction: Double) -> String {
        let p = Int((fraction * 100).rounded(.down))
        return (p < 10 ? "  " : p < 100 ? " " : "") + "\(p)%"
    }
}
