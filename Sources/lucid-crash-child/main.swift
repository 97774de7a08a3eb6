// The child process of the kill -9 crash tests (Tests/LucidEngineTests/Crash/KillNineTests.swift and
// KillNineCompactionTests.swift).
//
//     lucid-crash-child <storeDir> <seed> [compact]
//
// Opens the store with the default options (SyncMode.always; a 1 MiB segment size for every third seed, so that
// segment rolls happen too), then commits random batches with `commitAndWait` until it is killed. Everything it
// does is a function of the seed. It reports to its parent on stdout, one line per event, each written with a
// single write(2) (lines stay below PIPE_BUF, so they are never interleaved or torn by a kill):
//
//     OPEN <lastSequence>         the store opened (recovery done)
//     BEGIN <op> <op> ...         a batch is about to be committed (the one the parent cannot see acknowledged)
//     ACK <sequence>              the batch of the last BEGIN line was acknowledged with this sequence
//
// An op is `P.<keyspace>.<key hex>.<value length>.<value seed>` (a put) or `D.<keyspace>.<key hex>` (a delete).
// The value bytes are `crashChildValue(length:seed:)` from LucidEngineTestSupport, which the test uses too, and
// every put carries the index terms `crashChildTerms(for:)` of its value (the test rebuilds them the same way).
//
// With `compact`, compaction runs all the time: 1 MiB segments, the automatic policy at a low threshold, and a
// second thread that seals the active segment and compacts every sealed segment or a random adjacent run of them,
// a few milliseconds apart (for one seed in three it only seals, and the policy does the compacting), over fewer
// keys (so that most of the log is dead and deletions hide values in older segments). That thread reports too:
//
//     SEAL                        the active segment was sealed
//     COMPACT <inputs> <outputs> <tombstones kept> <1 when the inputs started the log, else 0>
//     SKIP <reason>               a compaction was refused (its run of segments changed meanwhile)
//
// Failures go to stderr and end the process with a non-zero status. Log output goes to stderr
// (swift-log's default handler).

import Foundation
import LucidEngine
import LucidEngineTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Writes one whole line with one write(2) and no buffering, so it reaches the pipe before the next commit.
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data(("lucid-crash-child: " + message + "\n").utf8))
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 || (arguments.count == 4 && arguments[3] == "compact"),
      let seed = UInt64(arguments[2]) else {
    fail("usage: lucid-crash-child <storeDir> <seed> [compact]", status: 64)
}
let directory = arguments[1]
let compacting = arguments.count == 4

var rng = SplitMix64(seed: seed)
var options = EngineOptions()
if seed % 3 == 0 || compacting { options.segmentSize = 1 << 20 }
if compacting { options.autoCompaction = AutoCompactionPolicy(deadRatio: 0.3, minimumSealedBytes: 1 << 20) }
// Half the children read (index maintenance, compaction) through mapped segments.
options.memoryMappedReads = seed % 4 >= 2
// A fifth of them store pages uncompressed (read in place once checked, when mapped), and two fifths compress
// records one by one against their segment's dictionary.
if seed % 5 == 1 { options.pageCompression = .none }
if seed % 5 >= 3 { options.pageCompression = .lz4Records }
let keyspaces = seed % 2 == 0 || compacting ? ["alpha", "beta"] : ["alpha"]
let keySpace = compacting ? [12, 24, 48][Int(seed / 7 % 3)] : [16, 64, 200][Int(seed / 7 % 3)]

let engine: Engine
do {
    engine = try Engine.open(at: directory, options: options)
} catch {
    fail("open failed: \(error)", status: 3)
}
emit("OPEN \(engine.statistics.lastSequence)")
if compacting { Compactor.start(engine, seed: seed) }

for _ in 0..<1_000_000 {
    var batch = WriteBatch()
    var ops: [String] = []
    for _ in 0..<(1 + rng.below(20)) {
        let keyspace = keyspaces[rng.below(keyspaces.count)]
        let key = Array("k\(rng.below(keySpace))".utf8)
        if rng.below(4) == 0 {
            batch.delete(key, in: keyspace)
            ops.append("D.\(keyspace).\(hex(key))")
        } else {
            let roll = rng.below(100)
            let length = roll < 60 ? rng.below(512)
                : roll < 90 ? 512 + rng.below(3584)
                : roll < 97 ? 4096 + rng.below(8192)
                : 16 * 1024 + 1 + rng.below(24 * 1024)   // larger than a page (4 KiB by default, 16 KiB often)
            let valueSeed = rng.next()
            let value = crashChildValue(length: length, seed: valueSeed)
            batch.put(value, forKey: key, in: keyspace, indexTerms: crashChildTerms(for: value))
            ops.append("P.\(keyspace).\(hex(key)).\(length).\(valueSeed)")
        }
    }
    emit("BEGIN " + ops.joined(separator: " "))
    do {
        let sequence = try engine.commitAndWait(batch)
        emit("ACK \(sequence)")
    } catch {
        fail("commit failed: \(error)", status: 4)
    }
}
do { try engine.close() } catch { fail("close failed: \(error)", status: 5) }

/// The compaction mode's second thread.
enum Compactor {
    /// Starts the thread: it seals and compacts, a few milliseconds apart, until the process is killed.
    static func start(_ engine: Engine, seed: UInt64) {
        let thread = Thread {
            var rng = SplitMix64(seed: seed ^ 0xC0_4AC7)
            while true {
                usleep(useconds_t(1000 * (1 + rng.below(15))))
                do {
                    let roll = rng.below(10)
                    if roll < 4 {
                        try engine.sealActiveSegment()
                        emit("SEAL")
                        continue
                    }
                    // One seed in three leaves compaction to the automatic policy: this thread only seals.
                    if seed % 3 == 0 {
                        usleep(useconds_t(1000 * (1 + rng.below(15))))
                        continue
                    }
                    switch roll {
                    case 4..<6:
                        report(try engine.compactAndWait(), fromLogStart: true)
                    default:
                        // A random adjacent run of sealed segments (not always from the log start: deletions kept).
                        let sealed = try engine.storeStatistics().segments.filter(\.sealed).map(\.id)
                        guard !sealed.isEmpty else { continue }
                        // Mostly after the first segment, so that deletions must be kept.
                        let start = sealed.count > 1 && rng.below(4) != 0 ? 1 + rng.below(sealed.count - 1)
                            : rng.below(sealed.count)
                        let run = Array(sealed[start..<(start + 1 + rng.below(sealed.count - start))])
                        do {
                            let summary = try engine.compactAndWait(CompactionOptions(segments: run))
                            report(summary, fromLogStart: start == 0)
                        } catch let error as LucidError where error.code == .invalidArgument {
                            // The automatic compaction replaced some of these segments meanwhile.
                            emit("SKIP \(error.message)".replacingOccurrences(of: "\n", with: " "))
                        }
                    }
                } catch {
                    fail("compaction thread: \(error)", status: 6)
                }
            }
        }
        thread.name = "crash-child.compactor"
        thread.start()
    }

    static func report(_ summary: CompactionSummary, fromLogStart: Bool) {
        guard !summary.inputSegments.isEmpty else { return }
        emit("COMPACT \(summary.inputSegments.count) \(summary.outputSegments.count) \(summary.tombstonesKept) "
             + "\(fromLogStart ? 1 : 0)")
    }
}
