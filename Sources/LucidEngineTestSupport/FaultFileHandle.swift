import LucidEngine
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A handle on a ``FaultFileSystem`` file (its inode: renames and removals do not affect it).
///
/// All handles of one file see the same bytes. Calls after ``close()`` throw `.io` `EBADF` (and are not
/// counted); a second `close()` does nothing. Deallocating an open handle closes it.
final class FaultFileHandle: FileHandle, Sendable {
    let fileSystem: FaultFileSystem
    let id: Int
    let path: String

    init(fileSystem: FaultFileSystem, id: Int, path: String) {
        self.fileSystem = fileSystem
        self.id = id
        self.path = path
    }

    deinit {
        let id = id
        fileSystem.state.withLock { $0.closeHandle(id) }
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        try fileSystem.state.withLock { try $0.read(handle: id, path: path, offset: offset, count: count) }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try fileSystem.state.withLock { try $0.write(handle: id, path: path, bytes: bytes, offset: offset) }
    }

    func size() throws -> UInt64 {
        try fileSystem.state.withLock { s in
            let node = try s.node(ofHandle: id, path: path, operation: "fstat")
            return UInt64(s.nodes[node]?.current.count ?? 0)
        }
    }

    func truncate(to size: UInt64) throws {
        try fileSystem.state.withLock { try $0.truncate(handle: id, path: path, size: size) }
    }

    func sync() throws {
        fileSystem.syncGate.pass()
        try fileSystem.state.withLock { try $0.sync(handle: id, path: path) }
    }

    func close() throws {
        let id = id
        fileSystem.state.withLock { $0.closeHandle(id) }
    }
}

/// A lock taken with ``FaultFileSystem/lockFile(at:pid:)``. Released by ``unlock()`` or deallocation; releasing
/// twice, or after a crash replaced the file system, does nothing.
final class FaultFileLock: FileLock, Sendable {
    let fileSystem: FaultFileSystem
    let path: String
    let token: Int

    init(fileSystem: FaultFileSystem, path: String, token: Int) {
        self.fileSystem = fileSystem
        self.path = path
        self.token = token
    }

    deinit { unlock() }

    func unlock() {
        let path = path
        let token = token
        fileSystem.state.withLock { s in
            if s.locks[path]?.token == token { s.locks[path] = nil }
        }
    }
}

extension FaultFSState {
    /// Files larger than this are refused with `EFBIG` (protects tests from hostile offsets).
    static let maximumFileSize: UInt64 = 1 << 32

    func node(ofHandle id: Int, path: String, operation: String, writing: Bool = false) throws -> Int {
        guard let info = handles[id], nodes[info.node] != nil, !writing || info.writable else {
            throw FaultFSErrors.io(operation, path, EBADF)
        }
        return info.node
    }

    mutating func closeHandle(_ id: Int) {
        guard let info = handles.removeValue(forKey: id) else { return }
        collectGarbage([info.node])
    }

    mutating func read(handle id: Int, path: String, offset: UInt64, count: Int) throws -> [UInt8] {
        let node = try self.node(ofHandle: id, path: path, operation: "pread")
        try failIfInjected(.read, "pread", [path])
        guard count >= 0 else { throw FaultFSErrors.io("pread", path, EINVAL) }
        guard let bytes = nodes[node]?.current, offset < UInt64(bytes.count), count > 0 else { return [] }
        let start = Int(offset)
        return Array(bytes[start..<min(bytes.count, start + min(count, bytes.count - start))])
    }

    mutating func write(handle id: Int, path: String, bytes: UnsafeRawBufferPointer, offset: UInt64) throws {
        let node = try self.node(ofHandle: id, path: path, operation: "pwrite", writing: true)
        if let rule = injectedFault(.write, [path]) {
            if rule.shortWrite {
                let half = bytes.count / 2
                let rounded = half / sectorSize * sectorSize
                let prefix = rounded > 0 ? rounded : half
                if prefix > 0, offset <= Self.maximumFileSize - UInt64(prefix) {
                    store(UnsafeRawBufferPointer(rebasing: bytes[0..<prefix]), at: Int(offset), in: node)
                }
            }
            throw FaultFSErrors.io("pwrite", path, rule.errno, injected: true)
        }
        guard offset <= Self.maximumFileSize - UInt64(min(UInt64(bytes.count), Self.maximumFileSize)) else {
            throw FaultFSErrors.io("pwrite", path, EFBIG)
        }
        store(bytes, at: Int(offset), in: node)
    }

    /// Writes bytes at an offset, zero-filling any gap past the end of the file.
    mutating func store(_ bytes: UnsafeRawBufferPointer, at offset: Int, in node: Int) {
        guard var file = nodes[node] else { return }
        nodes[node] = nil  // keep the arrays uniquely referenced while editing
        let end = offset + bytes.count
        if file.current.count < end { file.current.append(contentsOf: repeatElement(0, count: end - file.current.count)) }
        if !bytes.isEmpty {
            file.current.withUnsafeMutableBytes { target in
                target.baseAddress!.advanced(by: offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            }
            if !file.lostSectors.isEmpty {
                for sector in (offset / sectorSize)...((end - 1) / sectorSize) { file.lostSectors.remove(sector) }
            }
        }
        nodes[node] = file
    }

    mutating func truncate(handle id: Int, path: String, size: UInt64) throws {
        let node = try self.node(ofHandle: id, path: path, operation: "ftruncate", writing: true)
        try failIfInjected(.truncate, "ftruncate", [path])
        guard size <= Self.maximumFileSize else { throw FaultFSErrors.io("ftruncate", path, EFBIG) }
        guard var file = nodes[node] else { return }
        nodes[node] = nil
        let newSize = Int(size)
        if newSize < file.current.count {
            file.current.removeSubrange(newSize...)
        } else {
            file.current.append(contentsOf: repeatElement(0, count: newSize - file.current.count))
        }
        let sectorSize = sectorSize
        file.lostSectors = file.lostSectors.filter { $0 * sectorSize < newSize }
        nodes[node] = file
    }

    mutating func sync(handle id: Int, path: String) throws {
        let node = try self.node(ofHandle: id, path: path, operation: "fdatasync")
        if let rule = injectedFault(.sync, [path]) {
            if rule.dropsDirtyData, var file = nodes[node] {
                let count = file.current.count
                var sector = 0
                while sector * sectorSize < count {
                    let range = (sector * sectorSize)..<min(count, (sector + 1) * sectorSize)
                    if range.upperBound > file.durable.count || file.current[range] != file.durable[range] {
                        file.lostSectors.insert(sector)
                    }
                    sector += 1
                }
                nodes[node] = file
            }
            throw FaultFSErrors.io("fdatasync", path, rule.errno, injected: true)
        }
        guard var file = nodes[node] else { return }
        // Lost sectors stay lost (the kernel thinks they are clean) until written again.
        file.durable = file.writableBytes(sectorSize: sectorSize)
        nodes[node] = file
    }

    mutating func lock(_ path: String, pid: Int32) throws -> Int {
        let node = try resolveFile(path, create: true, operation: "open lock file")
        if let holder = locks[path] {
            throw LucidError(code: .locked, message: "the store is locked by another open engine",
                             file: path, pid: holder.pid)
        }
        let token = nextLockToken
        nextLockToken += 1
        locks[path] = FaultFSLockInfo(pid: pid, token: token)
        nodes[node]?.current = Array("\(pid)\n".utf8)
        nodes[node]?.lostSectors = []
        return token
    }
}
