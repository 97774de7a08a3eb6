import ArgumentParser
import LucidEngine

/// `lucidctl verify <dir> [--json]`: the full check; exit 0 when clean, otherwise one line per problem.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every page, checksum and sequence of a store, and its index against the log.",
        discussion: """
            Opens the store read-only (strict recovery) and runs the engine's full verify. Prints one line per \
            problem, `FILE:OFFSET: KIND: DETAIL` (KIND is corruption, missing_or_wrong_length, index_mismatch or \
            io), and exits 2; a store that does not even open (damage found by recovery, a torn tail) is one \
            problem. Exits 0 with a summary line when the store is clean.

            \(Lucidctl.exitCodes)
            """
    )

    @Argument(help: "The store directory.")
    var directory: String

    @OptionGroup var output: OutputOptions

    /// A problem as printed: from verify, or the error that stopped the open.
    struct Problem {
        var file: String
        var offset: UInt64?
        var kind: String
        var detail: String
    }

    func run() throws {
        try StoreAccess.requireStore(directory)
        var problems: [Problem] = []
        var report: VerifyReport?
        do {
            let engine = try Engine.open(at: directory, options: StoreAccess.readOptions())
            defer { try? engine.close() }
            let checked = try engine.verify()
            report = checked
            problems = checked.problems.map {
                Problem(file: $0.file, offset: $0.offset, kind: Self.kindName($0.kind), detail: $0.detail)
            }
        } catch let error as LucidError where error.code == .corruption {
            // Recovery found damage (it stops at the first): that is the problem to report.
            problems = [Problem(file: error.file ?? directory, offset: error.offset, kind: "corruption",
                                detail: error.message)]
        } catch {
            throw StoreAccess.failure(error, store: directory)
        }

        if output.json {
            Console.out(JSONText.object([
                ("ok", .bool(problems.isEmpty)),
                ("problems", .array(problems.map { p in
                    .object([("file", .string(p.file)), ("offset", p.offset.map { .uint($0) } ?? .null),
                             ("kind", .string(p.kind)), ("detail", .string(p.detail))])
                })),
                ("segments", report.map { .int(Int64($0.segments)) } ?? .null),
                ("pages", report.map { .int(Int64($0.pages)) } ?? .null),
                ("records", report.map { .int(Int64($0.records)) } ?? .null),
                ("live_keys", report.map { .int(Int64($0.liveKeys)) } ?? .null),
                ("bytes", report.map { .uint($0.bytes) } ?? .null),
            ]).rendered)
        } else if problems.isEmpty, let report {
            Console.out("ok: \(Console.count(report.segments, "segment")), \(Console.count(report.pages, "page")), "
                        + "\(Console.count(report.records, "record")), \(Console.count(report.liveKeys, "live key")), "
                        + "\(Console.bytes(report.bytes)) checked")
        } else {
            for p in problems {
                Console.out("\(p.file):\(p.offset.map(String.init) ?? "-"): \(p.kind): \(p.detail)")
            }
        }
        if !problems.isEmpty {
            if !output.json {
                Console.err("lucidctl: \(directory): \(Console.count(problems.count, "problem")) found; "
                            + "`lucidctl recover \(directory) --out NEWDIR` copies what verifies")
            }
            throw CommandFailure(.corruption, nil)
        }
    }

    /// The stable snake_case name of a problem kind.
    static func kindName(_ kind: VerifyProblem.Kind) -> String {
        switch kind {
        case .corruption: "corruption"
        case .missingOrWrongLength: "missing_or_wrong_length"
        case .indexMismatch: "index_mismatch"
        case .io: "io"
        }
    }
}
