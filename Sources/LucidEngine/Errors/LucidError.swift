#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one error type the engine throws.
///
/// Switch on ``code`` (an extensible struct, so new codes do not break callers); read ``message`` for people.
/// Corruption errors say where: ``file`` and ``offset``. I/O errors carry the ``errno``. A "locked" error carries
/// the ``pid`` of the holder when the lock file names it.
public struct LucidError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. Compare with the static members: `error.code == .corruption`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Wrapped: Hashable, Sendable {
            case corruption, io, locked, invalidArgument, unsupportedFormatVersion, closed, failedState, notFound
        }
        fileprivate let wrapped: Wrapped
        /// Stored bytes failed a check (checksum, magic, bounds, sequence). ``LucidError/file`` and
        /// ``LucidError/offset`` say where.
        public static let corruption = Code(wrapped: .corruption)
        /// A system call failed; ``LucidError/errno`` says why.
        public static let io = Code(wrapped: .io)
        /// Another `Engine` (in this process or another) holds the store's lock.
        public static let locked = Code(wrapped: .locked)
        /// The caller passed something the engine cannot take (a key too long, an empty keyspace name, ...).
        public static let invalidArgument = Code(wrapped: .invalidArgument)
        /// The store was written by a newer format version than this build understands.
        public static let unsupportedFormatVersion = Code(wrapped: .unsupportedFormatVersion)
        /// The engine was closed.
        public static let closed = Code(wrapped: .closed)
        /// An earlier write or fsync failed; writes are refused until the store is reopened.
        public static let failedState = Code(wrapped: .failedState)
        /// The store (or a file it needs) does not exist, and the call was not allowed to create it.
        public static let notFound = Code(wrapped: .notFound)

        /// The code's name, e.g. `corruption`.
        public var description: String {
            switch wrapped {
            case .corruption: "corruption"
            case .io: "io"
            case .locked: "locked"
            case .invalidArgument: "invalidArgument"
            case .unsupportedFormatVersion: "unsupportedFormatVersion"
            case .closed: "closed"
            case .failedState: "failedState"
            case .notFound: "notFound"
            }
        }
    }

    /// The kind of failure.
    public var code: Code
    /// A one-line explanation for people.
    public var message: String
    /// The file involved, when there is one (always set for corruption).
    public var file: String?
    /// The byte offset in ``file`` where the problem was found (corruption).
    public var offset: UInt64?
    /// The OS error number (I/O errors).
    public var errno: Int32?
    /// The process holding the lock, when known (``Code/locked``).
    public var pid: Int32?

    /// Makes an error; the engine uses it for every failure, and custom ``FileSystem`` implementations for theirs.
    public init(code: Code, message: String, file: String? = nil, offset: UInt64? = nil,
                errno: Int32? = nil, pid: Int32? = nil) {
        self.code = code
        self.message = message
        self.file = file
        self.offset = offset
        self.errno = errno
        self.pid = pid
    }

    /// `code: message [file F offset O] (errno N: text) (held by pid P)`, the parts that apply.
    public var description: String {
        var text = "\(code): \(message)"
        if let file { text += " [file \(file)" + (offset.map { " offset \($0)" } ?? "") + "]" }
        if let errno { text += " (errno \(errno): \(String(cString: strerror(errno))))" }
        if let pid { text += " (held by pid \(pid))" }
        return text
    }
}

extension LucidError {
    static func corruption(_ message: String, file: String, offset: UInt64) -> LucidError {
        LucidError(code: .corruption, message: message, file: file, offset: offset)
    }
    static func io(_ operation: String, path: String?, errno: Int32) -> LucidError {
        LucidError(code: .io, message: "\(operation) failed", file: path, errno: errno)
    }
    static func invalidArgument(_ message: String) -> LucidError {
        LucidError(code: .invalidArgument, message: message)
    }
    static func closed() -> LucidError {
        LucidError(code: .closed, message: "the engine is closed")
    }
}
