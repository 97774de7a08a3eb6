#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a writer-preferring `pthread_rwlock_t`: many concurrent readers, one writer.
///
/// This is one of the few audited unsafe places: the lock and the value live at stable heap addresses for the
/// object's lifetime, and the value is only touched while the lock is held. (The value sits behind a pointer
/// rather than in a stored property so that ``read(_:)`` can lend it in place: a class property would be copied,
/// with a retain and release of every reference in it, on each read.)
final class ReadWriteLock<Value>: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private let value: UnsafeMutablePointer<Value>

    init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
        lock = .allocate(capacity: 1)
        var attr = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attr)
        #if canImport(Glibc)
        // Without this glibc prefers readers and a steady stream of them starves the writer.
        pthread_rwlockattr_setkind_np(&attr, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        let rc = pthread_rwlock_init(lock, &attr)
        precondition(rc == 0, "pthread_rwlock_init failed: \(rc)")
        pthread_rwlockattr_destroy(&attr)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with shared access. The value is lent, not copied: a reader that only looks up a field pays
    /// no retain and release of every reference the value holds (`copy` it to keep it).
    @inline(__always)
    func read<R>(_ body: (borrowing Value) throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value.pointee)
    }

    /// Runs `body` with shared access to the value in place, for hot paths that read a field or two: generic
    /// code passes a lent value through a temporary copy (a retain and release of every reference in it), a
    /// pointer it does not. The pointer is valid only during `body`.
    @inline(__always)
    func withReadAccess<R>(_ body: (UnsafePointer<Value>) throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(UnsafePointer(value))
    }

    /// Runs `body` with exclusive access.
    @inline(__always)
    func write<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value.pointee)
    }
}
