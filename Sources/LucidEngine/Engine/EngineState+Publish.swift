extension EngineState {
    /// Applies a written commit group to the keyspaces (primary trees and secondary indexes); `location(i)`
    /// is where operation `i`'s record was written. Returns the change in live record bytes (for automatic
    /// compaction).
    ///
    /// The result is always that of applying the operations one by one in commit order. When no key repeats
    /// within the group, each keyspace's puts go into its primary tree as one sorted run, and each index's new
    /// entries as one sorted run per index (after every replaced entry is removed: entries of different keys
    /// never coincide, so the order between keys does not matter).
    mutating func publish(_ plan: CommitGroupPlan, location: (Int) -> RecordLocation) -> Int64 {
        if plan.repeatsKeys { return publishInOrder(plan, location: location) }
        // Operations read in place from the batch's buffer, field by field: nothing retained per operation.
        return plan.operations.withPacked { ops in publishRuns(plan, ops, location: location) }
    }

    /// ``publish(_:location:)`` for a group whose keys are distinct: sorted runs; `ops` are `plan.operations`.
    private mutating func publishRuns(_ plan: CommitGroupPlan, _ ops: WriteBatch.Packed,
                                      location: (Int) -> RecordLocation) -> Int64 {
        var liveDelta: Int64 = 0
        for run in plan.keyspaces {
            let hasPut = run.operations.contains { ops[$0].kind == .put }
            guard var keyspace = keyspaces.removeValue(forKey: run.name) ?? (hasPut ? KeyspaceState() : nil) else {
                continue  // only deletes, in a keyspace that does not exist
            }
            run.keys.withView { keys in
                // Primary tree: deletes one by one, puts as one sorted run.
                var puts = PackedKeys(reservingKeys: keys.count, bytes: keys.bytes.count)
                var putLocations: [RecordLocation] = []
                putLocations.reserveCapacity(keys.count)
                for (j, i) in run.operations.enumerated() {
                    switch ops[i].kind {
                    case .put:
                        puts.append(keys[j])
                        putLocations.append(location(i))
                        liveDelta += AutoCompactionState.recordBytes(keyLength: keys[j].count,
                                                                     valueLength: UInt32(ops[i].valueLength))
                    case .delete:
                        if let old = keyspace.primary.removeValue(forKey: keys[j]) {
                            liveDelta -= AutoCompactionState.recordBytes(keyLength: keys[j].count,
                                                                         valueLength: old.valueLength)
                        }
                    }
                }
                // Secondary indexes: replaced entries out first (entries of different keys never coincide, so this
                // may precede the primary tree's update), then each index's new entries as a sorted run.
                for (j, i) in run.operations.enumerated() where !plan.replaced[i].isEmpty {
                    keyspace.removeTerms(plan.replaced[i], forKey: keys[j])
                }
                var entries = IndexEntryRuns()
                for (j, i) in run.operations.enumerated() {
                    ops.forEachTerm(i) { name, term in entries.append(index: name, term: term, forKey: j) }
                }
                liveDelta += Self.insertRuns(puts, putLocations, entries, into: &keyspace, keys: keys)
            }
            keyspaces[run.name] = keyspace
        }
        return liveDelta
    }

    /// Inserts a keyspace's sorted run of puts into its primary tree and each index's run of new entries into
    /// that index; returns the change in live bytes (the records the puts replace). The trees are independent, so
    /// a large group updates them in parallel (``ParallelPublish``). O(m log n) for m entries.
    private static func insertRuns(_ puts: PackedKeys, _ locations: [RecordLocation], _ entries: IndexEntryRuns,
                                   into keyspace: inout KeyspaceState, keys: PackedKeys.View) -> Int64 {
        let names = entries.names
        guard ParallelPublish.worthIt(entries: puts.count + entries.count), !names.isEmpty else {
            let delta = updatePrimary(&keyspace.primary, puts, locations)
            for n in names.indices { entries.insert(n, into: &keyspace.indexes[names[n], default: BTree()], keys: keys) }
            return delta
        }
        // Each tree is taken out of the keyspace (so that it stays uniquely referenced) and updated on its own thread.
        var primary = keyspace.primary
        keyspace.primary = BTree()
        var indexes = names.map { keyspace.indexes.removeValue(forKey: $0) ?? BTree() }
        var delta: Int64 = 0
        ParallelPublish.run(&primary, &indexes) { tree in delta = updatePrimary(&tree, puts, locations) } index: { n, tree in
            entries.insert(n, into: &tree, keys: keys)
        }
        keyspace.primary = primary
        for (n, name) in names.enumerated() { keyspace.indexes[name] = indexes[n] }
        return delta
    }

    /// Inserts the sorted run `puts` (at `locations`) into `primary`; returns minus the bytes of the records
    /// replaced. O(m log n).
    private static func updatePrimary(_ primary: inout BTree<RecordLocation>, _ puts: PackedKeys,
                                      _ locations: [RecordLocation]) -> Int64 {
        var replacedBytes: Int64 = 0
        puts.withView { putKeys in
            primary.updateValues(puts, locations) { p, old in
                replacedBytes += AutoCompactionState.recordBytes(keyLength: putKeys[p].count, valueLength: old.valueLength)
            }
        }
        return -replacedBytes
    }

    /// `publish` for a group that writes some key more than once: every operation in commit order.
    private mutating func publishInOrder(_ plan: CommitGroupPlan, location: (Int) -> RecordLocation) -> Int64 {
        var liveDelta: Int64 = 0
        let batch = plan.operations
        for i in 0 ..< batch.count {
            let replaced = plan.replaced[i]
            let op = batch.entries[i]
            let name = batch.keyspaceNames[op.keyspace]
            let terms = batch.terms(of: i)
            let key = batch.withPacked { Array($0.key(i)) }
            key.withUnsafeBytes { key in
                switch op.kind {
                case .put:
                    let old = keyspaces[name, default: KeyspaceState()].primary
                        .updateValue(location(i), forKey: key)
                    liveDelta += AutoCompactionState.recordBytes(keyLength: key.count, valueLength: UInt32(op.valueLength))
                    if let old {
                        liveDelta -= AutoCompactionState.recordBytes(keyLength: key.count, valueLength: old.valueLength)
                    }
                case .delete:
                    if let old = keyspaces[name]?.primary.removeValue(forKey: key) {
                        liveDelta -= AutoCompactionState.recordBytes(keyLength: key.count, valueLength: old.valueLength)
                    }
                }
                if !replaced.isEmpty { keyspaces[name]?.removeTerms(replaced, forKey: key) }
                if !terms.isEmpty { keyspaces[name]?.insertTerms(terms, forKey: key) }
            }
        }
        return liveDelta
    }
}

