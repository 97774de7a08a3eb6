/// A measured figure, as the JSON form names it.
public struct Figure: Sendable, Equatable {
    public var workload: String
    public var engine: String
    public var value: Double
    public var unit: String
    /// The round that measured it (0-based; phases outside the rounds are round 0).
    public var round: Int

    public init(workload: String, engine: String, value: Double, unit: String, round: Int = 0) {
        self.workload = workload
        self.engine = engine
        self.value = value
        self.unit = unit
        self.round = round
    }
}

/// An engine of a run as the report needs it: its name, what it is compared with, and its settings.
public struct ReportEngine: Sendable, Equatable {
    /// How the report compares an engine.
    public enum Role: Sendable, Equatable {
        /// A configuration of Lucid's engine: a "÷ best peer" column, never a peer itself.
        case lucidEngine
        /// Another store (LMDB, RocksDB, SQLite, GRDB): a peer of the lucid engine configurations.
        case peer
        /// Lucid's data layer: compared with ``Report/dataLayerBaseline`` (GRDB's record API) only.
        case dataLayer
    }

    public var name: String
    public var role: Role
    /// Settings for the load, read, reopen and size workloads.
    public var settings: String
    /// Settings for the durable commit workloads.
    public var durableSettings: String

    public init(name: String, role: Role, settings: String, durableSettings: String) {
        self.name = name
        self.role = role
        self.settings = settings
        self.durableSettings = durableSettings
    }
}

/// What each workload measures, in report order.
public struct WorkloadInfo: Sendable {
    public var name: String
    public var unit: String
    public var higherIsBetter: Bool
    public var title: String
}
