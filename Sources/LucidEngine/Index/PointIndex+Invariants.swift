extension PointIndex {
    /// The ways the tables disagree with `state`, the published state (empty when sound): every keyspace of the
    /// state that has keys of at most 16 bytes must have a sound table (``PointTable/checkInvariants()``) holding
    /// exactly those keys of its primary tree at the tree's locations; any other table must be empty; a disabled
    /// index holds nothing. O(keys); for tests and debug checks.
    func checkInvariants(against state: EngineState) -> [String] {
        guard isEnabled else { return tables.isEmpty ? [] : ["tables kept while the index is off"] }
        var problems: [String] = []
        for (name, keyspace) in state.keyspaces {
            guard let table = tables[name] else {
                var short = false
                keyspace.primary.forEach { key, _ in
                    short = PointTable.holds(keyLength: key.count)
                    return !short
                }
                if short { problems.append("no table for keyspace \(name), which has keys of at most 16 bytes") }
                continue
            }
            problems += table.checkInvariants().map { "keyspace \(name): \($0)" }
            var short = 0
            keyspace.primary.forEach { key, location in
                guard let k = PointTable.Key(key) else { return true }
                short += 1
                if table.location(forKey: k) != location && problems.count < 20 {
                    problems.append("keyspace \(name): key \(Array(key)) is not at its tree's location")
                }
                return true
            }
            if short != table.count { problems.append("keyspace \(name): \(table.count) keys, its tree \(short)") }
        }
        for (name, table) in tables where state.keyspaces[name] == nil && table.count > 0 {
            problems.append("\(table.count) keys for keyspace \(name), which has none")
        }
        return problems
    }
}
