import Foundation

/// Tables (text, with a Markdown summary) and the JSON form of one run's results.
///
/// A figure measured in several rounds is reported as the median of its rounds'; a ratio of two engines' figures
/// as the median of the rounds' ratios, each dividing two figures of the same round, with the lowest and highest.
public struct Report: Sendable {
    public let records: Int
    public let machine: String
    /// The command line that ran the comparison, as printed with the results.
    public let command: String
    /// The values' average length in bytes, as printed in the header.
    public let valueLength: Int
    public let results: [Figure]
    /// Figures measured alongside the results: the fdatasync ceiling just before each engine's commit phase
    /// (`fdatasync_4k`), and how fast the loads' own work builds records alone (`records_built`).
    public let context: [Figure]
    /// The engines of the run, in report order.
    public let engines: [ReportEngine]
    /// Durable commits per commit workload, and queries per index workload, as printed in the header.
    public let commits: Int
    public let queries: Int
    /// Rounds of the read and commit phases (`--rounds`).
    public let rounds: Int

    /// The engine the data layer's figures are divided by.
    public static let dataLayerBaseline = "grdb"

    public init(records: Int, machine: String, command: String, valueLength: Int, results: [Figure],
                context: [Figure], engines: [ReportEngine], commits: Int, queries: Int, rounds: Int) {
        self.records = records
        self.machine = machine
        self.command = command
        self.valueLength = valueLength
        self.results = results
        self.context = context
        self.engines = engines
        self.commits = commits
        self.queries = queries
        self.rounds = rounds
    }

    /// An engine's figures for a workload, one per round that measured it, in round order.
    func samples(_ workload: String, _ engine: String) -> [Figure] {
        results.filter { $0.workload == workload && $0.engine == engine }.sorted { $0.round < $1.round }
    }

    /// An engine's figure for a workload: the median of its rounds' (the only one, for a phase run once).
    func value(_ workload: String, _ engine: String) -> Double? {
        median(samples(workload, engine).map(\.value))
    }

    /// `engine`'s figure over `other`'s, round by round (each ratio divides two figures taken in the same round,
    /// minutes apart): their median, and the lowest and highest of them.
    func ratios(_ workload: String, _ engine: String, over other: String) -> Ratio? {
        ratios(workload, engine, over: samples(workload, other))
    }

    /// `engine`'s figure for a commit workload over the fdatasync probe measured just before its commit phase in
    /// the same round (the targets' "fdatasync limit"), round by round; nil for the other workloads.
    func probeRatio(_ workload: String, _ engine: String) -> Ratio? {
        guard workload.hasPrefix("commit_") else { return nil }
        return ratios(workload, engine, over: context.filter { $0.workload == "fdatasync_4k" && $0.engine == engine })
    }

    /// `engine`'s figures for `workload` over `theirs`, paired by round.
    private func ratios(_ workload: String, _ engine: String, over theirs: [Figure]) -> Ratio? {
        let theirs = Dictionary(theirs.map { ($0.round, $0.value) }, uniquingKeysWith: { a, _ in a })
        let each = samples(workload, engine).compactMap { mine in
            theirs[mine.round].flatMap { $0 > 0 ? mine.value / $0 : nil }
        }
        guard let middle = median(each), let low = each.min(), let high = each.max() else { return nil }
        return Ratio(median: middle, low: low, high: high, rounds: each.count)
    }

    /// Ratios of two engines' figures over the rounds.
    struct Ratio: Equatable {
        var median: Double
        var low: Double
        var high: Double
        var rounds: Int

        /// `2.85x`, or `2.85x (2.57–3.00)` over several rounds.
        var text: String { text(naming: nil) }

        /// `text`, naming the engine divided by: `2.85x (lmdb)`, `2.85x (lmdb; 2.57–3.00)`.
        func text(naming other: String?) -> String {
            let middle = formatNumber(median, decimals: 2) + "x"
            let range = rounds > 1 ? "\(formatNumber(low, decimals: 2))–\(formatNumber(high, decimals: 2))" : nil
            let notes = [other, range].compactMap { $0 }
            return notes.isEmpty ? middle : middle + " (" + notes.joined(separator: "; ") + ")"
        }
    }

