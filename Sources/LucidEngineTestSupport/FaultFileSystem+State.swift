import LucidEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The internal state of a FaultFileSystem: files (inodes), directories with their durable and pending entries,
// handles, locks and fault rules, plus the namespace operations on it. All of it is guarded by the file system's
// mutex; nothing here locks.

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
    /// The subdirectories whose entries are durable here: made by ``FaultFSState/createDirectory(_:durable:)``
    /// with `durable`, or present at the last ``FaultFSState/syncDirectory(_:)`` of this directory.
    var durableSubdirectories: Set<String> = []

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

    /// Creates `path` and its missing parents; returns the directories created, outermost first. With `durable`,
    /// their entries are durable at once; otherwise each is durable only after its parent is synced.
    @discardableResult
    mutating func createDirectory(_ path: String, durable: Bool) throws -> [String] {
        if directories[path] != nil { return [] }
        guard let parts = FaultFSPath.split(path) else { return [] }
        var created: [String] = []
        if directories[parts.parent] == nil { created = try createDirectory(parts.parent, durable: durable) }
        if directories[parts.parent]?.current[parts.name] != nil { throw FaultFSErrors.io("mkdir", path, EEXIST) }
        directories[path] = FaultFSDirectory()
        directories[parts.parent]?.subdirectories.insert(parts.name)
        if durable { directories[parts.parent]?.durableSubdirectories.insert(parts.name) }
        return created + [path]
    }

    /// Whether `path` and every directory above it are durable entries of their parents.
    func isDurableDirectory(_ path: String) -> Bool {
        guard let parts = FaultFSPath.split(path) else { return true }   // "/" and "."
        guard directories[parts.parent]?.durableSubdirectories.contains(parts.name) == true else { return false }
        return isDurableDirectory(parts.parent)
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
        directory.durableSubdirectories = directory.subdirectories
        directories[path] = directory
        collectGarbage(candidates)
    }

    /// Creates or overwrites a file whose name and bytes are both durable (parents created as needed).
    mutating func installDurableFile(_ path: String, bytes: [UInt8]) {
        guard let parts = FaultFSPath.split(path) else { return }
        if directories[parts.parent] == nil { _ = try? createDirectory(parts.parent, durable: true) }
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
        // Durable means it survives a crash: so must every directory above it.
        var level = parts.parent
        while let up = FaultFSPath.split(level) {
            directories[up.parent]?.durableSubdirectories.insert(up.name)
            level = up.parent
        }
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
