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
/// - Directories themselves are durable as soon as ``createDirectory(at:)`` returns (``PosixFileSystem`` syncs
///   the parent after `mkdir`). There is no way to remove a directory except by crashing.
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

    /// Creates the directory and any missing parents; succeeds when it already exists. Durable at once.
    ///
    /// Counts as one ``Operation/createDirectory``. Throws an injected fault, or `.io` with `EEXIST` when a file
    /// already has the name of the directory or of one of its parents.
    public func createDirectory(at path: String) throws {
        let path = FaultFSPath.normalize(path)
        try state.withLock { s in
            try s.failIfInjected(.createDirectory, "mkdir", [path])
            try s.createDirectory(path)
        }
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

// MARK: - Internal state

/// Builds the errors the fault file system throws, shaped like ``PosixFileSystem``'s.
enum FaultFSErrors {
    static func io(_ operation: String, _ path: String, _ errno: Int32, injected: Bool = false) -> LucidError {
        LucidError(code: .io, message: "\(operation) failed" + (injected ? " (injected fault)" : ""),
                   file: path, errno: errno)
    }

    static func notFound(_ operation: String, _ path: String) -> LucidError {
        LucidError(code: .notFound, message: "\(operation): no such file or directory", file: path, errno: ENOENT)
    }
}

/// Path arithmetic on normalized paths (no empty or `.` components, no trailing slash; root is `/` or `.`).
enum FaultFSPath {
    static func normalize(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        if parts.isEmpty { return absolute ? "/" : "." }
        return (absolute ? "/" : "") + parts.joined(separator: "/")
    }

    /// The parent directory and the last component, or nil for a root.
    static func split(_ path: String) -> (parent: String, name: String)? {
        if path == "/" || path == "." { return nil }
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let name = String(path[path.index(after: slash)...])
        if slash == path.startIndex { return ("/", name) }
        return (String(path[..<slash]), name)
    }

    static func join(_ directory: String, _ name: String) -> String {
        switch directory {
        case "/": "/" + name
        case ".": name
        default: directory + "/" + name
        }
    }
}

/// One file (an inode): its current bytes and its durable bytes.
struct FaultFSNode: Sendable {
    var current: [UInt8] = []
    var durable: [UInt8] = []
    /// Sectors whose dirty data a failed sync threw away ("fsyncgate"): still readable, but no later sync
    /// writes them, so the disk keeps the durable bytes (zeros past the durable end) there.
    var lostSectors: Set<Int> = []

    /// What a sync would write (and what a crash may keep): the current bytes minus lost sectors.
    func writableBytes(sectorSize: Int) -> [UInt8] {
        if lostSectors.isEmpty { return current }
        var bytes = current
        for sector in lostSectors {
            let start = sector * sectorSize
            let end = min(start + sectorSize, bytes.count)
            guard start < end else { continue }
            for i in start..<end { bytes[i] = i < durable.count ? durable[i] : 0 }
        }
        return bytes
    }
}

/// One name change in a directory: `name` now refers to `node`, or to nothing (nil).
struct FaultFSEntryChange: Sendable {
    var name: String
    var node: Int?
}

/// A directory: durable entries, current entries, and the changes (each atomic) that lead from one to the other.
/// Invariant: applying every group of `pending` to `durable` gives `current`.
struct FaultFSDirectory: Sendable {
    var current: [String: Int] = [:]
    var durable: [String: Int] = [:]
    var pending: [[FaultFSEntryChange]] = []
    var subdirectories: Set<String> = []

    mutating func apply(_ changes: [FaultFSEntryChange]) {
        for change in changes { current[change.name] = change.node }
        pending.append(changes)
    }
}

struct FaultFSHandleInfo: Sendable {
    var node: Int
    var writable: Bool
}

struct FaultFSLockInfo: Sendable {
    var pid: Int32
    var token: Int
}

/// Everything a ``FaultFileSystem`` holds, guarded by its mutex. A value type, so copying it snapshots the
/// whole file system.
struct FaultFSState: Sendable {
    let sectorSize: Int
    var nodes: [Int: FaultFSNode] = [:]
    var nextNodeID = 1
    var directories: [String: FaultFSDirectory] = ["/": FaultFSDirectory(), ".": FaultFSDirectory()]
    var handles: [Int: FaultFSHandleInfo] = [:]
    var nextHandleID = 1
    var locks: [String: FaultFSLockInfo] = [:]
    var nextLockToken = 1
    var rules: [FaultFSActiveRule] = []
    var nextRuleID = 1
    var counts: [FaultFileSystem.Operation: Int] = [:]
    var injectedFaultCount = 0

    init(sectorSize: Int) {
        self.sectorSize = sectorSize
    }

    // MARK: namespace

    func fileNode(at path: String) -> Int? {
        guard let parts = FaultFSPath.split(path) else { return nil }
        return directories[parts.parent]?.current[parts.name]
    }

    mutating func newNode() -> Int {
        let id = nextNodeID
        nextNodeID += 1
        nodes[id] = FaultFSNode()
        return id
    }

    mutating func createDirectory(_ path: String) throws {
        if directories[path] != nil { return }
        guard let parts = FaultFSPath.split(path) else { return }
        if directories[parts.parent] == nil { try createDirectory(parts.parent) }
        if directories[parts.parent]?.current[parts.name] != nil { throw FaultFSErrors.io("mkdir", path, EEXIST) }
        directories[path] = FaultFSDirectory()
        directories[parts.parent]?.subdirectories.insert(parts.name)
    }

    /// Resolves `path` to an existing file or creates it (a pending entry); returns the node.
    mutating func resolveFile(_ path: String, create: Bool, operation: String) throws -> Int {
        guard let parts = FaultFSPath.split(path) else { throw FaultFSErrors.io(operation, path, EISDIR) }
        guard let directory = directories[parts.parent] else { throw FaultFSErrors.notFound(operation, path) }
        if directory.subdirectories.contains(parts.name) { throw FaultFSErrors.io(operation, path, EISDIR) }
        if let node = directory.current[parts.name] { return node }
        guard create else { throw FaultFSErrors.notFound(operation, path) }
        let node = newNode()
        directories[parts.parent]?.apply([FaultFSEntryChange(name: parts.name, node: node)])
        return node
    }

    mutating func open(_ path: String, mode: FileOpenMode) throws -> Int {
        let writable: Bool
        let create: Bool
        switch mode {
        case .readOnly: (writable, create) = (false, false)
        case .readWrite(let c): (writable, create) = (true, c)
        }
        let node = try resolveFile(path, create: create, operation: "open")
        let id = nextHandleID
        nextHandleID += 1
        handles[id] = FaultFSHandleInfo(node: node, writable: writable)
        return id
    }

    mutating func rename(from: String, to: String) throws {
        guard let source = FaultFSPath.split(from) else { throw FaultFSErrors.io("rename", from, EISDIR) }
        guard let target = FaultFSPath.split(to) else { throw FaultFSErrors.io("rename", to, EISDIR) }
        guard let sourceDirectory = directories[source.parent] else { throw FaultFSErrors.notFound("rename", from) }
        if sourceDirectory.subdirectories.contains(source.name) { throw FaultFSErrors.io("rename", from, EISDIR) }
        guard let node = sourceDirectory.current[source.name] else { throw FaultFSErrors.notFound("rename", from) }
        guard let targetDirectory = directories[target.parent] else { throw FaultFSErrors.notFound("rename", to) }
        if targetDirectory.subdirectories.contains(target.name) { throw FaultFSErrors.io("rename", to, EISDIR) }
        if from == to { return }
        let replaced = targetDirectory.current[target.name]
        if source.parent == target.parent {
            directories[source.parent]?.apply([FaultFSEntryChange(name: source.name, node: nil),
                                               FaultFSEntryChange(name: target.name, node: node)])
        } else {
            directories[source.parent]?.apply([FaultFSEntryChange(name: source.name, node: nil)])
            directories[target.parent]?.apply([FaultFSEntryChange(name: target.name, node: node)])
        }
        if let replaced { collectGarbage([replaced]) }
    }

    mutating func remove(_ path: String) throws {
        let node = try resolveFile(path, create: false, operation: "unlink")
        guard let parts = FaultFSPath.split(path) else { return }
        directories[parts.parent]?.apply([FaultFSEntryChange(name: parts.name, node: nil)])
        collectGarbage([node])
    }

    mutating func syncDirectory(_ path: String) throws {
        guard var directory = directories[path] else {
            throw FaultFSErrors.notFound("fsync directory", path)
        }
        let candidates = Array(directory.durable.values) + directory.pending.flatMap { $0.compactMap(\.node) }
        directory.durable = directory.current
        directory.pending = []
        directories[path] = directory
        collectGarbage(candidates)
    }

    /// Creates or overwrites a file whose name and bytes are both durable (parents created as needed).
    mutating func installDurableFile(_ path: String, bytes: [UInt8]) {
        guard let parts = FaultFSPath.split(path) else { return }
        if directories[parts.parent] == nil { try? createDirectory(parts.parent) }
        guard var directory = directories[parts.parent], !directory.subdirectories.contains(parts.name) else { return }
        let node: Int
        if let existing = directory.current[parts.name] {
            node = existing
        } else {
            node = newNode()
            directory.apply([FaultFSEntryChange(name: parts.name, node: node)])
        }
        directory.durable[parts.name] = node
        directories[parts.parent] = directory
        nodes[node] = FaultFSNode(current: bytes, durable: bytes)
    }

    /// Forgets the candidate nodes that no handle and no directory (current, durable or pending) refers to.
    mutating func collectGarbage(_ candidates: [Int]) {
        var unreachable = Set(candidates.filter { nodes[$0] != nil })
        for handle in handles.values { unreachable.remove(handle.node) }
        if unreachable.isEmpty { return }
        for directory in directories.values {
            for node in directory.current.values { unreachable.remove(node) }
            for node in directory.durable.values { unreachable.remove(node) }
            for group in directory.pending {
                for change in group { if let node = change.node { unreachable.remove(node) } }
            }
            if unreachable.isEmpty { return }
        }
        for node in unreachable { nodes[node] = nil }
    }
}
