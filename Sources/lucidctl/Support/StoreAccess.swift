import Foundation
import LucidEngine
import Logging

/// Finding and opening stores, and turning engine errors into one-line messages with lucidctl's exit codes.
enum StoreAccess {
    /// What a path holds.
    enum Kind: Equatable {
        case missing
        case notADirectory
        case emptyDirectory
        /// A directory with a manifest slot or a segment file.
        case store
        /// A directory with other files only.
        case otherFiles
    }

    /// Looks at `path` without opening anything.
    static func kind(of path: String) -> Kind {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return .missing }
        guard isDirectory.boolValue else { return .notADirectory }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        if names.isEmpty { return .emptyDirectory }
        return names.contains(where: isStoreFile) ? .store : .otherFiles
    }

    /// The directory holding `path`: `.` for a bare name, `/` for a top-level one (trailing slashes ignored).
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// `MANIFEST-0`, `MANIFEST-1` or a segment (`NNNNNNNNNNNNNNNN.seg`, 16 hex digits): docs/FORMAT.md.
    static func isStoreFile(_ name: String) -> Bool {
        if name == "MANIFEST-0" || name == "MANIFEST-1" { return true }
        let utf8 = Array(name.utf8)
        guard utf8.count == 20, name.hasSuffix(".seg") else { return false }
        return utf8.prefix(16).allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }
    }

    /// Exit 4 unless `path` is a directory holding a store.
    static func requireStore(_ path: String) throws(CommandFailure) {
        switch kind(of: path) {
        case .store: return
        case .missing: throw CommandFailure(.noStore, "\(path): no such directory")
        case .notADirectory: throw CommandFailure(.noStore, "\(path): not a directory")
        case .emptyDirectory, .otherFiles: throw CommandFailure(.noStore, "\(path): not a store (no MANIFEST or segment files)")
        }
    }

    /// Engine options shared by every command: no automatic compaction, only warnings logged (to stderr).
    static func baseOptions() -> EngineOptions {
        var options = EngineOptions()
        options.autoCompaction = nil
        var logger = Logger(label: "lucidctl") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = .warning
        options.logger = logger
        return options
    }

    /// Opens an existing store for inspection: strict recovery (any damage, a torn tail included, fails the open)
    /// and no checkpoint on close, so the store's files stay as they are.
    static func openForReading(_ path: String) throws(CommandFailure) -> Engine {
        try requireStore(path)
        return try open(path, readOptions())
    }

    /// The options of ``openForReading(_:)``.
    static func readOptions() -> EngineOptions {
        var options = baseOptions()
        options.recoveryMode = .strict
        options.createIfMissing = false
        options.checkpointOnClose = false
        return options
    }

    /// Opens a store for writing with the usual point-in-time recovery (a torn, never-acknowledged tail is cut),
    /// creating it when `create` is true.
    static func openForWriting(_ path: String, create: Bool) throws(CommandFailure) -> Engine {
        var options = baseOptions()
        options.createIfMissing = create
        let engine = try open(path, options)
        let report = engine.recoveryReport
        if report.droppedBytes > 0 {
            Console.err("lucidctl: note: recovery cut \(report.droppedBytes) bytes (\(report.droppedPages) pages) of an "
                        + "unfinished write from \(report.truncatedFile ?? path)")
        }
        return engine
    }

    private static func open(_ path: String, _ options: EngineOptions) throws(CommandFailure) -> Engine {
        do {
            return try Engine.open(at: path, options: options)
        } catch {
            throw failure(error, store: path)
        }
    }

    /// The one-line message and exit status for an error from the engine (or anything else).
    /// Runs `body`, turning what it throws into the command failure for the store at `path`.
    static func attempt<T>(store path: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw failure(error, store: path) }
    }

    static func failure(_ error: any Error, store path: String) -> CommandFailure {
        if let failure = error as? CommandFailure { return failure }
        guard let error = error as? LucidError else { return CommandFailure(.badInput, "\(path): \(error)") }
        switch error.code {
        case .locked:
            let holder = error.pid.map { " (pid \($0))" } ?? ""
            return CommandFailure(.locked, "\(path): locked by another process\(holder)")
        case .corruption:
            return CommandFailure(.corruption, "\(path): corrupt: \(location(of: error))\(error.message)")
        case .unsupportedFormatVersion:
            return CommandFailure(.newerFormat, "\(path): newer format version than this tool reads: \(error.message)")
        case .notFound:
            return CommandFailure(.noStore, "\(path): no such store (\(error.message)\(error.file.map { ": \($0)" } ?? ""))")
        default:
            return CommandFailure(.badInput, "\(path): \(error)")
        }
    }

    /// `FILE at offset N: ` for an error that says where.
    private static func location(of error: LucidError) -> String {
        guard let file = error.file else { return "" }
        return file + (error.offset.map { " at offset \($0)" } ?? "") + ": "
    }

    /// The format version recorded in the store's newest manifest slot (docs/FORMAT.md "Manifest slot": magic,
    /// formatVersion at 8, version at 16), or nil when no slot has the magic. Read after a successful open, which
    /// has checked the slots.
    static func manifestFormatVersion(_ path: String) -> UInt32? {
        var best: (version: UInt64, format: UInt32)?
        for name in ["MANIFEST-0", "MANIFEST-1"] {
            guard let data = FileManager.default.contents(atPath: path + "/" + name), data.count >= 28 else { continue }
            let b = [UInt8](data.prefix(24))
            guard b[0..<8].elementsEqual("LUCIDMAN".utf8) else { continue }
            let format = (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[8 + $1]) << (8 * UInt32($1)) }
            let version = (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[16 + $1]) << (8 * UInt64($1)) }
            if best.map({ version > $0.version }) ?? true { best = (version, format) }
        }
        return best?.format
    }
}
