/// The bookkeeping of an ``InMemoryStore``: boxed entities in slots, filed by their identifiers' halves, with a
/// least-recently-used list over the slots.
///
/// Not generic, like ``EntityCacheTable``: the library's generic code is not specialized for the app's entity
/// types, and each use of a type built on the entity type there (`[E?]`, `Optional<E>`, a generic state struct
/// under a lock) looks its metadata up at run time, several hundred instructions each. The store boxes and
/// unboxes (``EntityBox``); everything else here works on boxes and halves.
struct InMemoryTable {
    /// A boxed entity (an `EntityBox<E>` of the store's entity type).
    typealias Box = any AnyObject & Sendable

    /// Slots by identifier, keyed by the identifiers' halves as bytes.
    private var index = DualHashDictionary<IdentifierHalves, Int>()
    /// Entities by slot (nil: a free slot). The recency list's links live apart, in `prev` and `next`, so that
    /// moving a slot to the front touches two `Int` arrays only.
    private var boxes: [Box?] = []
    /// The halves of the identifier of each held slot's entity (what `index` files the slot under).
    private var keys: [IdentifierHalves?] = []
    private var prev: [Int] = []
    private var next: [Int] = []
    private var free: [Int] = []
    /// Most recently used slot (-1: none) and least recently used.
    private var head = -1
    private var tail = -1

    /// Entities held.
    var count: Int { index.count }

    /// The entity filed under `halves` (either half matching), made the most recently used. O(1) expected.
    mutating func use(_ halves: IdentifierHalves) -> Box? {
        guard let i = index[halves] else { return nil }
        touch(i)
        return boxes[i]
    }

    /// The entities matching `halves`: one, or two when the identifier's halves were stored apart (once by each
    /// half alone), each made the most recently used, in slot order of the index's answer. O(1) expected.
    mutating func useAll(matching halves: IdentifierHalves, into found: inout [Box]) {
        for i in index.values(matching: halves) {
            guard let box = boxes[i] else { continue }
            touch(i)
            found.append(box)
        }
    }

    /// The slots matching `halves` (see ``DualHashDictionary/valuePair(matching:)``).
    func slots(matching halves: IdentifierHalves) -> (Int?, Int?) { index.valuePair(matching: halves) }

    /// The entity in held slot `i` and the halves it is filed under (nil for a free slot).
    func entry(at i: Int) -> (box: Box, halves: IdentifierHalves)? {
        guard let box = boxes[i], let halves = keys[i] else { return nil }
        return (box, halves)
    }

    /// Every held entity, in slot order.
    func forEach(_ body: (Box) throws -> Void) rethrows {
        for case let box? in boxes { try body(box) }
    }

    /// Every held entity, most recently used first. O(n).
    var byRecency: [Box] {
        var out: [Box] = []
        var i = head
        while i >= 0, let box = boxes[i] {
            out.append(box)
            i = next[i]
        }
        return out
    }

    /// Makes slot `i` the most recently used.
    private mutating func touch(_ i: Int) {
        guard head != i else { return }
        unlink(i)
        pushFront(i)
    }

    /// Puts `box` in held slot `i`, filed under `halves` instead of what the slot was filed under, and makes it the
    /// most recently used.
    mutating func replace(_ i: Int, with box: Box, filedUnder halves: IdentifierHalves) {
        if let old = keys[i] { index.removeValues(matching: old) }
        index[halves] = i
        keys[i] = halves
        boxes[i] = box
        touch(i)
    }

    /// Files `box` under `halves` in a new slot, the most recently used (nothing may match them yet:
    /// ``slots(matching:)`` answers nil for them).
    mutating func add(_ box: Box, filedUnder halves: IdentifierHalves) {
        let i: Int
        if let f = free.popLast() {
            i = f
            boxes[i] = box
            keys[i] = halves
        } else {
            i = boxes.count
            boxes.append(box)
            keys.append(halves)
            prev.append(-1)
            next.append(-1)
        }
        index.insertNew(i, forKey: halves)
        pushFront(i)
    }

    /// Empties held slot `i`, filed under exactly the halves it holds.
    mutating func drop(_ i: Int) {
        guard let halves = keys[i] else { return }
        index.removeValue(forKey: halves)
        release(i)
    }

    /// Removes every entity equal to the identifier of `halves` (two when it was stored once by each half alone).
    mutating func remove(_ halves: IdentifierHalves) {
        let (first, second) = index.removeValuePair(matching: halves)
        if let first { release(first) }
        if let second { release(second) }
    }

    /// Removes least recently used entities until at most `limit` are held.
    mutating func evict(downTo limit: Int) {
        while index.count > limit, tail >= 0, let halves = keys[tail] { remove(halves) }
    }

    /// Checks the table's structure (tests and debug builds): the recency list runs from `head` to `tail` over
    /// exactly the held slots, each link mirrored; every held slot is filed under its halves; free slots hold
    /// nothing. - Complexity: O(slots). Traps on a broken invariant.
    func checkInvariants() {
        var held = 0
        for i in 0 ..< boxes.count {
            precondition((boxes[i] == nil) == (keys[i] == nil), "slot \(i): a box without halves or halves without a box")
            guard let halves = keys[i] else { continue }
            held += 1
            precondition(index[halves] == i, "slot \(i) is not filed under its halves")
        }
        precondition(held == index.count, "\(held) held slots, \(index.count) in the index")
        precondition(held + free.count == boxes.count, "free slots do not account for the rest")
        precondition(Set(free).count == free.count && free.allSatisfy { keys[$0] == nil }, "a free slot is held or listed twice")
        var seen = 0
        var previous = -1
        var i = head
        while i >= 0 {
            precondition(keys[i] != nil && prev[i] == previous, "recency list broken at slot \(i)")
            seen += 1
            precondition(seen <= held, "recency list longer than the held slots")
            previous = i
            i = next[i]
        }
        precondition(previous == tail && seen == held, "recency list ends at \(previous), not \(tail), or misses slots")
    }

    private mutating func unlink(_ i: Int) {
        guard keys[i] != nil else { return }
        let p = prev[i], n = next[i]
        if p >= 0 { next[p] = n } else { head = n }
        if n >= 0 { prev[n] = p } else { tail = p }
    }

    private mutating func pushFront(_ i: Int) {
        prev[i] = -1
        next[i] = head
        if head >= 0 { prev[head] = i }
        head = i
        if tail < 0 { tail = i }
    }

    /// Empties slot `i` (which must be held and already out of `index`).
    private mutating func release(_ i: Int) {
        unlink(i)
        boxes[i] = nil
        keys[i] = nil
        free.append(i)
    }
}
