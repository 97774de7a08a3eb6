/// The engine's only door to the operating system (leveldb's `Env`).
///
/// ``PosixFileSystem`` is the real one. Tests and fuzzers pass a fault-injecting implementation
/// (`LucidEngineTestSupport.FaultFileSystem`) that loses unsynced data, tears writes and fails chosen operations.
/// Every method throws ``LucidError`` (code ``LucidError/Code/io`` with an errno, or
/// ``LucidError/Code/notFound``).
public protocol FileSystem: Sendable {
    /// Creates the directory (and missing parents), syncing the parent of each directory it makes so that its
    /// entry is durable (a parent it cannot sync, `EACCES`, `EPERM`, `EINVAL` or `EROFS`, is skipped). Succeeds,
    /// syncing nothing, when it already exists.
    func createDirectory(at path: String) throws
    /// True when `path` names a directory.
    func directoryExists(at path: String) -> Bool
    /// True when `path` names a regular file.
    func fileExists(at path: String) -> Bool
    /// The names (not paths) of the entries of a directory, in no particular order.
    func contentsOfDirectory(at path: String) throws -> [String]
    /// Opens a file. `.readWrite(create: true)` creates it when missing (a new name is durable only after
    /// ``syncDirectory(at:)`` on its parent).
    func openFile(at path: String, mode: FileOpenMode) throws -> any FileHandle
    /// Atomically renames `from` to `to`, replacing `to`. Durable after ``syncDirectory(at:)``.
    func rename(from: String, to: String) throws
    /// Removes a file. Durable after ``syncDirectory(at:)``.
    func removeFile(at path: String) throws
    /// Makes the directory's entries (creates, renames, removals) durable: fsync of the directory.
    func syncDirectory(at path: String) throws
    /// Takes an exclusive, non-blocking lock on `path` (created if missing) and writes `pid` into it.
    /// Throws ``LucidError/Code/locked`` (with the holder's pid when known) when another holder has it,
    /// in this process or another.
    func lockFile(at path: String, pid: Int32) throws -> any FileLock
}

/// How ``FileSystem/openFile(at:mode:)`` opens a file.
public enum FileOpenMode: Sendable, Hashable {
    /// Reading only; the file must exist.
    case readOnly
    /// Reading and writing; `create` makes a missing file.
    case readWrite(create: Bool)
}

/// An open file, addressed by absolute offsets (pread/pwrite), safe to use from several threads at once.
public protocol FileHandle: AnyObject, Sendable {
    /// The path it was opened with.
    var path: String { get }
    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    func read(at offset: UInt64, count: Int) throws -> [UInt8]
    /// Writes all of `bytes` at `offset`, or throws (possibly after writing a prefix).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws
    /// The current size in bytes.
    func size() throws -> UInt64
    /// Cuts (or extends with zeros) the file to `size` bytes.
    func truncate(to size: UInt64) throws
    /// Makes written data durable (fdatasync). After a failure nothing written since the last successful sync
    /// may be assumed durable, and the caller must not retry and then trust it.
    func sync() throws
    /// Closes the handle. Further calls fail.
    func close() throws
}

extension FileHandle {
    /// Writes all of `bytes` at `offset`.
    public func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }
}

/// A held lock on a store directory. Released by ``unlock()`` (or when the process dies).
public protocol FileLock: AnyObject, Sendable {
    /// Releases the lock. Idempotent.
    func unlock()
}
