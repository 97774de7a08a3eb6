import LucidEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Helpers that damage, inspect and manage REAL files and directories (POSIX paths), for corruption tests,
/// `kill -9` tests and fuzz corpora. For files inside a ``FaultFileSystem`` use its `setBytes(_:of:)` instead.
///
/// Everything goes through ``PosixFileSystem`` or plain system calls, syncs nothing, and throws ``LucidError``
/// (`.notFound` for a missing file, `.io` with the errno otherwise, `.invalidArgument` for an offset past the
/// end of the file). Each call opens and closes the file it touches.
public enum CorruptionHelpers {
    /// Inverts bit `bit` (0 = least significant) of the byte at `offset`. Throws `.invalidArgument` when
    /// `offset` is not inside the file or `bit` is not in 0...7.
    public static func flipBit(path: String, offset: UInt64, bit: Int) throws {
        guard (0...7).contains(bit) else { throw LucidError(code: .invalidArgument, message: "bit \(bit) not in 0...7") }
        try modifyByte(path: path, offset: offset) { $0 ^ (1 << UInt8(bit)) }
    }

    /// Sets the byte at `offset` (inside the file) to `value`; returns the previous value.
    @discardableResult
    public static func setByte(path: String, offset: UInt64, value: UInt8) throws -> UInt8 {
        var previous: UInt8 = 0
        try modifyByte(path: path, offset: offset) { old in
            previous = old
            return value
        }
        return previous
    }

    /// Cuts the file to `size` bytes (or extends it with zeros).
    public static func truncate(path: String, to size: UInt64) throws {
        try withFile(path) { try $0.truncate(to: size) }
    }

    /// Overwrites `range` with zeros; a range reaching past the end extends the file.
    public static func zero(path: String, range: Range<UInt64>) throws {
        guard !range.isEmpty else { return }
        let zeros = [UInt8](repeating: 0, count: Int(range.upperBound - range.lowerBound))
        try withFile(path) { try $0.write(zeros, at: range.lowerBound) }
    }

    /// Appends `count` pseudo-random bytes, reproducible from `seed`; returns them.
    @discardableResult
    public static func appendGarbage(path: String, count: Int, seed: UInt64) throws -> [UInt8] {
        var random = FaultFSRandom(seed: seed)
        let garbage = (0..<max(0, count)).map { _ in random.nextByte() }
        try append(path: path, bytes: garbage)
        return garbage
    }

    /// Appends `count` zero bytes.
    public static func appendZeros(path: String, count: Int) throws {
        try append(path: path, bytes: [UInt8](repeating: 0, count: max(0, count)))
    }

    /// Appends `bytes` at the end of the file.
    public static func append(path: String, bytes: [UInt8]) throws {
        try withFile(path) { handle in try handle.write(bytes, at: try handle.size()) }
    }

    /// The file's size in bytes.
    public static func fileSize(path: String) throws -> UInt64 {
        try withFile(path, mode: .readOnly) { try $0.size() }
    }

    /// The whole content of the file.
    public static func readFile(path: String) throws -> [UInt8] {
        try withFile(path, mode: .readOnly) { handle in try handle.read(at: 0, count: Int(try handle.size())) }
    }

    /// Replaces the file's content with `bytes`, creating the file when missing.
    public static func writeFile(path: String, bytes: [UInt8]) throws {
        try withFile(path, mode: .readWrite(create: true)) { handle in
            try handle.truncate(to: 0)
            try handle.write(bytes, at: 0)
        }
    }

    /// Copies every regular file directly inside `source` into `destination` (created with its parents when
    /// missing), replacing files of the same names; subdirectories are skipped (a flat copy). O(total bytes).
    public static func copyDirectory(from source: String, to destination: String) throws {
        let posix = PosixFileSystem()
        try posix.createDirectory(at: destination)
        for name in try posix.contentsOfDirectory(at: source).sorted() {
            let path = source + "/" + name
            guard posix.fileExists(at: path) else { continue }
            try writeFile(path: destination + "/" + name, bytes: try readFile(path: path))
        }
    }

    /// Creates a new, empty, uniquely named directory `/tmp/<prefix>-XXXXXX` (mode 0700) and returns its path.
    public static func makeTemporaryDirectory(prefix: String = "lucid") throws -> String {
        let sanitized = prefix.isEmpty ? "lucid" : String(prefix.map { $0 == "/" ? "-" : $0 })
        var template = Array("/tmp/\(sanitized)-XXXXXX".utf8CString)
        let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard result != nil else {
            throw LucidError(code: .io, message: "mkdtemp failed", file: "/tmp/\(sanitized)-XXXXXX", errno: errno)
        }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Removes `path` and everything under it (symbolic links are removed, never followed). Succeeds when
    /// `path` does not exist.
    public static func removeDirectory(_ path: String) throws {
        var info = stat()
        if lstat(path, &info) != 0 {
            if errno == ENOENT { return }
            throw LucidError(code: .io, message: "lstat failed", file: path, errno: errno)
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            for name in try PosixFileSystem().contentsOfDirectory(at: path) {
                try removeDirectory(path + "/" + name)
            }
            if rmdir(path) != 0 && errno != ENOENT {
                throw LucidError(code: .io, message: "rmdir failed", file: path, errno: errno)
            }
        } else if unlink(path) != 0 && errno != ENOENT {
            throw LucidError(code: .io, message: "unlink failed", file: path, errno: errno)
        }
    }

    // MARK: private

    private static func withFile<T>(_ path: String, mode: FileOpenMode = .readWrite(create: false),
                                    _ body: (any FileHandle) throws -> T) throws -> T {
        let handle = try PosixFileSystem().openFile(at: path, mode: mode)
        defer { try? handle.close() }
        return try body(handle)
    }

    private static func modifyByte(path: String, offset: UInt64, _ change: (UInt8) -> UInt8) throws {
        try withFile(path) { handle in
            guard let old = try handle.read(at: offset, count: 1).first else {
                throw LucidError(code: .invalidArgument, message: "offset \(offset) is past the end of the file",
                                 file: path, offset: offset)
            }
            try handle.write([change(old)], at: offset)
        }
    }
}
