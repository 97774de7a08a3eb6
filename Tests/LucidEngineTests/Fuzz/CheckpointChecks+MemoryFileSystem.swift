// The in-memory file system FuzzCheckpoint writes its checkpoints to (shared
// with the Fuzz package: see FuzzInput.swift).

import LucidEngine
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension CheckpointChecks {
    /// A minimal in-memory file system for writing checkpoints: `FaultFileSystem` (a debug build, with its
    /// durability model) took half of each input's time. No durability, no faults; directories are not tracked.
    final class MemoryFileSystem: FileSystem {
        final class File: @unchecked Sendable {   // guarded by the file system's mutex
            var bytes: [UInt8] = []
        }
        let files = Mutex<[String: File]>([:])

        func createDirectory(at path: String) throws {}
        func directoryExists(at path: String) -> Bool { true }
        func fileExists(at path: String) -> Bool { files.withLock { $0[path] != nil } }
        func contentsOfDirectory(at path: String) throws -> [String] {
            files.withLock { $0.keys.filter { $0.hasPrefix(path + "/") }.map { String($0.dropFirst(path.count + 1)) } }
        }
        func openFile(at path: String, mode: FileOpenMode) throws -> any LucidEngine.FileHandle {
            let file: File = try files.withLock { files in
                if let f = files[path] { return f }
                guard mode == .readWrite(create: true) else { throw LucidError(code: .notFound, message: "no file", file: path) }
                let f = File()
                files[path] = f
                return f
            }
            return Handle(path: path, file: file, fs: self)
        }
        func rename(from: String, to: String) throws {
            try files.withLock { files in
                guard let f = files.removeValue(forKey: from) else { throw LucidError(code: .notFound, message: "no file", file: from) }
                files[to] = f
            }
        }
        func removeFile(at path: String) throws { _ = files.withLock { $0.removeValue(forKey: path) } }
        func syncDirectory(at path: String) throws {}
        func lockFile(at path: String, pid: Int32) throws -> any FileLock { throw LucidError(code: .io, message: "no locks", file: path) }

        final class Handle: LucidEngine.FileHandle {
            let path: String
            let file: File
            let fs: MemoryFileSystem
            init(path: String, file: File, fs: MemoryFileSystem) { self.path = path; self.file = file; self.fs = fs }
            func read(at offset: UInt64, count: Int) throws -> [UInt8] {
                fs.files.withLock { _ in
                    let b = file.bytes
                    guard offset < UInt64(b.count), count > 0 else { return [] }
                    return Array(b[Int(offset)..<min(b.count, Int(offset) + count)])
                }
            }
            func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
                fs.files.withLock { _ in
                    let end = Int(offset) + bytes.count
                    if file.bytes.count < end { file.bytes += [UInt8](repeating: 0, count: end - file.bytes.count) }
                    file.bytes.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: Int(offset)).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
                }
            }
            func size() throws -> UInt64 { fs.files.withLock { _ in UInt64(file.bytes.count) } }
            func truncate(to size: UInt64) throws {
                fs.files.withLock { _ in
                    let n = Int(size)
                    if file.bytes.count > n { file.bytes.removeLast(file.bytes.count - n) } else {
                        file.bytes += [UInt8](repeating: 0, count: n - file.bytes.count)
                    }
                }
            }
            func sync() throws {}
            func close() throws {}
        }
    }
}
