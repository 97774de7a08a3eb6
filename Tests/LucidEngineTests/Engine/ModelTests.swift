import Foundation
import Testing
@testable import LucidEngine

/// Randomized model test: thousands of random puts, deletes and multi-operation batches across three keyspaces,
/// with reopens, checked against a dictionary model after every reopen and at the end (gets, counts, keyspace
/// names, full and bounded scans both ways, then `verify()`).
@Suite("Engine randomized model")
struct EngineModelTests {
    struct Run: Sendable, CustomTestStringConvertible {
        var name: String
        var seed: UInt64
        var steps: Int
        var segmentSize: UInt64?
        var sync: EngineOptions.SyncMode
        /// Multiplies the share of large (over a page) values.
        var largeValueWeight: Int
        var minimumSegments: Int
        var testDescription: String { "\(name) seed \(seed)" }
    }

    static let runs: [Run] = [
        Run(name: "mixed", seed: 0x5EED_0001, steps: 1600, segmentSize: nil, sync: .none, largeValueWeight: 1,
            minimumSegments: 1),
        Run(name: "durable", seed: 0x5EED_0002, steps: 400, segmentSize: nil, sync: .always, largeValueWeight: 1,
            minimumSegments: 1),
        // 1 MiB segments (the minimum) and enough data to roll several times.
        Run(name: "rolling", seed: 0x5EED_0003, steps: 700, segmentSize: 1 << 20, sync: .grouped(milliseconds: 2),
            largeValueWeight: 10, minimumSegments: 3),
    ]

    static let keyspaceNames = ["alpha", "beta", "γάμμα-ks"]

