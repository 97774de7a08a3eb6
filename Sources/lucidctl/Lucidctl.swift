import ArgumentParser

/// `lucidctl`: the command-line tool for LucidEngine stores. The root holds only the configuration and the exit
/// code mapping; each subcommand lives in `Commands/<Name>Command.swift`.
@main
struct Lucidctl: ParsableCommand {
    static let exitCodes = """
        Exit codes:
          0  ok
          1  usage error or bad input (also an I/O error that is none of the below)
          2  corruption found (a damaged store, or a problem found by verify)
          3  store locked by another process
          4  no such store (no such directory, or a directory that holds no store)
          5  the store has a newer format version than this tool
        """

    static let configuration = CommandConfiguration(
        commandName: "lucidctl",
        abstract: "Inspect, check, compact, dump, load and recover LucidEngine stores.",
        discussion: """
            Inspection commands (stats, verify, dump, compact --dry-run) open the store read-only in strict \
            recovery mode: they never modify it, and a damaged store (a torn tail included) exits 2. compact and \
            import open it as an application would (a torn, never-acknowledged tail is cut); recover copies \
            what verifies into a new store and never touches the source.

            \(exitCodes)
            """,
        subcommands: [StatsCommand.self, VerifyCommand.self, CompactCommand.self, DumpCommand.self,
                      ImportCommand.self, RecoverCommand.self]
    )

    /// Runs the command and exits with lucidctl's codes: a ``CommandFailure``'s status; 0 for help; 1 for every
    /// usage error (argument-parser's own code for those is 64).
    static func main() {
        let status: Int32
        do {
            var command = try parseAsRoot()
            try command.run()
            status = ExitStatus.ok.rawValue
        } catch let failure as CommandFailure {
            if let message = failure.message { Console.err("lucidctl: " + message) }
            status = failure.status.rawValue
        } catch {
            let message = fullMessage(for: error)
            if exitCode(for: error) == .success {
                if !message.isEmpty { Console.out(message) }
                status = ExitStatus.ok.rawValue
            } else {
                if !message.isEmpty { Console.err(message) }
                status = ExitStatus.badInput.rawValue
            }
        }
        Console.terminate(status)
    }
}

/// The `--json` flag of the commands that have one.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print one JSON object (stable member names) instead of text.")
    var json = false
}
