/// lucidctl's exit codes (documented in `lucidctl --help` and the README).
enum ExitStatus: Int32, Sendable {
    /// The command did what it was asked.
    case ok = 0
    /// A usage error, bad input (a malformed line, a bad option value) or an I/O error that is none of the below.
    case badInput = 1
    /// The store is damaged (or `verify` found a problem).
    case corruption = 2
    /// Another process holds the store's lock.
    case locked = 3
    /// No such directory, or a directory that holds no store.
    case noStore = 4
    /// The store was written by a newer format version than this tool reads.
    case newerFormat = 5
}

/// A failure that ends a command with `status`, printing `message` (one line, no stack trace) to standard error.
struct CommandFailure: Error, Sendable {
    var status: ExitStatus
    /// The line to print after `lucidctl: `; nil when the command already printed what went wrong.
    var message: String?

    init(_ status: ExitStatus, _ message: String?) {
        self.status = status
        self.message = message
    }
}
