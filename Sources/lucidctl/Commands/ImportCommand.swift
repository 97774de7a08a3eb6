import ArgumentParser
import LucidEngine
#if canImport(Glibc)
import Glibc
#endif

/// `lucidctl import <dir> <file.jsonl> [--keyspace K] [--batch N]`: loads JSON lines (the shape dump writes) in
/// atomic batches, with progress; creates the store if missing.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Load JSON lines (the shape dump writes) into a store, in atomic batches.",
        discussion: """
            One line is one record:
              {"keyspace": "books", "key": "b-000042", "value": {...any JSON...}, "index": {"genre": ["fantasy"], "rating": [4.5]}}
            "key" is a UTF-8 string ("key_base64" for binary keys); "value" is stored as the exact bytes of its \
            JSON text ("value_base64" for bytes that are not JSON); "index" is optional; {"keyspace": ..., \
            "key": ..., "delete": true} removes a key. Index terms: see `lucidctl dump --help`. Blank lines are \
            skipped.

            Every --batch lines (or 64 MiB) are committed as one atomic batch. A malformed line stops the import \
            with its line number (exit 1): every batch before it stays committed, the batch holding it is not. \
            Creates the store when the directory is missing or empty; refuses a non-empty directory that is not \
            a store (exit 4). dump then import round-trips a store.

            \(Lucidctl.exitCodes)
            """
    )

    @Argument(help: "The store directory (created when missing).")
    var directory: String

    @Argument(help: "The JSON lines file; - reads standard input.")
    var file: String

    @Option(help: "Put every record into this keyspace, whatever its line says (lines may then leave it out).")
    var keyspace: String?

    @Option(help: "Records per atomic batch.")
    var batch: Int = 1000

    func validate() throws {
        guard batch >= 1 else { throw ValidationError("--batch must be at least 1") }
        if let keyspace, !(1...255).contains(keyspace.utf8.count) {
            throw ValidationError("--keyspace must be 1 to 255 UTF-8 bytes")
        }
    }

    /// The most bytes of records in one batch before it is committed early.
    static let maxBatchBytes = 64 << 20

    func run() throws {
        let (fd, total) = try openInput()
        defer { if fd != STDIN_FILENO { close(fd) } }
        switch StoreAccess.kind(of: directory) {
        case .store, .missing, .emptyDirectory: break
        case .notADirectory: throw CommandFailure(.noStore, "\(directory): not a directory")
        case .otherFiles:
            throw CommandFailure(.noStore, "\(directory): not a store, and not empty: refusing to create a store there")
        }
        let parent = StoreAccess.parent(of: directory)
        if StoreAccess.kind(of: directory) == .missing, StoreAccess.kind(of: parent) == .missing {
            throw CommandFailure(.noStore, "\(parent): no such directory")
        }
        let engine = try StoreAccess.openForWriting(directory, create: true)
        defer { try? engine.close() }

        let source = file == "-" ? "stdin" : file
        let progress = ProgressReporter(label: "importing")
        var reader = LineReader(fd: fd)
        var pending = WriteBatch()
        var pendingBytes = 0
        var firstPendingLine = 0
        var lineNumber = 0
        var committed = (records: 0, puts: 0, deletes: 0, batches: 0, throughLine: 0)
        var pendingPuts = 0

        func commitPending() throws(CommandFailure) {
            guard !pending.isEmpty else { return }
            do {
                try engine.commitAndWait(pending)
            } catch {
                let failure = StoreAccess.failure(error, store: directory)
                throw CommandFailure(failure.status, (failure.message ?? "commit failed")
                    + "; lines \(firstPendingLine)-\(lineNumber) were not committed, "
                    + "\(Console.count(committed.records, "record")) in \(Console.count(committed.batches, "batch", "batches")) "
                    + "before them were")
            }
            committed.records += pending.count
            committed.puts += pendingPuts
            committed.deletes += pending.count - pendingPuts
            committed.batches += 1
            committed.throughLine = lineNumber
            pending = WriteBatch()
            pendingBytes = 0
            pendingPuts = 0
            progress.update(done: reader.bytesConsumed, total: total,
                            detail: Self.progressDetail(committed.records, committed.batches))
        }

        while true {
            let line: [UInt8]?
            do {
                line = try reader.next()
            } catch {
                progress.abandon()
                throw CommandFailure(.badInput, "\(source): \(error.message) (after line \(lineNumber))")
            }
            guard var line else { break }
            lineNumber += 1
            if lineNumber == 1 && line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }  // a UTF-8 BOM
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let record: RecordLine
            do {
                record = try RecordLine.decode(line, keyspace: keyspace)
            } catch {
                progress.abandon()
                let kept = committed.batches == 0
                    ? "nothing was committed"
                    : "the \(Console.count(committed.batches, "batch", "batches")) before it "
                        + "(\(Console.count(committed.records, "record")), through line "
                        + "\(committed.throughLine)) \(committed.batches == 1 ? "stays" : "stay") committed"
                let lost = pending.isEmpty ? "" : "; its batch (from line \(firstPendingLine) on) was not committed"
                throw CommandFailure(.badInput, "\(source):\(lineNumber): \(error.message); \(kept)\(lost)")
            }
            if pending.isEmpty { firstPendingLine = lineNumber }
            if let value = record.value {
                pending.put(value, forKey: record.key, in: record.keyspace, indexTerms: record.terms)
                pendingPuts += 1
                pendingBytes += value.count + record.key.count + record.terms.reduce(0) { $0 + $1.term.count + 8 }
            } else {
                pending.delete(record.key, in: record.keyspace)
                pendingBytes += record.key.count
            }
            if lineNumber % 256 == 0 {
                progress.update(done: reader.bytesConsumed, total: total,
                                detail: Self.progressDetail(committed.records, committed.batches))
            }
            if pending.count >= batch || pendingBytes >= Self.maxBatchBytes {
                do { try commitPending() } catch { progress.abandon(); throw error }
            }
        }
        do { try commitPending() } catch { progress.abandon(); throw error }
        progress.update(done: reader.bytesConsumed, total: total,
                        detail: Self.progressDetail(committed.records, committed.batches))
        progress.finish()
        try StoreAccess.attempt(store: directory) { try engine.close() }
        Console.out("imported \(Console.count(committed.records, "record")) (\(Console.count(committed.puts, "put")), "
                    + "\(Console.count(committed.deletes, "delete"))) in \(Console.count(committed.batches, "batch", "batches")) "
                    + "from \(Console.count(lineNumber, "line")) of \(source) into \(directory)")
    }

    private static func progressDetail(_ records: Int, _ batches: Int) -> String {
        "\(Console.count(records, "record")), \(Console.count(batches, "batch", "batches"))"
    }

    /// The input's descriptor and size (nil for stdin or a pipe). A missing file is bad input (exit 1).
    private func openInput() throws(CommandFailure) -> (Int32, UInt64?) {
        if file == "-" { return (STDIN_FILENO, nil) }
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw CommandFailure(.badInput, "\(file): cannot open: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return (fd, nil) }
        return (fd, (info.st_mode & S_IFMT) == S_IFREG ? UInt64(info.st_size) : nil)
    }
}
