// The fuzz targets, the check each runs, and how a check reports a broken invariant (shared
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

/// A broken invariant. The fuzz targets trap with its message; the replay test records it as an issue.
public struct FuzzCheckFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

@inline(__always)
func fuzzRequire(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw FuzzCheckFailure(message()) }
}

/// The fuzz targets, each with the check it runs on one input.
public enum FuzzTarget: String, CaseIterable, Sendable {
    case page = "FuzzPage"
    case manifest = "FuzzManifest"
    case recovery = "FuzzRecovery"
    case operations = "FuzzOperations"
    case checkpoint = "FuzzCheckpoint"

    public func check(_ input: [UInt8]) throws {
        switch self {
        case .page: try PageChecks.check(input)
        case .manifest: try ManifestChecks.check(input)
        case .recovery: try RecoveryChecks.check(input)
        case .operations: try OperationChecks.check(input)
        case .checkpoint: try CheckpointChecks.check(input)
        }
    }
}
