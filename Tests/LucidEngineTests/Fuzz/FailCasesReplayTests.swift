// Replays every saved input of the engine's fuzz targets (`Fuzz/FailCases/<target>/` and `Fuzz/Corpus/<target>/`)
// through the checks the targets run (`FuzzTarget.check`), without a sanitizer build. The checks live beside this
// file and are compiled into the Fuzz package too (see `FuzzInput.swift`); this suite is compiled here only.

import Foundation
import Testing

@Suite("Fuzz FailCases replay")
struct FailCasesReplayTests {
    /// `Fuzz/` of this checkout, found from this file's path.
    static let fuzzDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(_ folder: String, _ target: FuzzTarget) -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
    }

    /// `Fuzz/FailCases/KNOWN-ISSUES`: "<target>/<file> <reason>" for findings whose engine fix is pending.
    static let knownIssues: [String: String] = {
        let url = fuzzDirectory.appendingPathComponent("FailCases/KNOWN-ISSUES")
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        var issues: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if let name = parts.first { issues[String(name)] = parts.count > 1 ? String(parts[1]) : "known issue" }
        }
        return issues
    }()

    /// Every input that ever crashed a target or broke one of its checks, and the committed seed corpus. Inputs
    /// listed in KNOWN-ISSUES are expected to fail (and this test fails when one no longer does).
    @Test(.heavy, arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let failCases = Self.inputs("FailCases", target)
        let seeds = Self.inputs("Corpus", target)
        // Every engine target has committed seeds: none found means the folder was not found, and nothing replayed.
        #expect(!seeds.isEmpty, "Fuzz/Corpus/\(target.rawValue) has no inputs at \(Self.fuzzDirectory.path)")
        var known = 0
        for url in failCases + seeds {
            let bytes = try [UInt8](Data(contentsOf: url))
            if let reason = Self.knownIssues["\(target.rawValue)/\(url.lastPathComponent)"] {
                known += 1
                withKnownIssue(Comment(rawValue: reason)) { try target.check(bytes) }
                continue
            }
            do {
                try target.check(bytes)
            } catch let failure as FuzzCheckFailure {
                Issue.record("\(target.rawValue) \(url.lastPathComponent): \(failure)")
            }
        }
        print("\(target.rawValue): replayed \(failCases.count) FailCases (\(known) known issues) and \(seeds.count) corpus inputs")
    }
}
