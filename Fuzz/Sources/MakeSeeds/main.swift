// Writes the seed corpora of the fuzz targets from real stores written by the engine on real files:
//   MakeSeeds <Fuzz/Corpus directory>
// FuzzPage: pages cut out of real segments (with mode byte 0 and 1); FuzzManifest: real manifest slots and segment
// headers; FuzzCheckpoint: CHECKPOINT files of real stores and checkpoints written by CheckpointWriter on real files,
// plus a few programs; FuzzRecovery and FuzzOperations: short programs in their input formats (see RecoveryChecks.swift and OperationChecks.swift);
// FuzzEntityCodec: records written by EntityCodec (see EntityCodecChecks.swift).
import Foundation
import FuzzCommon
import FuzzLucidCommon
@_spi(Fuzzing) import LucidEngine

// `MakeSeeds time TARGET FILE...` runs the inputs through TARGET's check without sanitizers and prints timings.
if CommandLine.arguments.count > 3, CommandLine.arguments[1] == "time",
   let target = FuzzTarget(rawValue: CommandLine.arguments[2]) {
    let clock = ContinuousClock()
    for path in CommandLine.arguments.dropFirst(3) {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let start = clock.now
        do { try target.check(bytes) } catch { print("FAILED: \(error)") }
        print("\(path): \(clock.now - start)")
    }
    exit(0)
}

let corpus = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "Corpus"
let fm = FileManager.default

func save(_ target: String, _ name: String, _ bytes: [UInt8]) throws {
    let dir = corpus + "/" + target
    try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
    try Data(bytes).write(to: URL(fileURLWithPath: dir + "/" + name))
}

func noise(_ seed: UInt64, _ count: Int) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

// A real store on real files: small and large records, deletes, index terms, compressible and random values,
// multi-page groups and a segment roll.
let dir = NSTemporaryDirectory() + "lucid-seeds-\(getpid())"
try? fm.removeItem(atPath: dir)
var options = EngineOptions()
options.pageSize = 4096
options.segmentSize = 1 << 20
options.logger.logLevel = .critical
do {
    let engine = try Engine.open(at: dir, options: options)
    var b = WriteBatch()
    b.put(Array("hello".utf8), forKey: Array("k1".utf8), in: "a")
    b.put(Array(repeating: 7, count: 3000), forKey: Array("k2".utf8), in: "a",
          indexTerms: [IndexTerm(index: "by-color", value: .string("red"))])
    b.delete(Array("k0".utf8), in: "b")
    try engine.commitAndWait(b)
    for i in 0..<6 {
        var batch = WriteBatch()
        for j in 0..<(1 + i * 3) {
            batch.put(noise(UInt64(i * 100 + j), 50 + 40 * j), forKey: Array("key-\(i)-\(j)".utf8), in: i % 2 == 0 ? "a" : "ü")
        }
        if i == 3 { batch.delete(Array("k1".utf8), in: "a") }
        try engine.commitAndWait(batch)
    }
    var big = WriteBatch()
    big.put(noise(99, 1 << 20), forKey: Array("big".utf8), in: "a")   // passes 1 MiB: rolls
    try engine.commitAndWait(big)
    var last = WriteBatch()
    last.put(Array("after roll".utf8), forKey: Array("k3".utf8), in: "a")
    try engine.commitAndWait(last)
    try engine.close()
}

