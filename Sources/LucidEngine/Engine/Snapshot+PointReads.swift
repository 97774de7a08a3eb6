/// A snapshot's point reads: the engine's point index (``PointIndex``) answers them while it still describes the
/// snapshot's state, the snapshot's primary trees otherwise.
///
/// The index follows the published state: each commit group, compaction swap, the build after open and close
/// change it, each under the state's write lock, and each changes its ``PointIndex/epoch``. A snapshot reads the
/// epoch with its state, under one hold of the read lock (``Engine/snapshot()``). While the epoch is unchanged,
/// the index's tables hold exactly the snapshot's keys of at most 16 bytes with their locations, so an answer
/// found under the read lock with the epoch still equal is the tree's. A snapshot of a store that is not being
/// written (or one taken just now) finds its keys with one hashed probe each instead of a descent through a tree
/// of millions of keys (the records an index query names, a data layer's fetches); an older one finds them in
/// its trees, as it always did. Debug builds compare every answer of the index with the tree's.
extension Snapshot {
    /// The most keys one hold of the state's read lock probes for: commits wait for the hold to end.
    static var pointReadChunk: Int { 256 }

    /// The location of `key` in this snapshot's `keyspace`, or nil. O(1) expected while the point index still
    /// describes the snapshot (one hashed probe under a brief hold of the state's read lock), else O(log n).
    func location(forKey key: [UInt8], in keyspace: String) -> RecordLocation? {
        let answer = PointTable.holds(keyLength: key.count) ? core.withPointIndex(asOf: pointEpoch) { points in
            key.withUnsafeBytes { points.location(forKey: $0, in: keyspace) }
        } : nil
        return (answer ?? .unknown)
            .location(orTree: { state.location(forKey: key, in: keyspace) }, key: key, keyspace: keyspace)
    }

    /// The locations of `keys` in this snapshot's `keyspace`, in their order (nil for a key without a record), each
    /// passed through `transform` (one array, the result): ``location(forKey:in:)`` for each. The point index
    /// answers, ``pointReadChunk`` keys per hold of the read lock with their probes overlapped, while it still
    /// describes the snapshot; the keys it cannot answer (longer than 16 bytes, or met after it changed) descend
    /// the primary tree together (`BTree.values(forKeys:)`). O(m) expected for m keys the index answers, O(m log n)
    /// otherwise.
    func locations<T>(forKeys keys: [[UInt8]], in keyspace: String, _ transform: (RecordLocation?) -> T) -> [T] {
        locations(forKeys: keys, in: keyspace, chunk: Self.pointReadChunk, betweenChunks: nil, transform)
    }

    /// ``locations(forKeys:in:_:)`` asking the point index for `chunk` keys per hold of the read lock, calling
    /// `betweenChunks` (tests: a commit there) after each chunk but the last.
    func locations<T>(forKeys keys: [[UInt8]], in keyspace: String, chunk: Int, betweenChunks: (() -> Void)?,
                      _ transform: (RecordLocation?) -> T) -> [T] {
        guard let tree = state.keyspace(keyspace)?.primary else { return keys.map { _ in transform(nil) } }
        guard core.points.isEnabled, keys.contains(where: { PointTable.holds(keyLength: $0.count) }) else {
            return tree.values(forKeys: keys, transform)
        }
        return withUnsafeTemporaryAllocation(of: PointIndex.Answer.self, capacity: keys.count) { answers in
            answers.initialize(repeating: .unknown)
            for start in stride(from: 0, to: keys.count, by: chunk) {
                let end = min(keys.count, start + chunk)
                let answered = core.withPointIndex(asOf: pointEpoch) { points in
                    points.locations(forKeys: keys[start ..< end], in: keyspace,
                                     into: UnsafeMutableBufferPointer(rebasing: answers[start ..< end]))
                }
                // The index changed (the rest are the tree's), or the keyspace has no table (none are the index's).
                guard answered == true else { break }
                if end < keys.count { betweenChunks?() }
            }
            var unknown: [[UInt8]] = []
            for (i, answer) in answers.enumerated() { if case .unknown = answer { unknown.append(keys[i]) } }
            if unknown.count == keys.count { return tree.values(forKeys: keys, transform) }
            let fromTree = unknown.isEmpty ? [] : tree.values(forKeys: unknown)
            var next = 0
            return answers.indices.map { i in
                if case .unknown = answers[i] {
                    defer { next += 1 }
                    return transform(fromTree[next])
                }
                return transform(answers[i].location(orTree: { state.location(forKey: keys[i], in: keyspace) },
                                                     key: keys[i], keyspace: keyspace))
            }
        }
    }
}
