import ArgumentParser
import LucidEngine
#if canImport(Glibc)
import Glibc
#endif

/// `lucidctl dump <dir> [--keyspace K] [--limit N]`: records as JSON lines, with their index terms.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Write a store's records as JSON lines (the shape import reads).",
        discussion: """
            One line per record, keyspaces in name order and keys in byte order, from one consistent snapshot:
              {"keyspace":"books","key":"b-000042","value":{...},"index":{"genre":["fantasy"],"rating":[4.5]}}
            The value is written as JSON when its bytes are exactly one JSON value on one line (import stores \
            the same bytes back), as "value_base64" otherwise; a key that is not UTF-8 as "key_base64". Index \
            terms: integers as 4, doubles always with a point or exponent (4.0, 4.5), typed objects for the rest: \
            {"date":"2024-05-01T12:00:00.000000Z"}, {"identifier":"..."} or {"identifier_base64":"..."}, \
            {"double":"nan"|"inf"|"-inf"}. Opens the store read-only (strict recovery).

            \(Lucidctl.exitCodes)
            """
    )

    @Argument(help: "The store directory.")
    var directory: String

    @Option(help: "Dump only this keyspace.")
    var keyspace: String?

    @Option(help: "Write at most this many records in all.")
    var limit: Int?

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative") }
    }

    func run() throws {
        let engine = try StoreAccess.openForReading(directory)
        defer { try? engine.close() }
        let snapshot = engine.snapshot()
        let keyspaces = keyspace.map { [$0] } ?? snapshot.keyspaces()
        if let keyspace, snapshot.count(in: keyspace) == 0 {
            Console.err("lucidctl: note: keyspace \"\(keyspace)\" holds no record in \(directory)")
        }
        var remaining = limit ?? Int.max
        var out = OutputBuffer(fd: STDOUT_FILENO)
        defer { out.flush() }
        do {
            for name in keyspaces where remaining > 0 {
                try snapshot.forEach(in: name, limit: remaining) { record in
                    let terms = try snapshot.indexTerms(forKey: record.key, in: name) ?? []
                    var line = RecordLine.encode(keyspace: name, key: record.key, value: record.value, terms: terms)
                    line.append(0x0A)
                    out.append(line)
                    remaining -= 1
                    return true
                }
            }
        } catch {
            out.flush()
            throw StoreAccess.failure(error, store: directory)
        }
    }
}
