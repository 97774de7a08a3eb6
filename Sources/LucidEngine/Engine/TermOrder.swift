/// The order in which a commit group inserts one index's new entries: the entries' positions, stably sorted by
/// term (entry `e` has term `terms[e]`; entries come in key order, so the result orders them by (term, key)).
///
/// Most indexes hold few distinct values next to many records (a genre, a rating, a flag, a foreign key), so a
/// group of a thousand records carries a thousand terms but only a handful of distinct ones. Those are grouped
/// through a small hash table (one probe per entry, no comparison sort of the entries), the distinct terms are
/// sorted, and each entry lands at its group's next place: O(n + d log d) for n entries and d distinct terms.
/// When most terms are distinct (timestamps, titles) the grouping gives up early and the entries are sorted by
/// comparison, most comparisons on the terms' first 16 bytes held as two integers: O(n log n).
enum TermOrder {
    /// The entries' positions, stably sorted by term bytes (as `BTreeLayout.compare` orders them).
    static func order(_ terms: PackedKeys.View) -> [Int] {
        let n = terms.count
        guard n > 1 else { return Array(0 ..< n) }
        return grouped(terms) ?? sorted(terms)
    }

    /// A term's first 16 bytes as two big-endian integers (zero-padded) and its length: for terms of at most 16
    /// bytes, equal triples mean equal terms, and their order is the terms' order.
    struct Summary: Equatable {
        var head: UInt64
        var next: UInt64
        var length: Int

        init(_ term: UnsafeRawBufferPointer) {
            head = BTreeLayout.head(of: term)
            next = term.count > 8 ? BTreeLayout.head(of: term, from: 8) : 0
            length = term.count
        }

        /// Whether `a` sorts before `b`, terms `ta` and `tb` read only when their first 16 bytes tie.
        @inline(__always)
        static func precedes(_ a: Summary, _ ta: UnsafeRawBufferPointer, _ b: Summary, _ tb: UnsafeRawBufferPointer) -> Bool? {
            if a.head != b.head { return a.head < b.head }
            if a.next != b.next { return a.next < b.next }
            if a.length > 16 || b.length > 16 || a.length != b.length {
                let order = BTreeLayout.compare(ta, tb)
                if order != 0 { return order < 0 }
            }
            return nil   // equal terms
        }

        /// A hash of the whole term: its summary, and for a longer term every further byte (terms sharing their
        /// first 16 bytes must not all fall in one bucket). O(length).
        func hash(_ term: UnsafeRawBufferPointer) -> UInt64 {
            var h = (head &* 0x9E37_79B9_7F4A_7C15) ^ (next &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(truncatingIfNeeded: length)
            var offset = 16
            while offset < length {
                h = (h ^ BTreeLayout.head(of: term, from: offset)) &* 0x1000_0000_01B3
                offset &+= 8
            }
            h ^= h &>> 33   // a finalizer: every bit of the summary reaches the low bits the table uses
            h = h &* 0xFF51_AFD7_ED55_8CCD
            return h ^ (h &>> 33)
        }
    }

    /// The longest probe the grouping's hash table accepts before it gives up.
    static let maximumProbes = 64

    /// The order through grouping equal terms, or nil when more than a quarter of the terms are distinct (the
    /// comparison sort is then as fast) or a probe of the table grows longer than ``maximumProbes`` (terms built to
    /// collide). O(n + d log d) for d distinct terms, O(n) probes of at most ``maximumProbes`` slots.
    static func grouped(_ terms: PackedKeys.View) -> [Int]? {
        let n = terms.count
        let limit = Swift.max(n / 4, 1)
        var capacity = 16
        while capacity < 4 * limit { capacity &<<= 1 }
        let mask = capacity &- 1
        var groups: [(summary: Summary, entry: Int, count: Int)] = []   // a group's first entry and its size
        groups.reserveCapacity(limit)
        var groupOf = [Int32](repeating: 0, count: n)
        let complete = withUnsafeTemporaryAllocation(of: Int32.self, capacity: capacity) { table -> Bool in
            table.initialize(repeating: -1)
            for e in 0 ..< n {
                let term = terms[e]
                let summary = Summary(term)
                var slot = Int(truncatingIfNeeded: summary.hash(term)) & mask
                var probes = 0
                while true {
                    // The table is at most a quarter full, so a probe this long means terms chosen to collide:
                    // the comparison sort orders them in O(n log n) rather than grouping them in O(n × d).
                    probes &+= 1
                    guard probes <= Self.maximumProbes else { return false }
                    let g = Int(table[slot])
                    if g < 0 {
                        guard groups.count < limit else { return false }
                        table[slot] = Int32(truncatingIfNeeded: groups.count)
                        groupOf[e] = Int32(truncatingIfNeeded: groups.count)
                        groups.append((summary, e, 1))
                        break
                    }
                    if groups[g].summary == summary
                        && (summary.length <= 16 || BTreeLayout.compare(terms[groups[g].entry], term) == 0) {
                        groupOf[e] = Int32(truncatingIfNeeded: g)
                        groups[g].count &+= 1
                        break
                    }
                    slot = (slot &+ 1) & mask
                }
            }
            return true
        }
        guard complete else { return nil }
        // The distinct terms in order (they are distinct, so the sort needs no tie-break), then each group's start.
        var byTerm = Array(0 ..< groups.count)
        byTerm.sort { a, b in
            Summary.precedes(groups[a].summary, terms[groups[a].entry], groups[b].summary, terms[groups[b].entry]) ?? false
        }
        var next = [Int](repeating: 0, count: groups.count)
        var start = 0
        for g in byTerm {
            next[g] = start
            start &+= groups[g].count
        }
        return [Int](unsafeUninitializedCapacity: n) { out, initialized in
            for e in 0 ..< n {   // entries in key order: each group's stay in that order
                let g = Int(truncatingIfNeeded: groupOf[e])
                out[next[g]] = e
                next[g] &+= 1
            }
            initialized = n
        }
    }

    /// The order through a comparison sort of the entries, ties broken by position. O(n log n).
    static func sorted(_ terms: PackedKeys.View) -> [Int] {
        var items = (0 ..< terms.count).map { e in (summary: Summary(terms[e]), entry: e) }
        items.sort { a, b in
            Summary.precedes(a.summary, terms[a.entry], b.summary, terms[b.entry]) ?? (a.entry < b.entry)
        }
        return items.map(\.entry)
    }
}
