import LucidEngine
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An in-memory ``FileSystem`` that models what a crash (power loss, kernel panic, `kill -9` of the machine)
/// does to a real disk, and fails chosen operations on demand.
///
/// **Durability model.**
/// - Every file has its *current* bytes (what reads return) and its *durable* bytes (what the disk holds as of the
///   last successful ``FileHandle/sync()`` on any handle of that file). Handles address the file itself (the
///   inode), so a renamed or removed file stays usable through handles opened earlier.
/// - Directory entries (a file created, renamed or removed) are durable only after
///   ``syncDirectory(at:)`` on the directory that holds them; each directory keeps its durable entries, its
///   current entries and the ordered list of changes in between.
/// - A directory's own entry in its parent is durable once the parent is synced: ``createDirectory(at:)`` syncs the
///   parent of each directory it makes (as ``PosixFileSystem`` does after `mkdir`), but a fault on that sync, or
///   a directory that already existed, leaves it to whoever syncs the parent later. A crash drops every directory
///   whose entry, or whose parent's, is not durable, with everything in it. There is no way to remove a directory
///   except by crashing.
/// - ``crash(policy:seed:)`` returns a *new* file system holding what a crash would leave behind
///   (see ``CrashPolicy``); this instance is left untouched, so one workload can be crashed several ways.
///
/// **Faults.** ``addFault(_:)`` / ``failOperation(_:nth:errno:persistent:shortWrite:dropsDirtyData:pathFilter:)``
/// make the N-th matching operation (counted from the call) throw `LucidError(code: .io, errno: ...)`, once or from
/// then on; ENOSPC-style short writes and Linux "fsyncgate" semantics are available. ``operationCount(_:)`` counts
/// every attempted operation by kind so a test can run a workload once, then loop "fail the N-th op" over it.
/// A persistent fault on every ``Operation`` models the process dying at op N: crash the file system afterwards.
///
/// **Locks.** ``lockFile(at:pid:)`` allows one holder per path at a time across the whole instance; a second
/// attempt throws ``LucidError/Code/locked`` with the holder's pid. A crash releases every lock.
///
/// Paths are plain strings: `"/a//b/./c"` and `"/a/b/c"` name the same file; `..` is not interpreted.
/// `/` and `.` always exist. All state sits behind one `Mutex`, so the file system, its handles and its locks
/// may be used from any thread; every call costs one lock acquisition plus the byte copying it implies.
public final class FaultFileSystem: FileSystem, Sendable {
    let state: Mutex<FaultFSState>

    /// The sector size, in bytes, used by the crash policies that keep or tear unsynced data piecewise
    /// (``CrashPolicy/randomSubset`` and ``CrashPolicy/tornWrites``) and to round short writes.
    public let sectorSize: Int

    /// Every file sync waits here while the gate is closed (a crash's new file system has its own, open gate).
    public let syncGate = SyncGate()

    /// Creates an empty file system containing only the directories `/` and `.`.
    ///
    /// - Parameter sectorSize: the unit in which unsynced data survives or tears in a crash (512 models a
    ///   classic disk sector, 4096 a page); must be positive.
    public init(sectorSize: Int = 512) {
        precondition(sectorSize > 0, "sectorSize must be positive")
        self.sectorSize = sectorSize
        self.state = Mutex(FaultFSState(sectorSize: sectorSize))
    }

    init(sectorSize: Int, state: FaultFSState) {
        self.sectorSize = sectorSize
        self.state = Mutex(state)
    }

    // MARK: FileSystem

    /// Creates the directory and any missing parents, syncing the parent of each directory it makes, as
    /// ``PosixFileSystem`` does; succeeds, syncing nothing, when it already exists.
    ///
    /// Counts one ``Operation/createDirectory`` and one ``Operation/syncDirectory`` per directory made (one
    /// ``Operation/createDirectory`` when it exists). Throws an injected fault, or `.io` with `EEXIST` when a file
    /// already has the name of the directory or of one of its parents. A fault on a parent's sync leaves the
    /// directories made so far in place but not durable (a crash then drops them with everything in them), and the
    /// deeper ones not made.
    public func createDirectory(at path: String) throws {
        try createDirectory(at: path, syncingParents: true)
    }

