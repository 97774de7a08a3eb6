#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Unbuffered writes to the standard streams, and the byte-count formatting every command shares.
enum Console {
    /// Writes `bytes` to `fd` completely (retrying short writes and EINTR). A closed pipe ends the process by
    /// SIGPIPE, as for any Unix filter.
    static func write(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = systemWrite(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
    }

    /// Ends the process with `status` (standard output is unbuffered, so nothing is lost).
    static func terminate(_ status: Int32) -> Never { exit(status) }

    /// Prints a line to standard output.
    static func out(_ line: String) { write(Array((line + "\n").utf8), to: STDOUT_FILENO) }

    /// Prints a line to standard error.
    static func err(_ line: String) { write(Array((line + "\n").utf8), to: STDERR_FILENO) }

    /// True when standard error is a terminal (progress bars instead of progress lines).
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// `1 record`, `2 records`: a count with its noun (`plural` defaults to the singular + "s").
    static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) " + (n == 1 ? singular : plural ?? singular + "s")
    }

    /// `12.3 MiB`, `512 B`: binary units, one decimal.
    static func bytes(_ count: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : fixed(value, decimals: 1) + " " + units[unit]
    }

    /// `value` with exactly `decimals` digits after the point (no Foundation formatting).
    static func fixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = UInt64(scaled / scale)
        let fraction = UInt64(scaled) - whole * UInt64(scale)
        var text = (value < 0 && scaled != 0 ? "-" : "") + "\(whole)"
        if decimals > 0 {
            let digits = "\(fraction)"
            text += "." + String(repeating: "0", count: decimals - digits.count) + digits
        }
        return text
    }
}

/// `write(2)`, under a name that no type's `write` method shadows.
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}

/// A buffered writer for large outputs (`dump`): flushes every 64 KiB and on ``flush()``.
struct OutputBuffer {
    let fd: Int32
    var bytes: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
        bytes.reserveCapacity(1 << 16)
    }

    mutating func append(_ line: [UInt8]) {
        bytes.append(contentsOf: line)
        if bytes.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        Console.write(bytes, to: fd)
        bytes.removeAll(keepingCapacity: true)
    }
}