    @Test("random operations and reopens match the model", .heavy, arguments: runs)
    func randomOperationsMatchModel(run: Run) throws {
        try EngineTest.withTemporaryDirectory { dir in
            var rng = EngineTest.SplitMix64(seed: run.seed)
            let tag = "[\(run.name) seed \(String(run.seed, radix: 16))]"
            let options = EngineTest.options(sync: run.sync, segmentSize: run.segmentSize)
            var engine = try Engine.open(at: dir, options: options)
            defer { try? engine.close() }
            #expect(engine.recoveryReport.created, "\(tag) a fresh directory must be created")

            // A pool of keys with shared prefixes, the empty key and a few long ones.
            var pool: [[UInt8]] = [[]]
            for _ in 0..<350 {
                let length = rng.chance(0.02) ? rng.int(200...1024) : rng.int(1...10)
                pool.append((0..<length).map { _ in [0x00, 0x01, 0x41, 0x42, 0x7F, 0x80, 0xFE, 0xFF][rng.int(0..<8)] })
            }
            pool = Array(Set(pool))
            pool.sort { $0.lexicographicallyPrecedes($1) }

            func randomValue(_ rng: inout EngineTest.SplitMix64) -> [UInt8] {
                let roll = rng.int(0..<(100 + 2 * run.largeValueWeight))
                switch roll {
                case 0..<35: return rng.bytes(rng.int(0...32))
                case 35..<70: return rng.bytes(rng.int(33...400))
                case 70..<90: return rng.bytes(rng.int(401...2500))
                case 90..<98: return rng.compressibleBytes(rng.int(1...6000))
                default: return rng.bytes(rng.int(4097...10000))   // larger than a 4 KiB page
                }
            }
            func randomKeyspace(_ rng: inout EngineTest.SplitMix64) -> String {
                Self.keyspaceNames[rng.int(0..<Self.keyspaceNames.count)]
            }

            var model = EngineTest.Model()
            var lastSequence: UInt64 = 0
            var reopens = 0

            func check(_ engine: Engine, _ when: String, _ rng: inout EngineTest.SplitMix64) throws {
                let absent = (0..<25).map { _ in pool[rng.int(0..<pool.count)] } + [rng.bytes(5)]
                var diffs = try EngineTest.differences(engine, model, absentKeys: absent,
                                                       keyspaces: Self.keyspaceNames)
                for ks in Self.keyspaceNames {
                    diffs += try EngineTest.boundedScanDifferences(engine, model, keyspace: ks, rounds: 15, rng: &rng)
                }
                #expect(diffs.isEmpty, "\(tag) \(when): \(diffs.prefix(8).joined(separator: "; "))")
                #expect(engine.statistics.lastSequence == lastSequence,
                        "\(tag) \(when): lastSequence \(engine.statistics.lastSequence), expected \(lastSequence)")
            }

            for step in 0..<run.steps {
                var ops: [EngineTest.Op] = []
                // About one step in 250 is a reopen.
                switch rng.chance(0.004) ? 100 : rng.int(0..<100) {
                case 0..<45:
                    ops = [.put(keyspace: randomKeyspace(&rng), key: pool[rng.int(0..<pool.count)],
                                value: randomValue(&rng))]
                case 45..<58:
                    // Delete an existing key most of the time, a missing one otherwise.
                    let ks = randomKeyspace(&rng)
                    if let keys = model.spaces[ks]?.keys, !keys.isEmpty, rng.chance(0.7) {
                        ops = [.delete(keyspace: ks, key: Array(keys)[rng.int(0..<keys.count)])]
                    } else {
                        ops = [.delete(keyspace: ks, key: rng.bytes(rng.int(1...12)))]
                    }
                case 58..<100:
                    // A multi-operation batch across keyspaces with overwrites, put-then-delete, delete-then-put
                    // and deletes of missing keys.
                    for _ in 0..<rng.int(2...14) {
                        let ks = randomKeyspace(&rng)
                        let key = pool[rng.int(0..<pool.count)]
                        switch rng.int(0..<10) {
                        case 0..<5: ops.append(.put(keyspace: ks, key: key, value: randomValue(&rng)))
                        case 5: ops.append(.delete(keyspace: ks, key: rng.bytes(rng.int(11...16))))   // missing
                        case 6: ops.append(.delete(keyspace: ks, key: key))
                        case 7:
                            ops.append(.put(keyspace: ks, key: key, value: randomValue(&rng)))
                            ops.append(.put(keyspace: ks, key: key, value: randomValue(&rng)))   // overwrite
                        case 8:
                            ops.append(.put(keyspace: ks, key: key, value: randomValue(&rng)))
                            ops.append(.delete(keyspace: ks, key: key))
                        default:
                            ops.append(.delete(keyspace: ks, key: key))
                            ops.append(.put(keyspace: ks, key: key, value: randomValue(&rng)))
                        }
                    }
                default:
                    try engine.close()
                    engine = try Engine.open(at: dir, options: options)
                    reopens += 1
                    #expect(engine.recoveryReport.droppedBytes == 0, "\(tag) a clean close must leave no tail")
                    #expect(engine.recoveryReport.lastSequence == lastSequence, "\(tag) recovered lastSequence")
                    try check(engine, "after reopen at step \(step)", &rng)
                    continue
                }
                let sequence = try engine.commitAndWait(EngineTest.batch(ops))
                #expect(sequence == lastSequence + 1, "\(tag) step \(step): sequence \(sequence) after \(lastSequence)")
                lastSequence = sequence
                model.apply(ops)
                if step % 500 == 499 { try check(engine, "at step \(step)", &rng) }
            }

            try check(engine, "at the end", &rng)
            try engine.close()
            engine = try Engine.open(at: dir, options: options)
            try check(engine, "after the final reopen", &rng)
            #expect(reopens >= 1, "\(tag) the run should reopen")

            let stats = engine.statistics
            #expect(stats.segments >= run.minimumSegments, "\(tag) \(stats.segments) segments")
            if run.segmentSize != nil {
                #expect(stats.segments > 1, "\(tag) tiny segments must roll")
                #expect(try EngineTest.segmentPaths(dir).count == stats.segments, "\(tag) segment files on disk")
            }
            let report = try engine.verify()
            #expect(report.ok, "\(tag) verify: \(report.problems.prefix(5))")
            #expect(report.liveKeys == model.liveKeys, "\(tag) verify liveKeys \(report.liveKeys) vs \(model.liveKeys)")
            #expect(report.segments == stats.segments, "\(tag) verify segments")
            #expect(report.bytes == stats.totalBytes, "\(tag) verify bytes \(report.bytes) vs \(stats.totalBytes)")
        }
    }
}
