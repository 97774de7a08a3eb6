import LucidEngine
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FaultFileSystem {
    /// The kinds of operation a fault can target, and that ``FaultFileSystem/operationCount(_:)`` counts.
    ///
    /// Every attempt counts, including one that fails (injected or not). Queries (`fileExists`,
    /// `directoryExists`, `contentsOfDirectory`, `size`), `close` and `unlock` are neither counted nor faulted.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        /// ``FaultFileSystem/openFile(at:mode:)``.
        case open
        /// ``FileHandle/read(at:count:)``.
        case read
        /// ``FileHandle/write(_:at:)``.
        case write
        /// ``FileHandle/sync()``.
        case sync
        /// ``FileHandle/truncate(to:)``.
        case truncate
        /// ``FaultFileSystem/rename(from:to:)``.
        case rename
        /// ``FaultFileSystem/removeFile(at:)``.
        case remove
        /// ``FaultFileSystem/syncDirectory(at:)``.
        case syncDirectory
        /// ``FaultFileSystem/createDirectory(at:)``.
        case createDirectory
        /// ``FaultFileSystem/lockFile(at:pid:)``.
        case lock
    }

    /// A fault to inject: the `nth` operation of one of the kinds in `operations` (optionally only on paths
    /// accepted by `pathFilter`), counted from when the rule is added, throws
    /// `LucidError(code: .io, errno: errno)`; with `persistent`, every later matching operation throws too.
    ///
    /// A failed operation has no effect, except:
    /// - a write with `shortWrite` first writes a prefix of its bytes (half, rounded down to a whole number of
    ///   sectors when that is not zero), like a disk that filled up mid-write (use `ENOSPC`);
    /// - a sync never changes the durable bytes; with `dropsDirtyData` it also throws the dirty data away as
    ///   Linux does after a writeback error ("fsyncgate"): reads still return it, but no later successful sync
    ///   makes it durable, so a caller that retries the sync and trusts it loses that data in a crash.
    public struct FaultRule: Sendable {
        /// The kinds of operation the rule counts and fails.
        public var operations: Set<Operation>
        /// Which matching operation fails, counting from 1 when the rule is added.
        public var nth: Int
        /// The errno of the thrown ``LucidError`` (`EIO`, `ENOSPC`, ...).
        public var errno: Int32
        /// When true, the `nth` and every later matching operation fail; otherwise only the `nth`.
        public var persistent: Bool
        /// Writes only: write a prefix before throwing.
        public var shortWrite: Bool
        /// Syncs only: the failed sync also discards the file's dirty data (see the type's documentation).
        public var dropsDirtyData: Bool
        /// When set, only operations on a path it accepts match (the normalized path; for a rename, either
        /// path). Handle operations use the path the handle was opened with.
        public var pathFilter: (@Sendable (String) -> Bool)?

        /// Creates a rule; see the properties. `nth` must be at least 1.
        public init(operations: Set<Operation>, nth: Int = 1, errno: Int32 = EIO, persistent: Bool = false,
                    shortWrite: Bool = false, dropsDirtyData: Bool = false,
                    pathFilter: (@Sendable (String) -> Bool)? = nil) {
            precondition(nth >= 1, "nth counts from 1")
            self.operations = operations
            self.nth = nth
            self.errno = errno
            self.persistent = persistent
            self.shortWrite = shortWrite
            self.dropsDirtyData = dropsDirtyData
            self.pathFilter = pathFilter
        }

        func matches(_ kind: Operation, _ paths: [String]) -> Bool {
            guard operations.contains(kind) else { return false }
            guard let pathFilter else { return true }
            return paths.contains(where: pathFilter)
        }
    }

    /// Identifies a rule added with ``FaultFileSystem/addFault(_:)``, for ``FaultFileSystem/removeFault(_:)``.
    public struct FaultRuleID: Hashable, Sendable {
        let value: Int
    }

    /// Adds a fault rule. Several rules may be active; each counts matching operations on its own; when several
    /// fire on one operation the oldest decides the error. A non-persistent rule is removed once it has fired.
    @discardableResult
    public func addFault(_ rule: FaultRule) -> FaultRuleID {
        state.withLock { s in
            let id = s.nextRuleID
            s.nextRuleID += 1
            s.rules.append(FaultFSActiveRule(id: id, rule: rule))
            return FaultRuleID(value: id)
        }
    }

    /// Makes the `nth` operation of one of `kinds` (counted from now, from 1) fail with `errno`, and every later
    /// one too when `persistent`. Shorthand for ``addFault(_:)`` with a ``FaultRule``; see it for `shortWrite`,
    /// `dropsDirtyData` and `pathFilter`.
    ///
    /// To model the process dying at operation N, use `failOperation(Set(Operation.allCases), nth: N,
    /// persistent: true)`, run the workload, then ``crash(policy:seed:)``.
    @discardableResult
    public func failOperation(_ kinds: Set<Operation>, nth: Int, errno: Int32 = EIO, persistent: Bool = false,
                              shortWrite: Bool = false, dropsDirtyData: Bool = false,
                              pathFilter: (@Sendable (String) -> Bool)? = nil) -> FaultRuleID {
        addFault(FaultRule(operations: kinds, nth: nth, errno: errno, persistent: persistent,
                           shortWrite: shortWrite, dropsDirtyData: dropsDirtyData, pathFilter: pathFilter))
    }

    /// Removes one rule (no effect when it already fired and was removed).
    public func removeFault(_ id: FaultRuleID) {
        state.withLock { s in s.rules.removeAll { $0.id == id.value } }
    }

    /// Removes every fault rule. Operation counts are kept.
    public func clearFaults() {
        state.withLock { $0.rules.removeAll() }
    }

    /// How many operations of `kind` were attempted on this instance (since creation or
    /// ``resetOperationCounts()``), failed ones included.
    public func operationCount(_ kind: Operation) -> Int {
        state.withLock { $0.counts[kind, default: 0] }
    }

    /// How many counted operations of any kind were attempted (see ``operationCount(_:)``).
    public var totalOperationCount: Int {
        state.withLock { $0.counts.values.reduce(0, +) }
    }

    /// How many operations failed because of an injected fault. A "fail the N-th op" loop can stop once a run
    /// ends with this still 0 (N was past the end of the workload).
    public var injectedFaultCount: Int {
        state.withLock { $0.injectedFaultCount }
    }

    /// Sets every operation count (and ``injectedFaultCount``) back to 0. Active rules keep their own counts.
    public func resetOperationCounts() {
        state.withLock { s in
            s.counts.removeAll()
            s.injectedFaultCount = 0
        }
    }
}