    /// ``createDirectory(at:)``, or with `syncingParents` false an application's `mkdir -p` that syncs nothing: the
    /// entries of the directories it makes are not durable until their parents are synced. Each level is made
    /// (one ``Operation/createDirectory``) and its parent synced (one ``Operation/syncDirectory``) before the next,
    /// as ``PosixFileSystem`` does; an injected fault on a sync stops there, except one whose errno says the parent
    /// cannot be synced at all (`EACCES`, `EPERM`, `EINVAL`, `EROFS`), which is skipped as ``PosixFileSystem``
    /// skips it (the entry then stays not durable).
    public func createDirectory(at path: String, syncingParents: Bool) throws {
        let path = FaultFSPath.normalize(path)
        try state.withLock { s in
            var missing: [String] = []
            var level = path
            while s.directories[level] == nil, let parts = FaultFSPath.split(level) {
                missing.append(level)
                level = parts.parent
            }
            if missing.isEmpty { try s.failIfInjected(.createDirectory, "mkdir", [path]) }
            for directory in missing.reversed() {
                try s.failIfInjected(.createDirectory, "mkdir", [directory])
                try s.createDirectory(directory, durable: false)
                guard syncingParents, let parts = FaultFSPath.split(directory) else { continue }
                do {
                    try s.failIfInjected(.syncDirectory, "fsync directory", [parts.parent])
                    s.directories[parts.parent]?.durableSubdirectories.insert(parts.name)
                } catch let error as LucidError where DirectoryPaths.cannotSync(error) {}
            }
        }
    }

    /// True when `path` names a directory that a crash would keep whatever the policy: its entry, and every parent's,
    /// is durable. Not counted, never faulted.
    public func directoryIsDurable(at path: String) -> Bool {
        let path = FaultFSPath.normalize(path)
        return state.withLock { $0.directories[path] != nil && $0.isDurableDirectory(path) }
    }

    /// True when `path` names a directory. Not counted, never faulted.
    public func directoryExists(at path: String) -> Bool {
        let path = FaultFSPath.normalize(path)
        return state.withLock { $0.directories[path] != nil }
    }

    /// True when `path` names a file in the current (not necessarily durable) namespace. Not counted, never faulted.
    public func fileExists(at path: String) -> Bool {
        let path = FaultFSPath.normalize(path)
        return state.withLock { $0.fileNode(at: path) != nil }
    }

    /// The names of the files and subdirectories directly inside `path`, sorted. Not counted, never faulted.
    ///
    /// Throws `.notFound` (`ENOENT`) when the directory does not exist, `.io` `ENOTDIR` when it is a file.
    public func contentsOfDirectory(at path: String) throws -> [String] {
        let path = FaultFSPath.normalize(path)
        return try state.withLock { s in
            guard let dir = s.directories[path] else {
                if s.fileNode(at: path) != nil { throw FaultFSErrors.io("opendir", path, ENOTDIR) }
                throw FaultFSErrors.notFound("opendir", path)
            }
            return (Array(dir.current.keys) + Array(dir.subdirectories)).sorted()
        }
    }

    /// Opens a file; `.readWrite(create: true)` creates it when missing (an entry that is durable only after
    /// ``syncDirectory(at:)`` on its parent). The handle reads and writes the file's current bytes.
    ///
    /// Counts as one ``Operation/open``. Throws an injected fault; `.notFound` when the file (or its directory)
    /// is missing and may not be created; `.io` `EISDIR` when `path` is a directory.
    public func openFile(at path: String, mode: FileOpenMode) throws -> any FileHandle {
        let path = FaultFSPath.normalize(path)
        let id = try state.withLock { s in
            try s.failIfInjected(.open, "open", [path])
            return try s.open(path, mode: mode)
        }
        return FaultFileHandle(fileSystem: self, id: id, path: path)
    }

    /// Renames the file `from` to `to`, replacing any file at `to`, as one atomic change of each directory
    /// involved (one change when both are the same directory). Durable after ``syncDirectory(at:)`` on the
    /// directories involved; until then a crash may keep the old name, the new name, or (across directories,
    /// when only one is synced) both or neither.
    ///
    /// Counts as one ``Operation/rename``. Throws an injected fault; `.notFound` when `from` or the parent of `to`
    /// is missing; `.io` `EISDIR` when either names a directory (directories cannot be renamed).
    public func rename(from: String, to: String) throws {
        let from = FaultFSPath.normalize(from)
        let to = FaultFSPath.normalize(to)
        try state.withLock { s in
            try s.failIfInjected(.rename, "rename", [from, to])
            try s.rename(from: from, to: to)
        }
    }

