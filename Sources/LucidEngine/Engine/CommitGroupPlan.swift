/// What the writer works out about a commit group before writing it: the operations in group order, each
/// keyspace's operations in key order, and the index terms each operation replaces (read from the log outside
/// the exclusive lock, so readers are not blocked by that I/O; a failure fails the commit before anything is
/// written). Publishing the group (`EngineCore.publish`) uses the key order to insert sorted runs into the trees.
struct CommitGroupPlan {
    /// The group's operations, in commit order: a lone batch itself, several batches concatenated (their bytes
    /// copied once; their operations are never copied one by one, which retained each operation's arrays). The copy
    /// is at most the group's bytes, which ``CommitQueue/takeGroup(extraBytes:)`` bounds to its first batch plus
    /// ``Format/groupCommitExtraBytes``, and lives while the group is written.
    let operations: WriteBatch
    /// `batchOf[i]`: the position, among the group's non-empty batches, of the batch of operation `i`.
    let batchOf: [Int]
    /// For each operation, the index terms of the record it replaces or deletes: those of the last earlier
    /// operation of the group on the same key, else those of the published record.
    private(set) var replaced: [[IndexTerm]]
    /// Each keyspace the group writes, in order of first appearance.
    private(set) var keyspaces: [Keyspace] = []
    /// Whether some operation's key was already written earlier in the group (publishing then applies the
    /// operations one by one, in order, instead of as sorted runs).
    private(set) var repeatsKeys = false

    /// One keyspace's operations, sorted by key (operations on one key keep their commit order).
    struct Keyspace {
        let name: String
        /// Indices into `operations`, in key order.
        var operations: [Int]
        /// Their keys, in the same order.
        var keys: PackedKeys
    }

    /// Plans `batches` (all non-empty). `current` holds the published keyspaces whose records may carry terms;
    /// `readTerms` reads the terms of a published record.
    init(_ batches: [PendingCommit], current: [String: KeyspaceState],
         readTerms: (RecordLocation) throws -> [IndexTerm]) rethrows {
        let operations = batches.count == 1 ? batches[0].batch : WriteBatch(concatenating: batches.map(\.batch))
        var batchOf: [Int] = []
        batchOf.reserveCapacity(operations.count)
        for (b, pending) in batches.enumerated() { batchOf.append(contentsOf: repeatElement(b, count: pending.batch.count)) }
        self.operations = operations
        self.batchOf = batchOf
        replaced = Array(repeating: [], count: operations.count)

        var indexed: [Bool] = []   // by keyspace: whether the group writes terms in it
        var keyspaces: [Keyspace] = []
        var runOf: [Int] = Array(repeating: -1, count: operations.keyspaceNames.count)   // by the batch's keyspace
        operations.withPacked { ops in
            for i in 0 ..< ops.count {
                let space = ops[i].keyspace
                if runOf[space] < 0 {
                    keyspaces.append(Keyspace(name: operations.keyspaceNames[space], operations: [], keys: PackedKeys()))
                    indexed.append(false)
                    runOf[space] = keyspaces.count - 1
                }
                let last = runOf[space]
                keyspaces[last].operations.append(i)
                keyspaces[last].keys.append(ops.key(i))
                if ops[i].termCount > 0 { indexed[last] = true }
            }
        }
        for k in keyspaces.indices {
            if keyspaces[k].operations.count > 1 {   // one operation (a single-record commit) is sorted already
                let order = keyspaces[k].keys.sortedOrder()
                keyspaces[k].keys = keyspaces[k].keys.reordered(order)
                keyspaces[k].operations = order.map { keyspaces[k].operations[$0] }
            }
            let published = current[keyspaces[k].name]
            guard published?.hasIndexEntries == true || indexed[k] else {
                if !repeatsKeys { repeatsKeys = Self.hasRepeats(keyspaces[k].keys) }
                continue
            }
            let run = keyspaces[k]
            try run.keys.withView { keys in
                // Keys past the published tree's last key are new: no lookup (appends, as in a sequential load).
                // The others (a prefix of the sorted keys) are looked up together, or alone when only one (no
                // allocation: a single-record update).
                var known = 0
                var found: [RecordLocation?] = []
                if let primary = published?.primary, let lastKey = primary.last?.key {
                    known = lastKey.withUnsafeBytes { last in
                        let index = keys.firstIndex(notBelow: last, in: 0 ..< keys.count)
                        return index < keys.count && BTreeLayout.compare(keys[index], last) == 0 ? index + 1 : index
                    }
                    if known > 1 { found = primary.values(forSortedKeys: keys, in: 0 ..< known) }
                }
                for j in 0 ..< keys.count {
                    let op = run.operations[j]
                    if j > 0 && BTreeLayout.compare(keys[j - 1], keys[j]) == 0 {
                        repeatsKeys = true
                        let earlier = run.operations[j - 1]
                        replaced[op] = operations.entries[earlier].kind == .put ? operations.terms(of: earlier) : []
                    } else if j < known,
                              let location = known > 1 ? found[j] : published?.primary.value(forKey: keys[j]),
                              location.hasTerms {
                        replaced[op] = try readTerms(location)
                    }
                }
            }
        }
        self.keyspaces = keyspaces
    }

    private static func hasRepeats(_ keys: PackedKeys) -> Bool {
        keys.withView { !$0.isSorted }
    }
}