    /// Why an engine has no figure for a workload.
    private func missingReason(_ workload: String, _ engine: ReportEngine) -> String {
        switch workload {
        case "index_eq", "index_range": "no secondary indexes"
        case "size_after_compaction_bytes" where engine.role == .dataLayer:
            "no compaction in the data layer (the engine's is lucid-engine's)"
        default: "failed or not run"
        }
    }

    private func format(_ value: Double, unit: String) -> String {
        switch unit {
        case "bytes" where value >= Double(1 << 20): formatNumber(value / Double(1 << 20), decimals: 1) + " MiB"
        case "bytes": formatNumber(value, decimals: 1) + " B"
        case "ms": formatNumber(value, decimals: 1) + " ms"
        default: formatNumber(value)
        }
    }

    /// The engine configurations of this run, each with a "÷ best peer" column.
    private var comparedLucidEngines: [ReportEngine] { engines.filter { $0.role == .lucidEngine } }

    /// A lucid engine configuration's figure over the best peer's (the peer with the best median), round by
    /// round, and which peer that is.
    func ratio(_ info: WorkloadInfo, _ engine: String) -> (Ratio, String)? {
        let peers = engines.filter { $0.role == .peer }.compactMap { e in value(info.name, e.name).map { (e.name, $0) } }
        guard let best = peers.max(by: { info.higherIsBetter ? $0.1 < $1.1 : $0.1 > $1.1 }),
              let r = ratios(info.name, engine, over: best.0) else { return nil }
        return (r, best.0)
    }

    /// A data-layer engine's figure over GRDB's, round by round (both higher-is-better or both lower-is-better as
    /// the workload says; the ratio is always "data layer ÷ grdb").
    private func gRDBRatio(_ info: WorkloadInfo, _ engine: ReportEngine) -> Ratio? {
        ratios(info.name, engine.name, over: Self.dataLayerBaseline)
    }

    /// Whether the run has the engine the data layer is compared with.
    private var hasBaseline: Bool { engines.contains { $0.name == Self.dataLayerBaseline } }

    /// The data-layer engines of this run that have a figure to compare with GRDB's.
    private var dataLayerEngines: [ReportEngine] { hasBaseline ? engines.filter { $0.role == .dataLayer } : [] }

    /// The context figures by engine, in run order: each engine's name and its rounds' figures (`4,350/4,512`).
    private var contextByEngine: [(engine: String, values: String)] {
        var order: [String] = []
        var figures: [String: [String]] = [:]
        for c in context.sorted(by: { $0.round < $1.round }) where c.workload == "fdatasync_4k" {
            if figures[c.engine] == nil { order.append(c.engine) }
            figures[c.engine, default: []].append(formatNumber(c.value))
        }
        return order.map { ($0, figures[$0, default: []].joined(separator: "/")) }
    }

