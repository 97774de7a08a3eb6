import CompareReport
import Foundation
import Testing

/// The comparison's report: the figures and ratios it prints are what the README's tables and the issue's targets
/// quote, so its arithmetic (medians, ratios paired by round, the best peer, the commit rates over their fdatasync
/// probes) and its formats are checked on figures made up for the purpose.
@Suite("Comparison report")
struct ReportTests {
    static let engines = [
        ReportEngine(name: "lucid-engine", role: .lucidEngine, settings: "lucid settings", durableSettings: "sync"),
        ReportEngine(name: "lmdb", role: .peer, settings: "lmdb settings", durableSettings: "sync"),
        ReportEngine(name: "rocksdb", role: .peer, settings: "rocksdb settings", durableSettings: "sync"),
        ReportEngine(name: "grdb", role: .peer, settings: "grdb settings", durableSettings: "sync"),
        ReportEngine(name: "lucid-coremanager", role: .dataLayer, settings: "cm settings", durableSettings: "sync"),
    ]

    /// `values` of `engine` for `workload`, one per round from round 0.
    static func rounds(_ workload: String, _ engine: String, _ values: [Double], unit: String = "ops/s") -> [Figure] {
        values.enumerated().map { Figure(workload: workload, engine: engine, value: $1, unit: unit, round: $0) }
    }

    static func report(_ results: [Figure], context: [Figure] = [], machine: String = "test machine") -> Report {
        Report(records: 1000, machine: machine, command: "lucid-compare --test", valueLength: 200, results: results,
               context: context, engines: engines, commits: 10, queries: 20, rounds: 3)
    }

