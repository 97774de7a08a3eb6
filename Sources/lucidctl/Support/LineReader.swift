#if canImport(Glibc)
import Glibc
#endif

/// Reads `\n`-terminated lines from a file descriptor (a trailing `\r` is dropped, the last line needs no `\n`).
struct LineReader {
    /// A line longer than this is refused (a record's value is at most 4 MiB, so 64 MiB of JSON is plenty).
    static let maxLineBytes = 64 << 20

    struct Failure: Error {
        var message: String
    }

    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// Bytes handed out so far (lines and their terminators), for progress.
    private(set) var bytesConsumed: UInt64 = 0

    init(fd: Int32) { self.fd = fd }

    /// The next line without its terminator, or nil at the end of input.
    mutating func next() throws(Failure) -> [UInt8]? {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: 0x0A) {
                var line = Array(buffer[start..<newline])
                if line.last == 0x0D { line.removeLast() }
                bytesConsumed += UInt64(newline + 1 - start)
                start = newline + 1
                return line
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                var line = Array(buffer[start...])
                if line.last == 0x0D { line.removeLast() }
                bytesConsumed += UInt64(buffer.count - start)
                start = buffer.count
                return line
            }
            guard buffer.count - start <= Self.maxLineBytes else {
                throw Failure(message: "a line is longer than \(Self.maxLineBytes >> 20) MiB")
            }
            if start > 0 {
                buffer.removeSubrange(0..<start)
                start = 0
            }
            searchFrom = buffer.count
            try fill()
        }
    }

    private mutating func fill() throws(Failure) {
        let chunk = 1 << 20
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        var n = 0
        while true {
            n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + old, chunk) }
            if n < 0 && errno == EINTR { continue }
            break
        }
        if n < 0 {
            let code = errno
            buffer.removeSubrange(old...)
            throw Failure(message: "read failed: \(String(cString: strerror(code)))")
        }
        buffer.removeSubrange((old + n)...)
        if n == 0 { atEnd = true }
    }
}