    /// The report as text: the run's header and settings, a table per workload (every round's figure, each
    /// lucid engine configuration's ratio to the best peer, each data-layer configuration's to GRDB, commit rates
    /// over their fdatasync probes), then ``markdown()``.
    public func text() -> String {
        var out: [String] = []
        out.append("lucid-compare: \(formatNumber(Double(records))) records (16-byte keys, JSON-like values of "
                   + "\(valueLength) bytes on average), \(formatNumber(Double(commits))) durable commits per "
                   + "commit workload, \(formatNumber(Double(queries))) queries per index workload")
        out.append("machine: \(machine)")
        out.append("command: \(command)")
        out.append("")
        out.append("settings for the load, read, reopen and size workloads:")
        for engine in engines { out.append("  \(engine.settings)") }
        out.append("settings for the durable commit workloads (fdatasync or fsync per commit):")
        for engine in engines { out.append("  \(engine.durableSettings)") }
        out.append("Each engine runs each phase in a fresh child process; stores live under a temporary directory.")
        if rounds > 1 {
            out.append("The read and commit phases ran \(rounds) rounds, every engine in turn in each: a figure is the "
                       + "median of its rounds', a ratio the median of the rounds' ratios (lowest–highest in brackets).")
        }

        // Engine names in a column wide enough for the longest (lucid-coremanager-cached), 14 at least.
        let nameWidth = max(14, engines.map(\.name.count).max() ?? 0)
        for info in workloadInfos {
            let rows = info.name.hasPrefix("fdatasync_4k") ? ["os"] : engines.map(\.name)
            guard rows.contains(where: { value(info.name, $0) != nil }) else { continue }
            out.append("")
            out.append("\(info.name): \(info.title)")
            out.append("  (\(info.unit), \(info.higherIsBetter ? "higher" : "lower") is better)")
            for row in rows {
                let name = row.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
                if let v = value(info.name, row) {
                    let shown = format(v, unit: info.unit)
                    let each = samples(info.name, row)
                    let spread = each.count > 1
                        ? "   (median of \(each.count) rounds: " + each.map { format($0.value, unit: info.unit) }
                            .joined(separator: ", ") + ")"
                        : ""
                    out.append("  \(name)\(String(repeating: " ", count: max(0, 16 - shown.count)))\(shown)\(spread)")
                } else if let kind = engines.first(where: { $0.name == row }) {
                    out.append("  \(name)               —   (\(missingReason(info.name, kind)))")
                }
            }
            for engine in comparedLucidEngines {
                if let (r, peer) = ratio(info, engine.name) {
                    out.append("  \(engine.name) / best peer (\(peer)): \(r.text)")
                }
            }
            for engine in dataLayerEngines {
                if let r = gRDBRatio(info, engine) {
                    out.append("  \(engine.name) / \(Self.dataLayerBaseline): \(r.text)")
                }
            }
            if info.name == "load_seq", let built = context.first(where: { $0.workload == "records_built" }) {
                out.append("  the loads' own record building, alone on one thread (keys and values, no store): "
                           + "\(formatNumber(built.value)) records/s")
            }
            let overProbe = rows.compactMap { row in probeRatio(info.name, row).map { "\(row) \($0.text)" } }
            if !overProbe.isEmpty {
                out.append("  over the fdatasync probe measured just before the engine's commit phase, round by round: "
                           + overProbe.joined(separator: ", "))
            }
            if info.name == "commit_single" && !contextByEngine.isEmpty {
                out.append("  fdatasync_4k measured again just before each engine's commit phase (disk latency drifts): "
                           + contextByEngine.map { "\($0.engine) \($0.values)" }.joined(separator: ", "))
            }
        }

        out.append("")
        out.append("Summary (Markdown):")
        out.append("")
        out.append(markdown())
        return out.joined(separator: "\n")
    }

    /// Two tables. The engines': a column per engine configuration and peer (LMDB, RocksDB, SQLite, GRDB),
    /// then each lucid engine configuration's ratio to the best peer. The data layer's: GRDB and a column per
    /// data-layer configuration, then each one's ratio to GRDB (only workloads the data layer runs). Either is
    /// left out when the run has none of its engines.
    public func markdown() -> String {
        let engineColumns = engines.filter { $0.role != .dataLayer }
        let dataEngines = engines.filter { $0.role == .dataLayer }
        var tables: [String] = []
        if engineColumns.contains(where: { $0.name != Self.dataLayerBaseline }) || dataEngines.isEmpty {
            tables.append(table(engineColumns, ratios: comparedLucidEngines.map { e in
                (e.name == "lucid-engine" ? "lucid" : e.name) + " ÷ best peer"
            }, withProbe: true) { info in
                self.comparedLucidEngines.map { e in
                    self.ratio(info, e.name).map { $0.0.text(naming: $0.1) } ?? "—"
                }
            })
        }
        if !dataEngines.isEmpty {
            tables.append(table(engines.filter { $0.name == Self.dataLayerBaseline } + dataEngines,
                                ratios: dataLayerEngines.map { "\($0.name) ÷ \(Self.dataLayerBaseline)" },
                                withProbe: tables.isEmpty, onlyWith: dataEngines) { info in
                self.dataLayerEngines.map { e in self.gRDBRatio(info, e)?.text ?? "—" }
            })
        }
        return tables.joined(separator: "\n\n")
    }

