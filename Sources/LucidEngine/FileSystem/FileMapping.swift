#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only, shared mapping of a file's first `length` bytes, unmapped when the last reference goes.
///
/// `length` may exceed the file's size; touching a page past the end of the file raises SIGBUS, so callers read
/// only below a bound they know the file holds (``SegmentFile/readableEnd``: the engine never cuts a segment
/// below it, and a deleted file stays readable through its mapping). Reading a mapped page the disk cannot
/// deliver raises SIGBUS too, instead of an error, which is why mapping is an option
/// (``EngineOptions/memoryMappedReads``).
final class FileMapping: @unchecked Sendable {
    // @unchecked: the pointer is read-only memory that lives as long as this object; nothing mutates it.
    let bytes: UnsafeRawBufferPointer

    /// Maps `length` bytes of `fd` read-only. - Throws: ``LucidError/Code/io`` with the errno of `mmap`.
    init(fd: Int32, length: Int, path: String) throws {
        precondition(length > 0)
        let address = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw LucidError.io("mmap", path: path, errno: errno)
        }
        bytes = UnsafeRawBufferPointer(start: address, count: length)
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count) }
}

extension PosixFileHandle {
    /// A shared read-only mapping of the file's first `length` bytes (see ``FileMapping``).
    func map(length: Int) throws -> FileMapping { try FileMapping(fd: fd, length: length, path: path) }
}