var pageSeeds = 0
for name in try fm.contentsOfDirectory(atPath: dir).sorted() {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name)))
    if name == "CHECKPOINT" {
        try save("FuzzCheckpoint", "real-store-CHECKPOINT", [0] + bytes)
        try save("FuzzCheckpoint", "real-store-CHECKPOINT-fixcrc", [1] + bytes)
    } else if name.hasPrefix("MANIFEST") {
        try save("FuzzManifest", "real-\(name)", [0] + bytes)
        try save("FuzzManifest", "real-\(name)-fixcrc", [1] + bytes)
    } else if name.hasSuffix(".seg") {
        let header = Array(bytes.prefix(FuzzingSupport.segmentHeaderLength))
        try save("FuzzManifest", "real-header-\(name)", [2] + header)
        try save("FuzzManifest", "real-header-\(name)-fixcrc", [3] + header)
        guard let salt = FuzzingSupport.pageSalt(ofSegmentHeader: header) else { continue }
        let body = Array(bytes.dropFirst(FuzzingSupport.segmentHeaderLength))
        let scan = FuzzingSupport.scanSegmentBody(body, salt: salt)
        for (i, offset) in scan.pageOffsets.enumerated() {
            let end = i + 1 < scan.pageOffsets.count ? scan.pageOffsets[i + 1] : body.count
            guard end - offset <= 16 << 10 else { continue }   // keep seeds small: skip the 1 MiB page
            let page = Array(body[offset..<end])
            try save("FuzzPage", "real-\(name)-p\(i)", [0] + page)
            try save("FuzzPage", "real-\(name)-p\(i)-fixcrc", [1] + page)
            pageSeeds += 1
            if pageSeeds >= 12 { break }
        }
        // Two pages back to back, to exercise the scan.
        if scan.pageOffsets.count >= 3 {
            try save("FuzzPage", "real-\(name)-pages-0-1", [0] + Array(body[0..<scan.pageOffsets[2]]))
        }
    }
}
try? fm.removeItem(atPath: dir)