    /// A Markdown table: a row per workload that one of `onlyWith` (default: `columns`) has a figure for, a column
    /// per engine of `columns`, then the `ratios` columns, whose cells `ratioCells` gives per workload. With
    /// `withProbe`, the fdatasync probe's row first.
    private func table(_ columns: [ReportEngine], ratios: [String], withProbe: Bool, onlyWith: [ReportEngine]? = nil,
                       _ ratioCells: (WorkloadInfo) -> [String]) -> String {
        let names = columns.map(\.name)
        let required = (onlyWith ?? columns).map(\.name)
        var lines = ["| workload | unit | " + (names + ratios).joined(separator: " | ") + " |",
                     "|---|---|" + String(repeating: "---:|", count: names.count + ratios.count)]
        for info in workloadInfos {
            if info.name.hasPrefix("fdatasync_4k") {
                if withProbe, let v = value(info.name, "os") {
                    lines.append("| \(info.name) (os) | ops/s | \(format(v, unit: info.unit))"
                                 + String(repeating: " |", count: names.count + ratios.count))
                }
                continue
            }
            guard required.contains(where: { value(info.name, $0) != nil }) else { continue }
            let cells = names.map { n in value(info.name, n).map { format($0, unit: info.unit) } ?? "—" }
            let unit = info.unit + (info.higherIsBetter ? " ↑" : " ↓")
            lines.append("| \(info.name) | \(unit) | " + (cells + ratioCells(info)).joined(separator: " | ") + " |")
            if names.contains(where: { probeRatio(info.name, $0) != nil }) {
                let over = names.map { n in probeRatio(info.name, n)?.text ?? "—" }
                lines.append("| \(info.name) ÷ its fdatasync probe | × ↑ | "
                             + (over + ratios.map { _ in "" }).joined(separator: " | ") + " |")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The report as JSON: `{"records", "machine", "command", "settings", "results": [{"workload", "engine",
    /// "value", "unit"[, "samples"]}], "context": [...]}`, a result's value the median of its rounds' (`samples`,
    /// in round order, when there were several).
    public func json() -> String {
        func quote(_ s: String) -> String {
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\t": out += "\\t"
                default:
                    if scalar.value < 0x20 {
                        out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                            + String(scalar.value, radix: 16)
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
            return out + "\""
        }
        func number(_ v: Double) -> String {
            v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
        }
        var out = "{\n  \"records\": \(records),\n  \"machine\": \(quote(machine)),\n"
        out += "  \"command\": \(quote(command)),\n  \"settings\": {\n"
        out += engines.map { "    \(quote($0.name)): \(quote($0.settings + " | durable commits: " + $0.durableSettings))" }
            .joined(separator: ",\n")
        out += "\n  },\n  \"results\": [\n"
        let order = Dictionary(uniqueKeysWithValues: workloadInfos.enumerated().map { ($1.name, $0) })
        let rank = { (engine: String) in self.engines.firstIndex { $0.name == engine } ?? -1 }
        let sorted = results.sorted {
            (order[$0.workload] ?? 99, rank($0.engine)) < (order[$1.workload] ?? 99, rank($1.engine))
        }
        // One entry per workload and engine: the median, with every round's figure when there were several.
        var seen = Set<String>()
        let firsts = sorted.filter { seen.insert($0.workload + "\t" + $0.engine).inserted }
        out += firsts.map { first in
            let each = samples(first.workload, first.engine)
            let median = value(first.workload, first.engine) ?? first.value
            return "    {\"workload\": \(quote(first.workload)), \"engine\": \(quote(first.engine)), "
                + "\"value\": \(number(median)), \"unit\": \(quote(first.unit))"
                + (each.count > 1 ? ", \"samples\": [" + each.map { number($0.value) }.joined(separator: ", ") + "]" : "")
                + "}"
        }.joined(separator: ",\n")
        out += "\n  ],\n  \"context\": [\n"
        out += context.map {
            "    {\"name\": \(quote($0.workload == "fdatasync_4k" ? $0.workload + "_before_commits" : $0.workload)), \"engine\": \(quote($0.engine)), "
                + "\"value\": \(number($0.value)), \"unit\": \(quote($0.unit)), \"round\": \($0.round + 1)}"
        }.joined(separator: ",\n")
        out += "\n  ]\n}"
        return out
    }
}
