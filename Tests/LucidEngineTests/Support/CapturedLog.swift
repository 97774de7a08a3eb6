import Logging
import Synchronization

/// Collects what a logger writes at warning level and above, for tests that check a warning was (or was not)
/// logged.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var logger: Logger {
        Logger(label: "lucid.tests.captured") { _ in Handler(log: self) }
    }

    /// The warning (or worse) lines whose message contains `text`, each with its metadata.
    func warnings(containing text: String) -> [String] {
        lines.withLock { $0.filter { $0.contains(text) } }
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let text = "\(event.message) " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                .joined(separator: " ")
            log.lines.withLock { $0.append(text) }
        }
    }
}