// FuzzCheckpoint: the checkpoint a closed store writes, for a store with several keyspaces, index terms, deletes and
// enough keys for a multi-leaf tree (kept under the target's -max_len of 8 KiB), and checkpoints
// written by CheckpointWriter (through FuzzingSupport.encodeCheckpoint, on real files) from small entry sets.
var checkpointSeeds = 0
@MainActor func saveCheckpoint(_ name: String, _ bytes: [UInt8]) throws {
    guard bytes.count <= 8000 else { print("skipping checkpoint seed \(name): \(bytes.count) bytes"); return }
    try save("FuzzCheckpoint", name, [0] + bytes)
    try save("FuzzCheckpoint", name + "-fixcrc", [1] + bytes)
    checkpointSeeds += 1
}
for (label, keys) in [("small", 12), ("multileaf", 150)] {
    let ckdir = NSTemporaryDirectory() + "lucid-seeds-ckp-\(getpid())"
    try? fm.removeItem(atPath: ckdir)
    let engine = try Engine.open(at: ckdir, options: options)
    var i = 0
    while i < keys {
        var batch = WriteBatch()
        for _ in 0..<min(10, keys - i) {
            let ks = i % 3 == 0 ? "b" : "a"
            let terms = i % 2 == 0 ? [IndexTerm(index: "by-n", value: .int(Int64(i % 7))),
                                      IndexTerm(index: "tag", value: .string("t\(i % 3)"))] : []
            batch.put(Array("v\(i)".utf8), forKey: Array(String(format: "%04d", i).utf8), in: ks, indexTerms: terms)
            i += 1
        }
        if i > 5 { batch.delete(Array(String(format: "%04d", i - 5).utf8), in: "a") }
        try engine.commitAndWait(batch)
    }
    try engine.close()
    let path = ckdir + "/CHECKPOINT"
    if fm.fileExists(atPath: path) {
        try saveCheckpoint("real-\(label)-CHECKPOINT", [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    } else {
        print("no CHECKPOINT in the \(label) store")
    }
    try? fm.removeItem(atPath: ckdir)
}
do {
    typealias F = FuzzingSupport
    let ckdir = NSTemporaryDirectory() + "lucid-seeds-ckw-\(getpid())"
    try? fm.removeItem(atPath: ckdir)
    let segments = [F.CheckpointSegment(id: 1, salt: 0xDEAD_BEEF, firstLSN: 1),
                    F.CheckpointSegment(id: 2, salt: 0x1234_5678_9ABC, firstLSN: 40)]
    func entry(_ key: String, _ segment: UInt32, _ sequence: UInt64, terms: Bool = false) -> F.CheckpointEntry {
        F.CheckpointEntry(key: Array(key.utf8), segment: segment, pageOffset: 128 + UInt32(sequence) * 64,
                          valueOffset: 40, valueLength: 17, hasTerms: terms, sequence: sequence)
    }
    let written: [(String, F.Checkpoint)] = [
        ("writer-no-keyspaces", F.Checkpoint(coveredSegment: 1, coveredOffset: 128, nextLSN: 1, lastSequence: 0,
                                             segments: [segments[0]], keyspaces: [:])),
        ("writer-two-keyspaces", F.Checkpoint(
            coveredSegment: 2, coveredOffset: 4096, nextLSN: 57, lastSequence: 30, segments: segments,
            keyspaces: ["a": F.CheckpointKeyspace(primary: [entry("k1", 1, 3, terms: true), entry("k2", 2, 30), entry("", 1, 1)],
                                                  indexes: ["by-color": [F.CheckpointIndexEntry(entry: [6] + Array("red".utf8) + [0, 1] + Array("k1".utf8), termLength: 6)]]),
                        "ü": F.CheckpointKeyspace(primary: [entry("x", 2, 29)], indexes: [:])])),
        ("writer-bounds", F.Checkpoint(
            coveredSegment: 2, coveredOffset: 1 << 20, nextLSN: 1 << 40, lastSequence: UInt64.max, segments: segments,
            keyspaces: [String(repeating: "n", count: 255): F.CheckpointKeyspace(
                primary: [F.CheckpointEntry(key: Array(repeating: 0xFF, count: 1024), segment: 2, pageOffset: UInt32.max,
                                            valueOffset: UInt32(F.maxRawPageLength), valueLength: UInt32(F.maxValueLength),
                                            hasTerms: true, sequence: UInt64.max)],
                indexes: [String(repeating: "i", count: 255): [F.CheckpointIndexEntry(
                    entry: Array(repeating: 7, count: 1024) + Array(repeating: 0xFF, count: 1024), termLength: 1024)]])])),
    ]
    for (name, checkpoint) in written {
        try saveCheckpoint(name, try F.encodeCheckpoint(checkpoint, directory: ckdir))
    }
    try? fm.removeItem(atPath: ckdir)
}
// Programs (mode bit 1; see CheckpointChecks.checkProgram): header and segments, then operations.
let checkpointPrograms: [(String, [UInt8])] = [
    ("program-entries", [2, 100, 0, 2, 1, 0, 1, 2, 3, 4, 1, 0, 1, 1, 5, 6, 7, 8, 9, 0, 0, 16, 5, 0,
                         0, 0, 3, 5, 2, 0, 1, 0, 0, 40, 0, 17, 0, 9, 9, 0, 1, 0, 0, 1,
                         5, 1, 1, 1, 4, 0, 10, 0, 5, 0, 6, 0, 0, 0, 0, 0,
                         2, 2, 0, 0, 1, 0, 1, 2, 1, 2, 3, 0, 0, 0, 0]),
    ("program-bulk", [2, 0xFF, 0x0F, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 16, 5, 0,
                      3, 0, 0x02, 0x00, 5, 1, 3, 0, 0, 40, 0, 17, 0, 9, 9, 0, 1, 0, 0, 1, 2]),
    ("program-index", [2, 50, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 16, 5, 0,
                       0, 1, 1, 5, 1, 2, 0, 0, 40, 0, 17, 0, 3, 9, 0, 1, 0, 0, 1,
                       4, 1, 2, 2, 5, 1, 1, 5, 1, 2, 0, 5, 5, 3, 3, 3, 5, 1, 2, 0,
                       5, 1, 3, 0x00, 0x01, 5, 2, 5, 1, 2, 0]),
    ("program-invalid", [2, 10, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 16, 5, 0, 0, 0, 1, 5, 1, 2, 0, 0, 40, 0, 17, 0, 20, 4]),
    ("program-flip", [2, 10, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 16, 5, 0, 0, 2, 1, 5, 1, 2, 0, 0, 40, 0, 17, 0, 3, 9,
                      0, 1, 0, 0, 1, 7, 60, 0, 0x10]),
]
for (name, bytes) in checkpointPrograms { try save("FuzzCheckpoint", name, bytes) }

// FuzzRecovery: mode byte, then mutations (kind, file, anchor, operands); see RecoveryChecks.
let recovery: [(String, [UInt8])] = [
    ("none", [0]),
    ("strict-none", [1]),
    ("truncate-after-synced", [0, 0, 0, 1, 0x08, 0x10]),
    ("truncate-in-synced", [0, 0, 0, 1, 0x00, 0x10]),
    ("flip-active-tail", [0, 1, 1, 2, 0x00, 0x40, 3]),
    ("flip-sealed", [0, 1, 3, 0, 0x00, 0x00, 0x80, 0x00, 5]),
    ("zero-active", [0, 2, 0, 1, 0x08, 0x20, 0x02, 0x00]),
    ("overwrite-manifest0", [0, 3, 4, 0, 0x00, 0x00, 0x00, 0x30, 4, 1, 2, 3, 4]),
    ("append-garbage", [0, 4, 2, 2, 0x00, 0x00, 0x10, 0x00, 1, 2, 3, 4, 0]),
    ("append-zeros", [0, 4, 2, 2, 0x00, 0x00, 0x01, 0x00, 1, 2, 3, 4, 1]),
    ("copy-page", [0, 5, 0, 2, 0x00, 0x00, 1, 1, 0x00, 0x00, 0x00, 0x10, 0x00]),
    ("manifest-and-first-page", [0, 1, 4, 0, 0x00, 0x00, 0x00, 0x20, 1, 1, 0, 0, 0x00, 0x00, 0x60, 2]),
    ("strict-truncate", [1, 0, 0, 2, 0x00, 0x30]),
    ("checkpoint-none", [2]),
    ("checkpoint-flip-checkpoint", [2, 1, 6, 0, 0x00, 0x00, 0x00, 0x40, 3]),
    ("checkpoint-truncate-checkpoint", [2, 0, 6, 2, 0x00, 0x08]),
    ("checkpoint-flip-synced", [2, 1, 1, 1, 0x07, 0xF0, 2]),
    ("checkpoint-truncate-synced", [2, 0, 0, 1, 0x07, 0x00]),
    ("checkpoint-strict-append", [3, 4, 2, 2, 0x00, 0x00, 0x00, 0x80, 9, 9, 9, 9, 0]),
]
for (name, bytes) in recovery { try save("FuzzRecovery", name, bytes) }

// FuzzOperations: header byte, then operations (see OperationChecks).
let operations: [(String, [UInt8])] = [
    ("puts-reopen", [0, 0, 0, 1, 2, 0, 10, 1, 1, 1, 3, 2, 0, 7, 11, 0, 1]),
    ("batch-crash-drop", [1, 4, 5, 0, 1, 1, 0, 1, 20, 0, 1, 2, 1, 2, 3, 0, 3, 9, 0, 0, 8, 0, 0, 0]),
    ("batch-crash-keepall", [1, 5, 3, 1, 0, 2, 2, 0, 1, 9, 1, 0, 1, 0, 3, 8, 1, 0, 0]),
    ("large-roll", [0, 6, 0, 1, 1, 20, 0, 6, 1, 1, 2, 20, 0, 6, 2, 0, 1, 31, 0, 10, 7]),
    ("none-torn", [3, 0, 0, 1, 1, 50, 1, 6, 0, 0, 1, 31, 1, 0, 1, 2, 2, 2, 8, 3, 4, 5]),
    ("deletes", [0, 0, 0, 1, 1, 5, 0, 3, 0, 1, 1, 3, 1, 1, 1, 11, 0, 1, 1]),
]
for (name, bytes) in operations { try save("FuzzOperations", name, bytes) }

// FuzzEntityCodec: real records of each kind the check decodes (mode byte + record; see EntityCodecChecks).
for seed in try EntityCodecChecks.seeds() { try save("FuzzEntityCodec", seed.name, seed.bytes) }

// FuzzQuery: random programs (writes, removals, queries); any bytes are a valid program.
for seed in QueryChecks.seeds() { try save("FuzzQuery", seed.name, seed.bytes) }
print("wrote seeds to \(corpus): \(pageSeeds) pages, \(checkpointSeeds) checkpoints")
