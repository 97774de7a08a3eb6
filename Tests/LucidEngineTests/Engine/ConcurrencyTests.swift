import Foundation
import Testing
@testable import LucidEngine

/// Readers during writes: a writer commits batches that each set all of 50 keys to the same counter (and bump a
/// version key); concurrent readers must only ever see whole batches, and never go back in time.
@Suite("Engine readers during writes")
struct ConcurrencyTests {
    static let keyCount = 50
    static func key(_ i: Int) -> [UInt8] { Array("counter-\(i < 10 ? "0" : "")\(i)".utf8) }
    static func encode(_ v: UInt64) -> [UInt8] { EngineTest.le64(v) }
    static func decode(_ b: [UInt8]) -> UInt64? { b.count >= 8 ? EngineTest.u64(b, 0) : nil }

    static func batch(_ counter: UInt64, padding: Int) -> WriteBatch {
        var b = WriteBatch()
        for i in 0..<keyCount {
            // The counter, then padding so that a batch spans several pages.
            b.put(encode(counter) + [UInt8](repeating: UInt8(truncatingIfNeeded: counter), count: padding),
                  forKey: key(i), in: "counters")
        }
        b.put(encode(counter), forKey: Array("version".utf8), in: "meta")
        return b
    }

    @Test("snapshots and scans see whole batches only, and versions never go backwards",
          arguments: [(EngineOptions.SyncMode.none, 0), (.always, 300)])
    func readersSeeWholeBatches(mode: EngineOptions.SyncMode, padding: Int) throws {
        try EngineTest.withTemporaryDirectory { dir in
            // A small page cache, so that readers also verify pages read from disk.
            let engine = try Engine.open(at: dir, options: EngineTest.options(sync: mode, pageCacheBytes: 64 << 10))
            defer { try? engine.close() }
            try engine.commitAndWait(Self.batch(0, padding: padding))
            let batches: UInt64 = 150
            let failures = EngineTest.FailureLog()
            let writerDone = AtomicBool()
            let readerCount = 2
            let reads = EngineTest.FailureLog()   // one entry per reader: how many snapshots it checked
            let group = DispatchGroup()

            for r in 0..<readerCount {
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    var lastVersion: UInt64 = 0
                    var lastSequence: UInt64 = 0
                    var lastPerKey = [UInt64](repeating: 0, count: Self.keyCount)
                    var checked = 0
                    func fail(_ message: String) { failures.add("reader \(r) read \(checked): \(message)") }
                    while failures.count < 10 {
                        let finished = writerDone.value
                        do {
                            // A snapshot: the version key and all 50 counters agree.
                            let snapshot = engine.snapshot()
                            guard let version = try snapshot.get(Array("version".utf8), in: "meta").flatMap(Self.decode) else {
                                fail("no version"); break
                            }
                            if version < lastVersion { fail("version went back from \(lastVersion) to \(version)") }
                            if snapshot.sequence < lastSequence { fail("snapshot sequence went back") }
                            lastVersion = version
                            lastSequence = snapshot.sequence
                            let records = try snapshot.scan(in: "counters", reverse: r % 2 == 1)
                            let values = Set(records.map { Self.decode(Array($0.value.prefix(8))) })
                            if records.count != Self.keyCount || snapshot.count(in: "counters") != Self.keyCount {
                                fail("\(records.count) records")
                            }
                            if values != [version] { fail("snapshot at version \(version) saw counters \(values.sorted { ($0 ?? 0) < ($1 ?? 0) })") }
                            if records.contains(where: { $0.value.count != 8 + padding }) { fail("a value has the wrong length") }
                            if try snapshot.get(Self.key(r), in: "counters").flatMap(Self.decode) != version {
                                fail("snapshot get disagrees with its scan")
                            }

                            // A scan of the engine reads one snapshot too: one value across all keys.
                            let scanned = try engine.scan(in: "counters", range: .prefix(Array("counter-".utf8)))
                            let scannedValues = Set(scanned.map { Self.decode(Array($0.value.prefix(8))) })
                            if scanned.count != Self.keyCount || scannedValues.count != 1 {
                                fail("engine scan saw \(scanned.count) records with \(scannedValues.count) values")
                            } else if let v = scannedValues.first!, v < version {
                                fail("a scan after a snapshot at \(version) saw the older \(v)")
                            }

                            // Plain gets are not atomic across keys, but each key only moves forward.
                            let i = checked % Self.keyCount
                            if let v = try engine.get(Self.key(i), in: "counters").flatMap(Self.decode) {
                                if v < lastPerKey[i] { fail("key \(i) went back from \(lastPerKey[i]) to \(v)") }
                                lastPerKey[i] = v
                            } else {
                                fail("key \(i) missing")
                            }
                        } catch {
                            fail("\(error)")
                        }
                        checked += 1
                        if finished { break }
                    }
                    reads.add("\(checked)")
                }
            }

            group.enter()
            Thread.detachNewThread {
                defer { writerDone.set(); group.leave() }
                do {
                    for counter in 1...batches { try engine.commitAndWait(Self.batch(counter, padding: padding)) }
                } catch {
                    failures.add("writer: \(error)")
                }
            }
            group.wait()

            #expect(failures.all.isEmpty, "\(failures.all.prefix(10).joined(separator: "\n"))")
            #expect(reads.all.count == readerCount && reads.all.allSatisfy { (Int($0) ?? 0) > 0 }, "readers ran: \(reads.all)")
            // After the writer: everything at the last counter.
            let final = try engine.scan(in: "counters")
            #expect(final.count == Self.keyCount && final.allSatisfy { Self.decode(Array($0.value.prefix(8))) == batches })
            #expect(try engine.get(Array("version".utf8), in: "meta") == Self.encode(batches))
        }
    }
}

/// A flag set once by one thread and read by others.
private final class AtomicBool: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }
    func set() { lock.lock(); flag = true; lock.unlock() }
}
