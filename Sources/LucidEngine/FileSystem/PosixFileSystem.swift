#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real file system: POSIX calls, `fdatasync` for durability, `flock` for the store lock.
///
/// All system calls of the engine live in this file and `PosixFileHandle`; each retries on `EINTR` and turns
/// failures into ``LucidError`` with the errno.
public struct PosixFileSystem: FileSystem {
    /// The real file system.
    public init() {}

    public func createDirectory(at path: String) throws {
        if directoryExists(at: path) { return }
        let parent = DirectoryPaths.parent(of: path)
        if parent != path, !directoryExists(at: parent) { try createDirectory(at: parent) }
        if mkdir(path, 0o755) != 0 {
            let code = Glibc.errno
            if code == EEXIST, directoryExists(at: path) { return }
            throw LucidError.io("mkdir", path: path, errno: code)
        }
        // The new directory's name is durable only once its parent is synced (ALICE rule 3). A parent this process
        // cannot sync (`DirectoryPaths.cannotSync`) is skipped here; a store created in the directory syncs every
        // directory above it again, and warns about those it cannot sync.
        do {
            try syncDirectory(at: parent)
        } catch let error as LucidError where DirectoryPaths.cannotSync(error) {}
    }

    public func directoryExists(at path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    public func fileExists(at path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    public func contentsOfDirectory(at path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw Self.error("opendir", path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public func openFile(at path: String, mode: FileOpenMode) throws -> any FileHandle {
        var flags: Int32 = O_CLOEXEC
        switch mode {
        case .readOnly: flags |= O_RDONLY
        case .readWrite(let create): flags |= O_RDWR | (create ? O_CREAT : 0)
        }
        let fd = Self.retrying { open(path, flags, 0o644) }
        guard fd >= 0 else {
            let code = Glibc.errno
            if code == ENOENT {
                throw LucidError(code: .notFound, message: "no such file", file: path, errno: code)
            }
            throw LucidError.io("open", path: path, errno: code)
        }
        return PosixFileHandle(fd: fd, path: path)
    }

    public func rename(from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else { throw Self.error("rename", from) }
    }

    public func removeFile(at path: String) throws {
        guard unlink(path) == 0 else { throw Self.error("unlink", path) }
    }

    public func syncDirectory(at path: String) throws {
        let fd = Self.retrying { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw Self.error("open directory", path) }
        defer { Glibc.close(fd) }
        guard Self.retrying({ fsync(fd) }) == 0 else { throw Self.error("fsync directory", path) }
    }

    public func lockFile(at path: String, pid: Int32) throws -> any FileLock {
        let fd = Self.retrying { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw Self.error("open lock file", path) }
        // flock locks belong to the open file description, so a second open of the same store from this
        // process conflicts too, exactly like one from another process.
        if Self.retrying({ flock(fd, LOCK_EX | LOCK_NB) }) != 0 {
            let code = Glibc.errno
            let holder = Self.readPid(fd: fd)
            Glibc.close(fd)
            if code == EWOULDBLOCK {
                throw LucidError(code: .locked, message: "the store is locked by another open engine",
                                 file: path, pid: holder)
            }
            throw LucidError.io("flock", path: path, errno: code)
        }
        let text = Array("\(pid)\n".utf8)
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return PosixFileLock(fd: fd)
    }

    // MARK: helpers

    static func error(_ operation: String, _ path: String) -> LucidError {
        let code = Glibc.errno
        if code == ENOENT { return LucidError(code: .notFound, message: "\(operation): no such file or directory", file: path, errno: code) }
        return LucidError.io(operation, path: path, errno: code)
    }

    static func retrying<T: BinaryInteger>(_ call: () -> T) -> T {
        while true {
            let result = call()
            if result == -1 && Glibc.errno == EINTR { continue }
            return result
        }
    }

    private static func readPid(fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 32, 0) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[0..<n], as: UTF8.self).trimmingWhitespace()
        return Int32(text)
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        String(self.filter { !$0.isWhitespace })
    }
}

/// A POSIX file descriptor. `pread`/`pwrite` make it safe for concurrent use.
final class PosixFileHandle: FileHandle, @unchecked Sendable {
    // Immutable after init; the descriptor is only closed once, by `close()` or deinit.
    let fd: Int32
    let path: String
    private let closedFlag = AtomicFlag()

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { if !closedFlag.isSet { Glibc.close(fd) } }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        return try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let n = pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if Glibc.errno == EINTR { continue }
                    initialized = 0
                    throw LucidError.io("pread", path: path, errno: Glibc.errno)
                }
                if n == 0 { break }
                done += n
            }
            initialized = done
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw LucidError.io("pwrite", path: path, errno: Glibc.errno)
            }
            done += n
        }
    }

    func size() throws -> UInt64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw LucidError.io("fstat", path: path, errno: Glibc.errno) }
        return UInt64(st.st_size)
    }

    func truncate(to size: UInt64) throws {
        guard PosixFileSystem.retrying({ ftruncate(fd, off_t(size)) }) == 0 else {
            throw LucidError.io("ftruncate", path: path, errno: Glibc.errno)
        }
    }

    func sync() throws {
        guard PosixFileSystem.retrying({ fdatasync(fd) }) == 0 else {
            throw LucidError.io("fdatasync", path: path, errno: Glibc.errno)
        }
    }

    func close() throws {
        guard closedFlag.setOnce() else { return }
        guard Glibc.close(fd) == 0 else { throw LucidError.io("close", path: path, errno: Glibc.errno) }
    }
}

final class PosixFileLock: FileLock, @unchecked Sendable {
    private let fd: Int32
    private let released = AtomicFlag()
    init(fd: Int32) { self.fd = fd }
    func unlock() {
        guard released.setOnce() else { return }
        _ = flock(fd, LOCK_UN)
        Glibc.close(fd)
    }
    deinit { unlock() }
}

/// A file handle that can lend a file's bytes without copying them.
protocol MappableFileHandle {
    /// Calls `body` with the file's first `count` bytes mapped read-only (valid only during the call). The file
    /// must not shrink meanwhile (a store's files change only under its lock).
    func withMappedBytes<R>(count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R
}

extension PosixFileHandle: MappableFileHandle {
    /// `mmap` with `MAP_POPULATE`: the pages come straight from the page cache, without the zero-filled buffer
    /// and the copy a `pread` of the whole file costs (used to load checkpoints of tens of megabytes).
    func withMappedBytes<R>(count: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard count > 0 else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        #if canImport(Glibc) || canImport(Musl)
        let flags = MAP_PRIVATE | MAP_POPULATE
        #else
        let flags = MAP_PRIVATE
        #endif
        let address = mmap(nil, count, PROT_READ, flags, fd, 0)
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw LucidError.io("mmap", path: path, errno: errno)
        }
        defer { munmap(address, count) }
        return try body(UnsafeRawBufferPointer(start: address, count: count))
    }
}
