// FuzzPage's check: page decoding (shared with the Fuzz package: see FuzzInput.swift).

import LucidEngine
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Input: one mode byte (bit 0: recompute the page CRC first, so mutations reach decompression and record
/// parsing), then the page bytes. The page's own salt field is used as the segment salt.
///
/// Checks: decoding never traps and allocates within the format caps (the run script sets `-malloc_limit_mb`);
/// a valid page decodes the same from exactly its bytes, not from one byte fewer, not under another salt; a
/// valid data page's records, re-encoded with the writer's `PageBuilder`, decode to the same records (and
/// re-encoding is a fixpoint); scanning the bytes as a segment body agrees with the single-page decode; the bytes
/// read as a payload of records compressed one by one decode safely and consistently (`checkRecordPayload`).
enum PageChecks {
    static func check(_ input: [UInt8]) throws {
        guard let mode = input.first else { return }
        var page = Array(input.dropFirst())
        if mode & 1 != 0 { page = FuzzingSupport.withValidPageChecksum(page) }
        let salt = FuzzHelpers.le32(page, 8)
        let result = FuzzingSupport.decodePage(page, salt: salt)
        if case .success(let p) = result {
            try fuzzRequire(p.totalLength >= FuzzingSupport.pageHeaderLength && p.totalLength <= page.count,
                        "page length \(p.totalLength) outside the \(page.count) input bytes")
            try fuzzRequire(p.rawLength <= FuzzingSupport.maxRawPageLength, "rawLength \(p.rawLength) over the cap")
            let exact = Array(page[0..<p.totalLength])
            try fuzzRequire(FuzzingSupport.decodePage(exact, salt: salt) == .success(p),
                        "the page decodes differently without the bytes that follow it")
            if case .success = FuzzingSupport.decodePage(Array(exact.dropLast()), salt: salt) {
                throw FuzzCheckFailure("a page missing its last byte still decodes")
            }
            if case .success = FuzzingSupport.decodePage(exact, salt: salt ^ 0x8000_0001) {
                throw FuzzCheckFailure("a page decodes under another segment's salt")
            }
            if p.type == 1 { try checkRoundTrip(p, salt: salt) }
        }
        try checkPartialRead(page, salt: salt, prefix: 1 + Int(mode >> 1) << 5)
        try checkRecordPayload(page, recordCount: 1 + Int(mode >> 4), at: Int(mode >> 1) << 4)
        let scan = FuzzingSupport.scanSegmentBody(page, salt: salt, maxSteps: 1_000)
        for (a, b) in zip(scan.pageOffsets, scan.pageOffsets.dropFirst()) {
            try fuzzRequire(a < b, "scan returned page offsets out of order: \(a), \(b)")
        }
        try fuzzRequire(scan.pageOffsets.allSatisfy { $0 + FuzzingSupport.pageHeaderLength <= page.count },
                    "scan returned a page past the end")
        switch result {
        case .success: try fuzzRequire(scan.pageOffsets.first == 0, "scan did not find the page decodePage accepted")
        case .failure: try fuzzRequire(page.isEmpty || scan.failures.first == 0, "scan accepted what decodePage rejected")
        }
    }

    /// The bytes read as the payload of a page of records compressed one by one (`FuzzingSupport
    /// .decodeRecordPayload`): whatever they hold, no read traps or reads outside them; a whole read gives exactly
    /// the raw length the table claims; a point read of bytes within it succeeds and agrees with the whole read;
    /// and the records encoded again decode to the same bytes.
    static func checkRecordPayload(_ payload: [UInt8], recordCount: Int, at start: Int) throws {
        let reads = FuzzingSupport.decodeRecordPayload(payload, recordCount: recordCount, range: start..<(start + 40))
        guard let whole = reads.whole else { return }
        try fuzzRequire(whole.count == reads.rawLength, "a whole read of \(whole.count) bytes, not \(reads.rawLength)")
        let lower = min(start, whole.count - 1)
        let range = lower..<max(lower + 1, min(start + 40, whole.count))
        try fuzzRequire(reads.part == Array(whole[range]), "a point read of \(range) differs from the whole read")
        try fuzzRequire(reads.reencoded == whole, "records encoded again decode differently")
    }

    /// A point read that decodes a page only as far as the bytes it wants end (`prefix`; it wants the last two
    /// thirds of them, as a value that does not start the page) returns exactly those bytes of what the whole read
    /// returns, and fails whenever the whole read fails for any reason other than the payload's compressed data
    /// (which the partial read may not reach: the checksum still covers all of it).
    static func checkPartialRead(_ page: [UInt8], salt: UInt32, prefix: Int) throws {
        let range = (prefix / 3)..<prefix
        let whole = FuzzingSupport.readPayload(page, salt: salt, range: nil)
        let partial = FuzzingSupport.readPayload(page, salt: salt, range: range)
        switch (whole, partial) {
        case (.success(let raw), .success(let bytes)):
            try fuzzRequire(prefix <= raw.count && bytes == Array(raw[range]),
                            "a partial read of bytes \(range) differs from the whole read's")
        case (.success(let raw), .failure(let why)):
            try fuzzRequire(prefix > raw.count, "a partial read of bytes \(range) of \(raw.count) failed: \(why.reason)")
        case (.failure(let why), .success):
            try fuzzRequire(why.reason.contains("decompress"),
                            "a partial read succeeded where the whole read failed: \(why.reason)")
        case (.failure, .failure):
            break
        }
    }

    static func checkRoundTrip(_ p: FuzzingSupport.Page, salt: UInt32) throws {
        let records = p.records
        // The writer only produces non-decreasing sequences and UTF-8 names; other pages cannot be rebuilt
        // through the public types (see the report on non-UTF-8 names).
        guard !records.isEmpty,
              zip(records, records.dropFirst()).allSatisfy({ $0.sequence <= $1.sequence }),
              records.allSatisfy({ r in
                  String(validating: r.keyspace, as: UTF8.self) != nil
                      && r.terms.allSatisfy { String(validating: $0.index, as: UTF8.self) != nil }
              })
        else { return }
        let encoded = FuzzingSupport.encodePages(records, salt: salt, firstLSN: p.lsn, syncedLSN: p.syncedLSN,
                                                 pageSize: p.rawLength)
        guard case .success(let q) = FuzzingSupport.decodePage(encoded, salt: salt) else {
            throw FuzzCheckFailure("re-encoded page does not decode: \(FuzzingSupport.decodePage(encoded, salt: salt))")
        }
        try fuzzRequire(q.totalLength == encoded.count, "re-encoding produced more than one page")
        try fuzzRequire(q.records == records, "re-encoded page decodes to different records")
        try fuzzRequire(q.lsn == p.lsn && q.syncedLSN == p.syncedLSN && q.isCommit, "re-encoded page header differs")
        let again = FuzzingSupport.encodePages(q.records, salt: salt, firstLSN: q.lsn, syncedLSN: q.syncedLSN,
                                               pageSize: p.rawLength)
        try fuzzRequire(again == encoded, "encode(decode(encode(x))) != encode(x)")
    }
}
