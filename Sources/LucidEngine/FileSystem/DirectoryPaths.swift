#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Directory paths as the engine syncs them (ALICE: a directory's entry in its parent is durable only once the
/// parent is synced), resolved lexically: no file system access, no symbolic links followed. `package`: the fault
/// file system (LucidEngineTestSupport) skips the syncs ``cannotSync(_:)`` names, as ``PosixFileSystem`` does.
package enum DirectoryPaths {
    /// The directory holding `path`: empty and `.` components are ignored; a relative name without a slash is in
    /// `.`; `/` is its own parent; `.` (or a path that is only `.` components) is in `..`; a path ending in `..`
    /// is in that path's `..`.
    package static func parent(of path: String) -> String {
        let absolute = path.hasPrefix("/")
        let parts = path.split(separator: "/").filter { $0 != "." }
        guard let last = parts.last else { return absolute ? "/" : ".." }
        if last == ".." { return parts.joined(separator: "/").prefixed(absolute) + "/.." }
        let rest = parts.dropLast()
        if rest.isEmpty { return absolute ? "/" : "." }
        return rest.joined(separator: "/").prefixed(absolute)
    }

    /// The directories above `path`, nearest first: up to `/` for an absolute path, up to `.` for a relative one
    /// (one that climbs with `..` stops where its `..` components start). O(components).
    package static func ancestors(of path: String) -> [String] {
        var result: [String] = []
        var current = path
        for _ in 0 ..< path.split(separator: "/").count + 1 {
            let parent = parent(of: current)
            if parent.hasSuffix("..") || parent == current { break }
            result.append(parent)
            if parent == "/" || parent == "." { break }
            current = parent
        }
        return result
    }

    /// Whether a failed directory sync means this process cannot make the entries durable at all, rather than
    /// that the disk failed: the directory may not be opened for reading (`EACCES`, `EPERM`: one it can write into
    /// but not list), or its file system does not sync directories or is read-only (`EINVAL`, `EROFS`: a store
    /// directory that is a mount point of another file system, say). Such a sync is skipped (the engine warns
    /// when it is the store's own entry at stake); any other error (`EIO`) is a failure.
    package static func cannotSync(_ error: LucidError) -> Bool {
        guard let code = error.errno else { return false }
        return code == EACCES || code == EPERM || code == EINVAL || code == EROFS
    }
}

private extension String {
    func prefixed(_ absolute: Bool) -> String { absolute ? "/" + self : self }
}
