// MARK: - Editing packed keys

extension BTree.Node {
    /// Inserts `key` so that it becomes key `i`. O(node key bytes + keyCount); O(node size)
    /// when `key` lacks the node's shared prefix and the heads must be rebuilt.
    func insertKey(_ key: UnsafeRawBufferPointer, at i: Int) {
        let hasPrefix = prefixOrder(of: key) == 0
        let start = keyStart(i)
        let length = key.count
        Self.makeRoom(in: &keyBytes, for: keyBytes.count &+ length)
        Self.makeRoom(in: &keyEnds, for: keyEnds.count &+ 1)
        keyBytes.insert(contentsOf: key, at: start)
        keyEnds.insert(UInt32(truncatingIfNeeded: start &+ length), at: i)
        if length != 0 {
            let delta = UInt32(truncatingIfNeeded: length)
            keyEnds.withUnsafeMutableBufferPointer { ends in
                for j in (i &+ 1) ..< ends.count { ends[j] &+= delta }
            }
        }
        if hasPrefix {
            Self.makeRoom(in: &keyHeads, for: keyHeads.count &+ 1)
            keyHeads.insert(BTreeLayout.head(of: key, from: prefixLength), at: i)
        } else {
            rebuildHeads()
        }
    }

    /// Inserts keys `block` of `keys`, which must all sort between keys `i - 1` and `i`, so that they become keys
    /// `i ..< i + block.count`. O(node key bytes + keyCount + block bytes): the keys after them move once, not once
    /// per key; O(node size) when a key of the block lacks the node's shared prefix and the heads are rebuilt. A
    /// block of one key (scattered keys: the usual block) takes `insertKey`.
    func insertKeys(_ keys: PackedKeys.View, _ block: Range<Int>, at i: Int) {
        guard block.count > 1 else {
            if let only = block.first { insertKey(keys[only], at: i) }
            return
        }
        // The keys are sorted: when the first and the last have the node's prefix, every key between has it.
        let hasPrefix = prefixOrder(of: keys[block.lowerBound]) == 0 && prefixOrder(of: keys[block.upperBound &- 1]) == 0
        let start = keyStart(i)
        let from = block.lowerBound == 0 ? 0 : keys.ends[block.lowerBound &- 1]
        let length = keys.ends[block.upperBound &- 1] &- from
        Self.makeRoom(in: &keyBytes, for: keyBytes.count &+ length)
        Self.makeRoom(in: &keyEnds, for: keyEnds.count &+ block.count)
        keyBytes.insert(contentsOf: UnsafeRawBufferPointer(rebasing: keys.bytes[from ..< from &+ length]), at: start)
        let shift = start &- from
        keyEnds.insert(contentsOf: block.lazy.map { UInt32(truncatingIfNeeded: keys.ends[$0] &+ shift) }, at: i)
        if length != 0 {
            let delta = UInt32(truncatingIfNeeded: length)
            keyEnds.withUnsafeMutableBufferPointer { ends in
                for j in (i &+ block.count) ..< ends.count { ends[j] &+= delta }
            }
        }
        if hasPrefix {
            Self.makeRoom(in: &keyHeads, for: keyHeads.count &+ block.count)
            let prefix = prefixLength
            keyHeads.insert(contentsOf: block.lazy.map { BTreeLayout.head(of: keys[$0], from: prefix) }, at: i)
        } else {
            rebuildHeads()
        }
    }

    /// Inserts values `block` of `source` as leaf values `i ..< i + block.count`, growing the storage as `makeRoom`
    /// does; a block of one value takes `insertValue` (no slice, no generic insertion). O(keyCount + block.count).
    @inline(__always)
    func insertValues(_ source: [Value], _ block: Range<Int>, at i: Int) {
        guard block.count > 1 else {
            if let only = block.first { insertValue(source[only], at: i) }
            return
        }
        Self.makeRoom(in: &values, for: values.count &+ block.count)
        values.insert(contentsOf: source[block], at: i)
    }

    /// Inserts `value` as leaf value `i`, growing the storage as `makeRoom` does. O(keyCount).
    @inline(__always)
    func insertValue(_ value: Value, at i: Int) {
        Self.makeRoom(in: &values, for: values.count &+ 1)
        values.insert(value, at: i)
    }

    /// Appends `key` after the last key. O(key length) amortized (see `insertKey`).
    func appendKey(_ key: UnsafeRawBufferPointer) {
        insertKey(key, at: keyCount)
    }

    /// Removes key `i`. O(node key bytes + keyCount).
    func removeKey(at i: Int) {
        let start = keyStart(i)
        let end = Int(truncatingIfNeeded: keyEnds[i])
        keyBytes.removeSubrange(start ..< end)
        keyEnds.remove(at: i)
        keyHeads.remove(at: i)
        if keyEnds.isEmpty {
            prefixLength = 0
            prefixHead = 0
        }
        guard end != start else { return }
        let delta = UInt32(truncatingIfNeeded: end &- start)
        keyEnds.withUnsafeMutableBufferPointer { ends in
            for j in i ..< ends.count { ends[j] &-= delta }
        }
    }

    /// Replaces key `i` by `key`. O(node key bytes + keyCount).
    func replaceKey(at i: Int, with key: [UInt8]) {
        removeKey(at: i)
        key.withUnsafeBytes { insertKey($0, at: i) }
    }

    /// Appends keys `range` of `other` after the last key, then rebuilds the heads.
    /// O(node size + copied bytes).
    func appendKeys(of other: BTree.Node, in range: Range<Int>) {
        guard !range.isEmpty else { return }
        let sourceStart = other.keyStart(range.lowerBound)
        let sourceEnd = Int(truncatingIfNeeded: other.keyEnds[range.upperBound &- 1])
        let shift = keyBytes.count &- sourceStart
        keyBytes.append(contentsOf: other.keyBytes[sourceStart ..< sourceEnd])
        keyEnds.reserveCapacity(keyEnds.count &+ range.count)
        for j in range {
            keyEnds.append(UInt32(truncatingIfNeeded: Int(truncatingIfNeeded: other.keyEnds[j]) &+ shift))
        }
        rebuildHeads()
    }

    /// Removes every key from index `i` on, then rebuilds the heads. O(node size).
    func removeKeys(from i: Int) {
        keyBytes.removeSubrange(keyStart(i)...)
        keyEnds.removeSubrange(i...)
        rebuildHeads()
    }

    /// Recomputes `prefixLength` as the longest prefix shared by all keys (that of the first and
    /// last, as keys are sorted), `prefixHead`, and every head. O(keyCount + prefix length).
    func rebuildHeads() {
        let count = keyCount
        guard count > 0 else {
            prefixLength = 0
            prefixHead = 0
            keyHeads.removeAll()
            return
        }
        let length = withKey(at: 0) { first in
            withKey(at: count - 1) { last in BTreeLayout.commonPrefixLength(first, last) }
        }
        prefixLength = length
        prefixHead = withKey(at: 0) { first in
            BTreeLayout.head(of: UnsafeRawBufferPointer(rebasing: first[0 ..< Swift.min(length, 8)]))
        }
        keyHeads.removeAll(keepingCapacity: true)
        keyHeads.reserveCapacity(count)
        keyEnds.withUnsafeBufferPointer { ends in
            keyBytes.withUnsafeBytes { bytes in
                for i in 0 ..< count {
                    keyHeads.append(BTreeLayout.head(of: Self.key(i, ends, bytes), from: length))
                }
            }
        }
    }
}