    /// The text report's lines that start with `prefix` (leading spaces ignored).
    static func lines(_ text: String, _ prefix: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix(prefix) }
    }

    @Test("medians: the middle value, the mean of the two middle ones, nil for none")
    func medians() {
        #expect(median([3, 1, 2]) == 2)
        #expect(median([4, 1, 3, 2]) == 2.5)
        #expect(median([7]) == 7)
        #expect(median([]) == nil)
    }

    @Test("numbers: thousands separators, rounded decimals, a sign only on what is not zero once rounded")
    func numbers() {
        #expect(formatNumber(999) == "999")
        #expect(formatNumber(1000) == "1,000")
        #expect(formatNumber(1_234_567.891, decimals: 2) == "1,234,567.89")
        #expect(formatNumber(0.005, decimals: 2) == "0.01")
        #expect(formatNumber(-1500.4) == "-1,500")
        #expect(formatNumber(-0.001, decimals: 2) == "0.00")
        #expect(formatNumber(.nan) == "0")
    }

    @Test("an engine's ratio to the best peer is the median of the rounds' ratios, the best peer chosen by its median, higher or lower being better as the workload says")
    func bestPeerRatios() {
        let text = Self.report(
            Self.rounds("get_random", "lucid-engine", [100, 200, 300]) + Self.rounds("get_random", "lmdb", [100, 100, 100])
                + Self.rounds("get_random", "rocksdb", [50, 400, 50])
                + Self.rounds("reopen_ms", "lucid-engine", [10, 10, 10], unit: "ms")
                + Self.rounds("reopen_ms", "lmdb", [20, 20, 20], unit: "ms")
                + Self.rounds("reopen_ms", "rocksdb", [5, 4, 8], unit: "ms")
        ).text()
        // get_random: rocksdb's best round (400) does not make it the best peer; its median (50) is lmdb's half.
        #expect(Self.lines(text, "lucid-engine / best peer") == [
            "lucid-engine / best peer (lmdb): 2.00x (1.00–3.00)",
            "lucid-engine / best peer (rocksdb): 2.00x (1.25–2.50)",
        ])
        #expect(Self.lines(text, "lucid-engine").contains { $0.hasPrefix("lucid-engine") && $0.contains("200   (median of 3 rounds: 100, 200, 300)") })
        #expect(text.contains("| get_random | gets/s ↑ | 200 | 100 | 50 | — | 2.00x (lmdb; 1.00–3.00) |"))
        #expect(text.contains("| reopen_ms | ms ↓ | 10.0 ms | 20.0 ms | 5.0 ms | — | 2.00x (rocksdb; 1.25–2.50) |"))
    }

    @Test("ratios pair figures of the same round: a round one engine lacks is left out of the ratio")
    func pairedByRound() {
        let results = Self.rounds("get_random", "lucid-engine", [100, 900, 300])
            + [Figure(workload: "get_random", engine: "lmdb", value: 100, unit: "ops/s", round: 0),
               Figure(workload: "get_random", engine: "lmdb", value: 100, unit: "ops/s", round: 2)]
        let text = Self.report(results).text()
        // Not 900 / 100: lmdb has no figure in round 1. The two ratios' median is their mean.
        #expect(Self.lines(text, "lucid-engine / best peer") == ["lucid-engine / best peer (lmdb): 2.00x (1.00–3.00)"])
    }

    @Test("the data layer is compared with GRDB alone, in a table of its own; without GRDB it has no ratio")
    func dataLayerRatios() {
        let results = Self.rounds("get_random", "lucid-coremanager", [300, 600, 900])
            + Self.rounds("get_random", "grdb", [100, 200, 300]) + Self.rounds("get_random", "lmdb", [1, 1, 1])
        let text = Self.report(results).text()
        #expect(Self.lines(text, "lucid-coremanager / grdb") == ["lucid-coremanager / grdb: 3.00x (3.00–3.00)"])
        #expect(text.contains("| get_random | gets/s ↑ | 200 | 600 | 3.00x (3.00–3.00) |"))
        // GRDB is lmdb's peer in the engines' table, where lucid-engine has no figure.
        #expect(text.contains("| get_random | gets/s ↑ | — | 1 | — | 200 | — |"))

        let withoutGRDB = Report(records: 1, machine: "m", command: "c", valueLength: 1, results: results,
                                 context: [], engines: Self.engines.filter { $0.name != "grdb" }, commits: 1,
                                 queries: 1, rounds: 3).text()
        #expect(Self.lines(withoutGRDB, "lucid-coremanager / grdb").isEmpty)
    }

    @Test("only the commit workloads get a row over the fdatasync probe measured before the engine's commit phase in the same round")
    func probeRatios() {
        let results = Self.rounds("commit_single", "lucid-engine", [900, 1000, 1100])
            + Self.rounds("commit_single", "lmdb", [500, 500, 500]) + Self.rounds("get_random", "lucid-engine", [5, 5, 5])
        let context = Self.rounds("fdatasync_4k", "lucid-engine", [1000, 1000, 1000])
            + Self.rounds("fdatasync_4k", "lmdb", [250, 1000, 500])
        let report = Self.report(results, context: context)
        let text = report.text()
        #expect(Self.lines(text, "over the fdatasync probe") == [
            "over the fdatasync probe measured just before the engine's commit phase, round by round: "
                + "lucid-engine 1.00x (0.90–1.10), lmdb 1.00x (0.50–2.00)",
        ])
        #expect(text.contains("| commit_single ÷ its fdatasync probe | × ↑ | 1.00x (0.90–1.10) | 1.00x (0.50–2.00) | — | — |  |"))
        #expect(!text.contains("| get_random ÷ its fdatasync probe"))
        #expect(Self.lines(text, "fdatasync_4k measured again") == [
            "fdatasync_4k measured again just before each engine's commit phase (disk latency drifts): "
                + "lucid-engine 1,000/1,000/1,000, lmdb 250/1,000/500",
        ])
    }

    @Test("a workload an engine has no figure for says why, and one no engine has is left out")
    func missingFigures() {
        let text = Self.report(Self.rounds("index_eq", "lucid-engine", [10, 10, 10])).text()
        #expect(Self.lines(text, "lmdb").contains { $0.contains("—   (no secondary indexes)") })
        #expect(!text.contains("scan: "))
    }

    @Test("the JSON form gives each workload and engine once, in report order, its median with the rounds' samples, and the context with 1-based rounds; text is escaped")
    func json() throws {
        let results = Self.rounds("get_random", "lmdb", [1, 2, 4]) + Self.rounds("get_random", "lucid-engine", [3, 1, 2])
            + [Figure(workload: "load_seq", engine: "lucid-engine", value: 1.5, unit: "records/s")]
        let context = [Figure(workload: "fdatasync_4k", engine: "lmdb", value: 100, unit: "ops/s", round: 1)]
        let machine = "a \"quoted\"\nmachine\t\u{1}"
        let data = Data(Self.report(results, context: context, machine: machine).json().utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["records"] as? Int == 1000)
        #expect(object["machine"] as? String == machine)
        let entries = try #require(object["results"] as? [[String: Any]])
        #expect(entries.map { "\($0["workload"]!)/\($0["engine"]!)" }
                == ["load_seq/lucid-engine", "get_random/lucid-engine", "get_random/lmdb"])
        #expect(entries[0]["value"] as? Double == 1.5 && entries[0]["samples"] == nil)
        #expect(entries[1]["value"] as? Double == 2 && entries[1]["samples"] as? [Double] == [3, 1, 2])
        #expect(entries[2]["value"] as? Double == 2 && entries[2]["unit"] as? String == "ops/s")
        let contextEntries = try #require(object["context"] as? [[String: Any]])
        #expect(contextEntries.count == 1)
        #expect(contextEntries[0]["name"] as? String == "fdatasync_4k_before_commits")
        #expect(contextEntries[0]["round"] as? Int == 2)
        let settings = try #require(object["settings"] as? [String: String])
        #expect(settings["lmdb"] == "lmdb settings | durable commits: sync")
    }
}