/// A rule plus how many matching operations it has seen.
struct FaultFSActiveRule: Sendable {
    var id: Int
    var rule: FaultFileSystem.FaultRule
    var seen = 0
}

extension FaultFSState {
    /// Counts one operation and returns the rule that makes it fail, if any (removing a spent one-shot rule).
    mutating func injectedFault(_ kind: FaultFileSystem.Operation, _ paths: [String]) -> FaultFileSystem.FaultRule? {
        counts[kind, default: 0] += 1
        var fired: FaultFileSystem.FaultRule?
        var index = 0
        while index < rules.count {
            guard rules[index].rule.matches(kind, paths) else {
                index += 1
                continue
            }
            rules[index].seen += 1
            let active = rules[index]
            let fires = active.seen == active.rule.nth || (active.rule.persistent && active.seen > active.rule.nth)
            if fires {
                if fired == nil { fired = active.rule }
                if !active.rule.persistent {
                    rules.remove(at: index)
                    continue
                }
            }
            index += 1
        }
        if fired != nil { injectedFaultCount += 1 }
        return fired
    }

    /// Counts one operation and throws the injected error when a rule fires.
    mutating func failIfInjected(_ kind: FaultFileSystem.Operation, _ operation: String, _ paths: [String]) throws {
        if let rule = injectedFault(kind, paths) {
            throw FaultFSErrors.io(operation, paths.first ?? "", rule.errno, injected: true)
        }
    }
}
