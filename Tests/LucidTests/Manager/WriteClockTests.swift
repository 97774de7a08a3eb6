import Foundation
import Testing
@testable import Lucid

/// The write clock against a reference: the same decisions as a `DualHashDictionary` of timestamps (the clock's
/// first form), on random writes by local, remote and both halves; and its bound.
@Suite("Write clock")
struct WriteClockTests {
    /// The reference: timestamps in a DualHashDictionary, as the clock kept them before it keyed halves by bytes.
    struct Reference {
        var last = DualHashDictionary<Book.Identifier, UInt64>()
        mutating func admit(_ id: Book.Identifier, at time: UInt64) -> Bool {
            if let previous = last[id], time < previous { return false }
            last[id] = time
            return true
        }
    }

    @Test("the same decisions as a DualHashDictionary of timestamps, on random identifiers and origins")
    func matchesReference() {
        for seed in UInt64(1)...20 {
            var rng = SplitMix(seed: seed)
            var clock = WriteClock(capacity: 1 << 30)
            var reference = Reference()
            var time: UInt64 = 1_000
            for step in 0..<3_000 {
                let local = "l\(rng.next() % 12)", remote = Int(rng.next() % 12)
                let id: Book.Identifier = switch rng.next() % 3 {
                case 0: .local(local)
                case 1: .remote(remote)
                default: .remote(remote, local: local)
                }
                // Mostly fresh timestamps, sometimes an origin from the past.
                time += 1
                let stamp = rng.next() % 4 == 0 ? time - rng.next() % 40 : time
                let expected = reference.admit(id, at: stamp)
                let got = clock.admit(id, at: stamp)
                if got != expected {
                    Issue.record("seed \(seed) step \(step): \(id) at \(stamp): clock \(got), reference \(expected)")
                    return
                }
            }
        }
    }

    @Test("with a small capacity (generations forgotten often) the clock never admits a write older than the last one admitted")
    func forgettingNeverAdmitsStale() {
        for seed in UInt64(1)...20 {
            var rng = SplitMix(seed: seed)
            var clock = WriteClock(capacity: 8)
            // The reference sees the writes the clock admitted: what the stores hold.
            var reference = Reference()
            var time: UInt64 = 1_000
            var refusedFresh = 0
            for step in 0..<3_000 {
                // Entities 0..<20 are named by their remote value (with their local one or not), entities 20..<40 by
                // their local value only: every write finds its entity's record by a half the record holds. (A
                // write by one half only, after the generation that linked it to the other was forgotten, is
                // judged by what the clock still knows: such a pair of writes can pass each other.)
                let n = Int(rng.next() % 40)
                let id: Book.Identifier = n >= 20 ? .local("l\(n)") : rng.next() % 2 == 0 ? .remote(n) : .remote(n, local: "l\(n)")
                time += 1
                let stamp = rng.next() % 4 == 0 ? time - rng.next() % 200 : time
                var probe = reference
                let fresh = probe.admit(id, at: stamp)
                let got = clock.admit(id, at: stamp)
                if got && !fresh {
                    Issue.record("seed \(seed) step \(step): \(id) at \(stamp) admitted, older than its last write")
                    return
                }
                if got { reference = probe } else if fresh { refusedFresh += 1 }
            }
            // Forgetting refuses some old origins of forgotten identifiers, never every write.
            #expect(refusedFresh < 1_000, "seed \(seed): \(refusedFresh)")
            #expect(clock.recordedCount <= 2 * 8 + 2)
        }
    }

    @Test("local values are told apart by their bytes, as identifiers are: canonically equal strings are two ids")
    func localValuesByBytes() {
        let box = ClockBox(WriteClock())
        let composed = Book.Identifier.local("\u{e9}"), decomposed = Book.Identifier.local("e\u{301}")
        #expect(!composed.dualEquals(decomposed))
        #expect(box.admit(composed, at: 20))
        #expect(box.admit(decomposed, at: 15), "another entity's first write")
        #expect(!box.admit(composed, at: 18))
    }

    @Test("a stale write is refused by either half once both are known together")
    func dualHalves() {
        let box = ClockBox(WriteClock())
        #expect(box.admit(Book.Identifier.local("a"), at: 10))
        #expect(box.admit(Book.Identifier.remote(1, local: "a"), at: 20))
        #expect(!box.admit(Book.Identifier.remote(1), at: 15))
        #expect(!box.admit(Book.Identifier.local("a"), at: 15))
        #expect(box.admit(Book.Identifier.remote(2, local: "a"), at: 15))   // another entity: other remote half
        #expect(box.admit(Book.Identifier.remote(1), at: 30))
        #expect(!box.admit(Book.Identifier.local("a"), at: 25))             // the remote write reached "a" too
    }

    @Test("past its capacity the clock forgets the older half, and refuses writes older than what it forgot")
    func bounded() {
        let box = ClockBox(WriteClock(capacity: 1_000))
        for i in 0..<10_000 { #expect(box.admit(Book.Identifier.remote(i), at: UInt64(100 + i))) }
        #expect(box.clock.recordedCount <= 2 * 1_000 + 1)
        #expect(box.clock.recordedCount >= 400)
        // Forgotten: an old origin is refused (it may be older than what was written); a fresh one is admitted.
        #expect(!box.admit(Book.Identifier.remote(0), at: 50))
        #expect(box.admit(Book.Identifier.remote(0), at: 20_000))
        // Remembered: refused only when older than its own write.
        #expect(!box.admit(Book.Identifier.remote(9_999), at: 100 + 9_998))
        #expect(box.admit(Book.Identifier.remote(9_998), at: 100 + 9_998))
    }
}

/// A clock in a box, so that `#expect` can call its mutating `admit`.
final class ClockBox {
    var clock: WriteClock
    init(_ clock: WriteClock) { self.clock = clock }
    func admit(_ id: Book.Identifier, at time: UInt64) -> Bool { clock.admit(id, at: time) }
}