/// A commit group's new index entries for one keyspace, gathered per index name and inserted as one sorted run
/// per index (`term ‖ primary key`, with the term's length as value, as `KeyspaceState` stores them).
///
/// The keyspace's keys come sorted and distinct, and entries are gathered in that order, so a stable sort of
/// each index's entries by term alone (``TermOrder``) orders them by (term, key): which is the order of
/// `term ‖ key`, because every committed term is a self-delimiting ``IndexValue`` encoding.
private struct IndexEntryRuns {
    /// Index names in order of first appearance; a group rarely touches more than a few, so a linear search
    /// beats hashing each term's index name.
    private(set) var names: [String] = []
    /// Each spelling of a name met, as UTF-8 bytes (which terms are matched against), with its position in
    /// `names`. Names are equal as strings are (canonical equivalence, as the keyspace's dictionary of indexes
    /// compares them), so two spellings of one name share one run.
    private var spellings: [(bytes: [UInt8], name: Int)] = []
    private var runs: [Run] = []

    /// Entries gathered, over every index.
    var count: Int { runs.reduce(0) { $0 + $1.keys.count } }

    /// One index's entries: entry `e` is term `terms[e]` of key `keys[e]` of the keyspace's sorted run.
    private struct Run {
        var terms = PackedKeys()
        var keys: [Int] = []
    }

    /// Adds term `term` of index `index` (its name's UTF-8 bytes) for key `j` of the keyspace's sorted run.
    mutating func append(index: UnsafeRawBufferPointer, term: UnsafeRawBufferPointer, forKey j: Int) {
        let n = spellings.first(where: { $0.bytes.count == index.count && $0.bytes.elementsEqual(index) })?.name ?? {
            let name = String(decoding: index, as: UTF8.self)
            let n = names.firstIndex(of: name) ?? {
                names.append(name)
                runs.append(Run())
                return names.count - 1
            }()
            spellings.append((Array(index), n))
            return n
        }()
        runs[n].terms.append(term)
        runs[n].keys.append(j)
    }

    /// Inserts the gathered entries of index `names[n]` into `tree`; an entry listed twice (a record with a repeated
    /// term) is inserted once. `keys` are the keyspace's sorted, distinct keys the entries refer to. O(n log n)
    /// integer comparisons for its n entries.
    func insert(_ n: Int, into tree: inout BTree<UInt16>, keys: PackedKeys.View) {
        assert(keys.isSorted, "IndexEntryRuns: the keyspace's keys must be sorted and distinct")
        let run = runs[n]
        var entries = PackedKeys(reservingKeys: run.keys.count, bytes: run.terms.bytes.count + run.keys.count * 16)
        var termLengths: [UInt16] = []
        termLengths.reserveCapacity(run.keys.count)
        run.terms.withView { terms in
            var previous = -1
            for e in TermOrder.order(terms) {
                if previous >= 0 && run.keys[previous] == run.keys[e]
                    && BTreeLayout.compare(terms[previous], terms[e]) == 0 { continue }   // a repeated term
                entries.append(terms[e], keys[run.keys[e]])
                termLengths.append(UInt16(truncatingIfNeeded: terms[e].count))
                previous = e
            }
        }
        tree.updateValues(entries, termLengths) { _, _ in }
    }
}
