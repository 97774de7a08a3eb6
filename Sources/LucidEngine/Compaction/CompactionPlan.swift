/// What one compaction copies: for each keyspace, in key order, the live records whose current version lies in
/// the input segments, and (when the inputs are not the start of the log) the deletions that must be kept.
/// Keys are stored back to back in one buffer per keyspace, so a plan costs about key bytes + 56 bytes per record.
struct CompactionPlan {
    struct Keyspace {
        var name: String
        /// Keys of the moved records, concatenated; `keyEnds[i]` is the end of key `i`.
        var keyBytes: [UInt8] = []
        var keyEnds: [Int] = []
        var oldLocations: [RecordLocation] = []
        /// Filled as the records are written.
        var newLocations: [RecordLocation] = []
        /// Deleted keys with the sequence of their newest deletion in the inputs, sorted by key.
        var tombstones: [(key: [UInt8], sequence: UInt64)] = []

        var count: Int { keyEnds.count }

        func withKey<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            let start = i == 0 ? 0 : keyEnds[i - 1]
            return try keyBytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<keyEnds[i]])) }
        }

        func key(_ i: Int) -> [UInt8] { withKey(i) { Array($0) } }
    }

    var keyspaces: [Keyspace] = []
    /// Uncompressed bytes of the records to copy (key + value + terms estimate), for progress.
    var totalBytes: UInt64 = 0
    var recordCount: Int { keyspaces.reduce(0) { $0 + $1.count } }
    var tombstoneCount: Int { keyspaces.reduce(0) { $0 + $1.tombstones.count } }

    /// Collects the live records of `state` located in `inputs`, keyspace by keyspace in name order.
    /// - Complexity: O(live keys) (walks every primary tree once).
    init(state: EngineState, inputs: Set<UInt32>) {
        for name in state.keyspaces.keys.sorted() {
            var plan = Keyspace(name: name)
            state.keyspaces[name]!.primary.forEach { key, location in
                if inputs.contains(location.segment) {
                    plan.keyBytes.append(contentsOf: key)
                    plan.keyEnds.append(plan.keyBytes.count)
                    plan.oldLocations.append(location)
                    totalBytes += UInt64(key.count) + UInt64(location.valueLength) + 8
                }
                return true
            }
            if plan.count > 0 { keyspaces.append(plan) }
        }
    }

    /// Adds the deletions found in the inputs whose keys have no live version: a later segment may not hide an
    /// older value that a segment before the inputs still holds, so these deletions must survive the compaction.
    mutating func addTombstones(_ deleted: [String: [[UInt8]: UInt64]]) {
        for (name, keys) in deleted where !keys.isEmpty {
            let sorted = keys.sorted { Self.compare($0.key, $1.key) < 0 }
                .map { (key: $0.key, sequence: $0.value) }
            if let i = keyspaces.firstIndex(where: { $0.name == name }) {
                keyspaces[i].tombstones = sorted
            } else {
                var plan = Keyspace(name: name)
                plan.tombstones = sorted
                keyspaces.append(plan)
            }
            totalBytes += sorted.reduce(0) { $0 + UInt64($1.key.count) + 8 }
        }
        keyspaces.sort { $0.name < $1.name }
    }

    /// The tree's byte order for two array keys.
    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in BTreeLayout.compare(x, y) } }
    }
}
