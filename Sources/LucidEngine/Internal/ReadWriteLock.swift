#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a writer-preferring `pthread_rwlock_t`: many concurrent readers, one writer.
///
/// This is one of the few audited unsafe places: the lock lives at a stable heap address for the object's
/// lifetime and `value` is only touched while the lock is held.
final class ReadWriteLock<Value>: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
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
    }

    /// Runs `body` with shared access.
    @inline(__always)
    func read<R>(_ body: (Value) throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(value)
    }

    /// Runs `body` with exclusive access.
    @inline(__always)
    func write<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body(&value)
    }
}
