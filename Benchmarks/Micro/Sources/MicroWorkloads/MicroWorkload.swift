/// One micro-benchmark: a named hot path, its setup (``make``, outside any measurement) and its measured body
/// (``MicroRunner/run(_:)``). The package-benchmark targets (`LucidEngineMicro`, `LucidDataMicro`) measure time and
/// mallocs of these workloads; `micro-instructions` counts their instructions under callgrind. Both run the same
/// code, from here.
public struct MicroWorkload: Sendable {
    /// The benchmark's name, as package-benchmark and the thresholds files know it.
    public let name: String
    /// Operations per iteration: 1, or 1000 for the `.kilo` benchmarks whose operation is short. Printed figures
    /// are per operation; package-benchmark's stored thresholds are per iteration.
    public let operationsPerIteration: Int
    /// `thresholds check`'s tolerance on mallocs per iteration at p90 (nil: `micro()`'s default).
    public let mallocSlack: Int?
    /// Operations `micro-instructions` counts (after as many uncounted, to warm caches and metadata): 2,000, fewer
    /// for a heavy operation.
    public let countedOperations: Int
    /// Whether its runner is a ``SynchronousMicroRunner`` (package-benchmark then measures a synchronous body, not
    /// a task per iteration).
    public let synchronous: Bool
    /// Sets the workload up (a store preloaded, say), outside any measurement.
    public let make: @Sendable () async throws -> any MicroRunner

    /// A workload whose measured body is asynchronous.
    public init(_ name: String, operationsPerIteration: Int = 1, mallocSlack: Int? = nil,
                countedOperations: Int = 2_000, make: @escaping @Sendable () async throws -> any MicroRunner) {
        self.init(name, operationsPerIteration, mallocSlack, countedOperations, synchronous: false, make)
    }

    /// A workload whose measured body is synchronous (`make` sets it up synchronously too).
    public static func synchronous(
        _ name: String, operationsPerIteration: Int = 1, mallocSlack: Int? = nil,
        countedOperations: Int = 2_000, make: @escaping @Sendable () throws -> any SynchronousMicroRunner
    ) -> MicroWorkload {
        MicroWorkload(name, operationsPerIteration, mallocSlack, countedOperations, synchronous: true, make)
    }

    private init(_ name: String, _ operationsPerIteration: Int, _ mallocSlack: Int?,
                 _ countedOperations: Int, synchronous: Bool,
                 _ make: @escaping @Sendable () async throws -> any MicroRunner) {
        self.name = name
        self.operationsPerIteration = operationsPerIteration
        self.mallocSlack = mallocSlack
        self.countedOperations = countedOperations
        self.synchronous = synchronous
        self.make = make
    }

    /// Every workload: the engine's, then the data layer's.
    public static var all: [MicroWorkload] { engine + data }
}

/// A set-up workload: runs its measured body, then is disposed of (its store closed and removed).
public protocol MicroRunner: AnyObject, Sendable {
    /// Runs the measured operation `operations` times (package-benchmark: an iteration's `operationsPerIteration`).
    /// It continues from where the previous call stopped (new keys, the next query value), as package-benchmark
    /// calls it once per iteration.
    func run(_ operations: Int) async throws
    /// Releases what `make` set up. Called once, after the last `run`.
    func dispose()
}

extension MicroRunner {
    public func dispose() {}
}

/// A runner whose measured body is synchronous.
public protocol SynchronousMicroRunner: MicroRunner {
    /// ``MicroRunner/run(_:)``, synchronously.
    func runNow(_ operations: Int) throws
}

extension SynchronousMicroRunner {
    public func run(_ operations: Int) async throws { try runNow(operations) }
}

/// A synchronous workload without a store: its body only.
public final class ClosureRunner: SynchronousMicroRunner, @unchecked Sendable {
    private let body: (Int) throws -> Void
    /// `body(operations)` runs the measured operation `operations` times.
    public init(_ body: @escaping (Int) throws -> Void) { self.body = body }
    public func runNow(_ operations: Int) throws { try body(operations) }
}

/// Keeps `value` alive and opaque to the optimizer, so that the work producing it is not removed. O(1).
@inline(never) @_optimize(none)
public func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// A 64-bit LCG: a fixed sequence of draws, so that every run of a workload asks for the same keys.
public struct Draws: Sendable {
    private var state: UInt64
    public init(seed: UInt64 = 0x2545_F491_4F6C_DD1D) { state = seed }
    /// The next draw in `0..<bound`.
    public mutating func next(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int(state >> 33) % bound
    }
}