    /// Removes a file's name. Open handles keep working. Durable after ``syncDirectory(at:)`` on its parent;
    /// until then a crash may bring the file back with its durable bytes.
    ///
    /// Counts as one ``Operation/remove``. Throws an injected fault; `.notFound` when missing; `.io` `EISDIR`
    /// for a directory.
    public func removeFile(at path: String) throws {
        let path = FaultFSPath.normalize(path)
        try state.withLock { s in
            try s.failIfInjected(.remove, "unlink", [path])
            try s.remove(path)
        }
    }

    /// Makes the directory's current entries durable (fsync of the directory). Does not sync file contents.
    ///
    /// Counts as one ``Operation/syncDirectory``. Throws an injected fault (the entries then stay as durable as
    /// they were) or `.notFound` when the directory is missing. Costs O(entries of the file system) for the
    /// garbage collection of files no name refers to any more.
    public func syncDirectory(at path: String) throws {
        let path = FaultFSPath.normalize(path)
        try state.withLock { s in
            try s.failIfInjected(.syncDirectory, "fsync directory", [path])
            try s.syncDirectory(path)
        }
    }

    /// Takes the exclusive lock on `path`, creating the file when missing (a non-durable entry, like `open` with
    /// `O_CREAT`) and writing `"<pid>\n"` into it (unsynced), like ``PosixFileSystem``.
    ///
    /// Counts as one ``Operation/lock``. Throws an injected fault; ``LucidError/Code/locked`` with the holder's
    /// ``LucidError/pid`` when any lock object of this instance holds `path`; `.notFound` when the parent
    /// directory is missing. The lock is released by ``FileLock/unlock()``, when the lock object is
    /// deallocated, or by a crash (the crashed file system starts with no locks).
    public func lockFile(at path: String, pid: Int32) throws -> any FileLock {
        let path = FaultFSPath.normalize(path)
        let token = try state.withLock { s in
            try s.failIfInjected(.lock, "flock", [path])
            return try s.lock(path, pid: pid)
        }
        return FaultFileLock(fileSystem: self, path: path, token: token)
    }

    // MARK: Inspection

    /// The current bytes of the file at `path` (what a read returns now), or nil when no file has that name.
    /// Copies the file (O(size)); not counted, never faulted.
    public func bytes(of path: String) -> [UInt8]? {
        let path = FaultFSPath.normalize(path)
        return state.withLock { s in s.fileNode(at: path).flatMap { s.nodes[$0]?.current } }
    }

    /// The durable bytes (as of the file's last successful sync) of the file currently named `path`, or nil when
    /// no file has that name. Whether the *name* is durable is a separate question: see
    /// ``durableFileNames(in:)``. Copies the file (O(size)); not counted, never faulted.
    public func durableBytes(of path: String) -> [UInt8]? {
        let path = FaultFSPath.normalize(path)
        return state.withLock { s in s.fileNode(at: path).flatMap { s.nodes[$0]?.durable } }
    }

    /// Overwrites a file's current *and* durable bytes (to inject corruption, or to seed a store), creating
    /// the file, with a durable name, and any missing parent directories when needed.
    /// Not counted, never faulted; O(size).
    public func setBytes(_ bytes: [UInt8], of path: String) {
        let path = FaultFSPath.normalize(path)
        state.withLock { $0.installDurableFile(path, bytes: bytes) }
    }

    /// The names of the files (not subdirectories) directly inside `directory` in the current namespace,
    /// sorted; empty when the directory does not exist. Not counted, never faulted.
    public func fileNames(in directory: String) -> [String] {
        let directory = FaultFSPath.normalize(directory)
        return state.withLock { $0.directories[directory].map { Array($0.current.keys).sorted() } ?? [] }
    }

    /// The names of the files directly inside `directory` that are durable (as of its last
    /// ``syncDirectory(at:)``), sorted; empty when the directory does not exist. Not counted, never faulted.
    public func durableFileNames(in directory: String) -> [String] {
        let directory = FaultFSPath.normalize(directory)
        return state.withLock { $0.directories[directory].map { Array($0.durable.keys).sorted() } ?? [] }
    }

    /// The pid of the holder of the lock on `path`, or nil when it is not locked.
    public func lockHolder(of path: String) -> Int32? {
        let path = FaultFSPath.normalize(path)
        return state.withLock { $0.locks[path]?.pid }
    }

    /// The number of handles currently open (not yet closed or deallocated) on this file system.
    public var openHandleCount: Int {
        state.withLock { $0.handles.count }
    }
}
