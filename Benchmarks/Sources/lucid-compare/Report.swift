import Foundation

/// Tables (text, with a Markdown summary) and the JSON form of one run's results.
struct Report {
    let records: Int
    let machine: String
    let results: [Result]
    /// Figures measured alongside the results (the fdatasync ceiling just before each engine's commit phase).
    let context: [Result]
    let engines: [EngineKind]
    let size: RunSize

    private var command: String {
        (["swift run -c release --package-path Benchmarks lucid-compare"]
            + CommandLine.arguments.dropFirst()).joined(separator: " ")
    }

    private func value(_ workload: String, _ engine: String) -> Double? {
        results.first { $0.workload == workload && $0.engine == engine }?.value
    }

    /// Why an engine has no figure for a workload.
    private func missingReason(_ workload: String, _ engine: EngineKind) -> String {
        switch (workload, engine) {
        case ("index_eq", _), ("index_range", _): "no secondary indexes"
        case ("size_after_compaction_bytes", let e) where Self.dataLayer.contains(e):
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

    /// The data-layer engines, compared with GRDB's record API rather than counted as lucid-engine's peers.
    private static let dataLayer: [EngineKind] = [.coreManager, .coreManagerCached, .coreManagerRaw,
                                                   .coreManagerRecords]
    /// The engine's configurations, each compared with the best peer (and never counted as a peer).
    private static let lucidEngines: [EngineKind] = [.lucid, .lucidRaw, .lucidRecords]

    /// The engine configurations of this run, each with a "÷ best peer" column.
    private var comparedLucidEngines: [EngineKind] { engines.filter { Self.lucidEngines.contains($0) } }

    /// A lucid engine configuration's figure over the best peer's, and which peer that is.
    private func ratio(_ info: WorkloadInfo, _ engine: EngineKind = .lucid) -> (Double, String)? {
        guard let lucid = value(info.name, engine.rawValue) else { return nil }
        let peers = engines.filter { !Self.lucidEngines.contains($0) && !Self.dataLayer.contains($0) }
            .compactMap { e in value(info.name, e.rawValue).map { (e, $0) } }
        guard let best = peers.max(by: { info.higherIsBetter ? $0.1 < $1.1 : $0.1 > $1.1 }), best.1 > 0 else {
            return nil
        }
        return (lucid / best.1, best.0.rawValue)
    }

    /// A data-layer engine's figure over GRDB's (both higher-is-better or both lower-is-better as the workload
    /// says; the ratio is always "data layer ÷ grdb").
    private func gRDBRatio(_ info: WorkloadInfo, _ engine: EngineKind) -> Double? {
        guard let mine = value(info.name, engine.rawValue), let grdb = value(info.name, EngineKind.grdb.rawValue),
              grdb > 0 else { return nil }
        return mine / grdb
    }

    /// The data-layer engines of this run that have a figure to compare with GRDB's.
    private var dataLayerEngines: [EngineKind] {
        engines.contains(.grdb) ? engines.filter { Self.dataLayer.contains($0) } : []
    }

    func text() -> String {
        var out: [String] = []
        let valueLength = Records.averageValueLength()
        out.append("lucid-compare: \(formatNumber(Double(records))) records (16-byte keys, JSON-like values of "
                   + "\(valueLength) bytes on average), \(formatNumber(Double(size.commits))) durable commits per "
                   + "commit workload, \(formatNumber(Double(size.queries))) queries per index workload")
        out.append("machine: \(machine)")
        out.append("command: \(command)")
        out.append("")
        out.append("settings for the load, read, reopen and size workloads:")
        for engine in engines { out.append("  \(engine.settings)") }
        out.append("settings for the durable commit workloads (fdatasync or fsync per commit):")
        for engine in engines { out.append("  \(engine.durableSettings)") }
        out.append("Each engine runs each phase in a fresh child process; stores live under a temporary directory.")

        // Engine names in a column wide enough for the longest (lucid-coremanager-cached), 14 at least.
        let nameWidth = max(14, engines.map(\.rawValue.count).max() ?? 0)
        for info in workloadInfos {
            let rows = info.name.hasPrefix("fdatasync_4k") ? ["os"] : engines.map(\.rawValue)
            guard rows.contains(where: { value(info.name, $0) != nil }) else { continue }
            out.append("")
            out.append("\(info.name): \(info.title)")
            out.append("  (\(info.unit), \(info.higherIsBetter ? "higher" : "lower") is better)")
            for row in rows {
                let name = row.padding(toLength: nameWidth, withPad: " ", startingAt: 0)
                if let v = value(info.name, row) {
                    let shown = format(v, unit: info.unit)
                    out.append("  \(name)\(String(repeating: " ", count: max(0, 16 - shown.count)))\(shown)")
                } else if let kind = EngineKind(rawValue: row) {
                    out.append("  \(name)               —   (\(missingReason(info.name, kind)))")
                }
            }
            for engine in comparedLucidEngines {
                if let (r, peer) = ratio(info, engine) {
                    out.append("  \(engine.rawValue) / best peer (\(peer)): \(formatNumber(r, decimals: 2))x")
                }
            }
            for engine in dataLayerEngines {
                if let r = gRDBRatio(info, engine) {
                    out.append("  \(engine.rawValue) / grdb: \(formatNumber(r, decimals: 2))x")
                }
            }
            if info.name == "commit_single" && !context.isEmpty {
                out.append("  fdatasync_4k measured again just before each engine's commit phase (disk latency drifts): "
                           + context.map { "\($0.engine) \(formatNumber($0.value))" }.joined(separator: ", "))
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
    func markdown() -> String {
        let engineColumns = engines.filter { !Self.dataLayer.contains($0) }
        let dataEngines = engines.filter { Self.dataLayer.contains($0) }
        var tables: [String] = []
        if engineColumns.contains(where: { $0 != .grdb }) || dataEngines.isEmpty {
            tables.append(table(engineColumns, ratios: comparedLucidEngines.map { e in
                (e == .lucid ? "lucid" : e.rawValue) + " ÷ best peer"
            }, withProbe: true) { info in
                self.comparedLucidEngines.map { e in
                    self.ratio(info, e).map { "\(formatNumber($0.0, decimals: 2))x (\($0.1))" } ?? "—"
                }
            })
        }
        if !dataEngines.isEmpty {
            tables.append(table((engines.contains(.grdb) ? [.grdb] : []) + dataEngines,
                                ratios: dataLayerEngines.map { "\($0.rawValue) ÷ grdb" },
                                withProbe: tables.isEmpty, onlyWith: dataEngines) { info in
                self.dataLayerEngines.map { e in
                    self.gRDBRatio(info, e).map { "\(formatNumber($0, decimals: 2))x" } ?? "—"
                }
            })
        }
        return tables.joined(separator: "\n\n")
    }

    /// A Markdown table: a row per workload that one of `onlyWith` (default: `columns`) has a figure for, a column
    /// per engine of `columns`, then the `ratios` columns, whose cells `ratioCells` gives per workload. With
    /// `withProbe`, the fdatasync probe's row first.
    private func table(_ columns: [EngineKind], ratios: [String], withProbe: Bool, onlyWith: [EngineKind]? = nil,
                       _ ratioCells: (WorkloadInfo) -> [String]) -> String {
        let names = columns.map(\.rawValue)
        let required = (onlyWith ?? columns).map(\.rawValue)
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
        }
        return lines.joined(separator: "\n")
    }

    func json() -> String {
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
        out += engines.map { "    \(quote($0.rawValue)): \(quote($0.settings + " | durable commits: " + $0.durableSettings))" }
            .joined(separator: ",\n")
        out += "\n  },\n  \"results\": [\n"
        let order = Dictionary(uniqueKeysWithValues: workloadInfos.enumerated().map { ($1.name, $0) })
        let rank = { (engine: String) in EngineKind(rawValue: engine).flatMap { EngineKind.allCases.firstIndex(of: $0) } ?? -1 }
        let sorted = results.sorted {
            (order[$0.workload] ?? 99, rank($0.engine)) < (order[$1.workload] ?? 99, rank($1.engine))
        }
        out += sorted.map {
            "    {\"workload\": \(quote($0.workload)), \"engine\": \(quote($0.engine)), "
                + "\"value\": \(number($0.value)), \"unit\": \(quote($0.unit))}"
        }.joined(separator: ",\n")
        out += "\n  ],\n  \"context\": [\n"
        out += context.map {
            "    {\"name\": \(quote($0.workload + "_before_commits")), \"engine\": \(quote($0.engine)), "
                + "\"value\": \(number($0.value)), \"unit\": \(quote($0.unit))}"
        }.joined(separator: ",\n")
        out += "\n  ]\n}"
        return out
    }
}
