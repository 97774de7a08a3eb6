import Foundation
import Synchronization

/// Bookkeeping of the automatic compaction policy (``EngineOptions/autoCompaction``).
///
/// The dead share is estimated, never measured by I/O: live bytes = the uncompressed size of every live record
/// (key + value + 8, kept up to date by the writer and computed once by a walk of the index the first time the
/// policy is asked) times the compression ratio of the pages this process wrote; dead = the rest of the segment
/// bytes. After a compaction the policy waits for another segment's worth of sealed bytes before it looks again,
/// so a poor estimate cannot make it compact in a loop; after a failed one, until the sealed bytes have doubled,
/// so that damage that stays (a compaction reads its inputs whole) is not read again at every roll.
final class AutoCompactionState: @unchecked Sendable {
    let running = Atomic<Bool>(false)
    // Touched only on the writer thread:
    var liveRawBytes: Int64?
    var rawWritten: UInt64 = 0
    var storedWritten: UInt64 = 0
    private let sealedAfterLastRun = Mutex<UInt64>(0)
    /// Automatic compactions that failed since open, the error of the last one (``EngineStatistics``), and the
    /// sealed bytes below which the policy does not try again.
    private let failures = Mutex<(count: UInt64, last: LucidError?, retryFrom: UInt64)>((0, nil, 0))

    /// Counts a failed run that started with `sealedBytes` sealed, and holds the next one off until they double.
    func noteFailure(_ error: LucidError, sealedBytes: UInt64) {
        failures.withLock { $0 = ($0.count + 1, error, sealedBytes.multipliedReportingOverflow(by: 2).partialValue) }
    }
    /// The count of failed runs and the last one's error, read together.
    var failureRecord: (count: UInt64, last: LucidError?) { failures.withLock { ($0.count, $0.last) } }
    var retryFromSealedBytes: UInt64 { failures.withLock { $0.retryFrom } }

    func noteCompaction(sealedBytes: UInt64) { sealedAfterLastRun.withLock { $0 = sealedBytes } }
    var sealedBytesAfterLastRun: UInt64 { sealedAfterLastRun.withLock { $0 } }

    /// The uncompressed size the estimate counts for a record.
    @inline(__always) static func recordBytes(keyLength: Int, valueLength: UInt32) -> Int64 {
        Int64(keyLength) + Int64(valueLength) + 8
    }
}

extension EngineCore {
    /// On the writer thread, after a roll: starts a background compaction of every sealed segment when the
    /// policy says so and none is running.
    func considerAutoCompaction() {
        guard let policy = options.autoCompaction, !closedFlag.isSet else { return }
        let auto = autoCompaction
        let s = currentState()
        let sealed = sealedBytes(s)
        guard sealed >= policy.minimumSealedBytes,
              sealed >= auto.sealedBytesAfterLastRun + options.segmentSize,
              sealed >= auto.retryFromSealedBytes else { return }
        if auto.liveRawBytes == nil {
            var live: Int64 = 0
            for keyspace in s.keyspaces.values {
                keyspace.primary.forEach { key, location in
                    live += AutoCompactionState.recordBytes(keyLength: key.count, valueLength: location.valueLength)
                    return true
                }
            }
            auto.liveRawBytes = live
        }
        let ratio = auto.rawWritten > 0 ? Double(auto.storedWritten) / Double(auto.rawWritten) : 1
        let total = Double(storeBytes(s))
        let liveStored = Double(max(0, auto.liveRawBytes ?? 0)) * ratio
        guard total > 0, 1 - liveStored / total >= policy.deadRatio else { return }
        guard auto.running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        options.logger.info("starting automatic compaction", metadata: [
            "sealed_bytes": "\(sealed)", "estimated_dead_ratio": "\(1 - liveStored / total)"])
        let thread = Thread { [self] in
            defer { autoCompaction.running.store(false, ordering: .releasing) }
            do {
                _ = try compact(CompactionOptions())
            } catch let error as LucidError where error.code == .closed {
                // Stopped by close(): nothing failed.
            } catch {
                // Nothing is lost (the inputs stay, the manifest is unchanged), but the application must be able to
                // see it: damage found in a sealed segment is reported nowhere else until `verify()`.
                autoCompaction.noteFailure(error as? LucidError ?? LucidError(code: .io, message: "\(error)"),
                                           sealedBytes: sealed)
                options.logger.warning("automatic compaction failed", metadata: ["error": "\(error)"])
            }
        }
        thread.name = "lucid.auto-compaction"
        thread.start()
    }
}
