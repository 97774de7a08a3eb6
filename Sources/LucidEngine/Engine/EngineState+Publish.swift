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
        var liveDelta: Int64 = 0
        for run in plan.keyspaces {
            let hasPut = run.operations.contains { plan.operations[$0].kind == .put }
            guard var keyspace = keyspaces.removeValue(forKey: run.name) ?? (hasPut ? KeyspaceState() : nil) else {
                continue  // only deletes, in a keyspace that does not exist
            }
            run.keys.withView { keys in
                // Primary tree: deletes one by one, puts as one sorted run.
                var puts = PackedKeys(reservingKeys: keys.count, bytes: keys.bytes.count)
                var putLocations: [RecordLocation] = []
                putLocations.reserveCapacity(keys.count)
                for (j, i) in run.operations.enumerated() {
                    let op = plan.operations[i]
                    switch op.kind {
                    case .put:
                        puts.append(keys[j])
                        putLocations.append(location(i))
                        liveDelta += AutoCompactionState.recordBytes(keyLength: keys[j].count,
                                                                     valueLength: UInt32(op.value.count))
                    case .delete:
                        if let old = keyspace.primary.removeValue(forKey: keys[j]) {
                            liveDelta -= AutoCompactionState.recordBytes(keyLength: keys[j].count,
                                                                         valueLength: old.valueLength)
                        }
                    }
                }
                puts.withView { putKeys in
                    keyspace.primary.updateValues(puts, putLocations) { p, old in
                        liveDelta -= AutoCompactionState.recordBytes(keyLength: putKeys[p].count,
                                                                     valueLength: old.valueLength)
                    }
                }
                // Secondary indexes: replaced entries out, then each index's new entries as a sorted run.
                for (j, i) in run.operations.enumerated() where !plan.replaced[i].isEmpty {
                    keyspace.removeTerms(plan.replaced[i], forKey: keys[j])
                }
                var entries = IndexEntryRuns()
                for (j, i) in run.operations.enumerated() {
                    for term in plan.operations[i].terms { entries.append(term, forKey: keys[j]) }
                }
                entries.insert(into: &keyspace)
            }
            keyspaces[run.name] = keyspace
        }
        return liveDelta
    }

    /// `publish` for a group that writes some key more than once: every operation in commit order.
    private mutating func publishInOrder(_ plan: CommitGroupPlan, location: (Int) -> RecordLocation) -> Int64 {
        var liveDelta: Int64 = 0
        for (i, op) in plan.operations.enumerated() {
            let replaced = plan.replaced[i]
            op.key.withUnsafeBytes { key in
                switch op.kind {
                case .put:
                    let old = keyspaces[op.keyspace, default: KeyspaceState()].primary
                        .updateValue(location(i), forKey: key)
                    liveDelta += AutoCompactionState.recordBytes(keyLength: key.count, valueLength: UInt32(op.value.count))
                    if let old {
                        liveDelta -= AutoCompactionState.recordBytes(keyLength: key.count, valueLength: old.valueLength)
                    }
                case .delete:
                    if let old = keyspaces[op.keyspace]?.primary.removeValue(forKey: key) {
                        liveDelta -= AutoCompactionState.recordBytes(keyLength: key.count, valueLength: old.valueLength)
                    }
                }
                if !replaced.isEmpty { keyspaces[op.keyspace]?.removeTerms(replaced, forKey: key) }
                if !op.terms.isEmpty { keyspaces[op.keyspace]?.insertTerms(op.terms, forKey: key) }
            }
        }
        return liveDelta
    }
}

/// A commit group's new index entries for one keyspace, gathered per index name (`term ‖ primary key`, with
/// the term's length as value, as `KeyspaceState` stores them) and inserted as one sorted run per index.
private struct IndexEntryRuns {
    /// Index names in order of first appearance; a group rarely touches more than a few, so a linear search
    /// beats hashing each term's index name.
    private var names: [String] = []
    private var keys: [PackedKeys] = []
    private var termLengths: [[UInt16]] = []

    mutating func append(_ term: IndexTerm, forKey key: UnsafeRawBufferPointer) {
        let n = names.firstIndex(of: term.index) ?? {
            names.append(term.index)
            keys.append(PackedKeys())
            termLengths.append([])
            return names.count - 1
        }()
        keys[n].append(term.term, key)
        termLengths[n].append(UInt16(term.term.count))
    }

    /// Inserts every gathered entry; an entry listed twice (a record with a repeated term) is inserted once.
    func insert(into keyspace: inout KeyspaceState) {
        for (n, name) in names.enumerated() {
            let order = keys[n].sortedOrder(droppingDuplicates: true)
            let values = order.map { termLengths[n][$0] }
            keyspace.indexes[name, default: BTree()].updateValues(keys[n].reordered(order), values) { _, _ in }
        }
    }
}
