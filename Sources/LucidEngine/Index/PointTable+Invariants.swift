extension PointTable {
    /// The ways the table is unsound (empty when sound): `count` must be the slots in use, each key must be found
    /// from its home without crossing an empty slot, and no key may be held twice. O(capacity); for tests and debug
    /// checks.
    func checkInvariants() -> [String] {
        var problems: [String] = []
        var used = 0
        for i in 0..<capacity where !slots[i].isEmpty {
            used += 1
            let key = Key(slot: slots[i])
            guard let found = find(key, from: home(key)) else {
                if problems.count < 20 { problems.append("slot \(i): its key is not found from its home") }
                continue
            }
            if found != i && problems.count < 20 { problems.append("slot \(i): its key is also in slot \(found)") }
        }
        if used != count { problems.append("count \(count), slots in use \(used)") }
        if Double(used) > Double(capacity) * Self.maxLoad + 1 { problems.append("\(used) keys in \(capacity) slots") }
        return problems
    }
}
