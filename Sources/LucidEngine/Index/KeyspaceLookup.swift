/// Finding a keyspace (or an index of one) by name on the read paths without hashing the name.
///
/// A dictionary keyed by `String` hashes the name on every lookup (SipHash over its bytes: about 320 of the 3,600
/// instructions of a cached engine get, `micro-instructions` `get-random-warm`). A store usually holds a few
/// keyspaces, a keyspace a few indexes: comparing the name with each key (a small string compares in a few
/// instructions) costs less, up to ``scanLimit`` keys; beyond that the dictionary's own lookup is used.
extension Dictionary where Key == String {
    /// The most keys a lookup compares one by one.
    static var scanLimit: Int { 8 }

    /// The position of `name`, or nil: a scan of the keys in a dictionary of at most ``scanLimit``, else the
    /// dictionary's hashed lookup. O(1) either way (at most ``scanLimit`` comparisons).
    @inline(__always)
    func position(ofName name: String) -> Index? {
        guard count <= Self.scanLimit else { return index(forKey: name) }
        var i = startIndex
        while i != endIndex {
            if keys[i] == name { return i }
            formIndex(after: &i)
        }
        return nil
    }
}

extension EngineState {
    /// The location of `key` in `keyspace`'s primary tree, or nil; the tree is read in place, not copied.
    /// O(log n).
    @inline(__always)
    func location(forKey key: [UInt8], in keyspace: String) -> RecordLocation? {
        guard let i = keyspaces.position(ofName: keyspace) else { return nil }
        return keyspaces.values[i].primary.value(forKey: key)
    }

    /// The keyspace named `name`, or nil (an O(1) copy: its trees are shared until written).
    @inline(__always)
    func keyspace(_ name: String) -> KeyspaceState? {
        keyspaces.position(ofName: name).map { keyspaces.values[$0] }
    }

    /// The tree of index `index` of `keyspace`, or nil (an O(1) copy).
    @inline(__always)
    func indexTree(_ index: String, in keyspace: String) -> BTree<UInt16>? {
        guard let k = keyspaces.position(ofName: keyspace),
              let i = keyspaces.values[k].indexes.position(ofName: index) else { return nil }
        return keyspaces.values[k].indexes.values[i]
    }
}
