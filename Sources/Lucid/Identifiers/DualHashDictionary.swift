/// A dictionary keyed by ``DualHashable`` keys: an entry stored under `(local, remote)` is found by its local
/// half, its remote half or both, and an entry stored under one half absorbs the other half when it is later
/// written or looked up with both.
///
/// Entries live in slots; two hash maps index the slots by each half. When a full key matches two different
/// entries (one by its remote half, another by its local half: the same thing stored twice before its halves
/// were known together), the remote match wins and the local-only entry is dropped.
///
/// - Complexity: lookups, inserts and removals are O(1) on average. Iteration is in slot order, which is not
///   insertion order once entries have been removed.
public struct DualHashDictionary<Key: DualHashable, Value>: Sequence {
    @usableFromInline struct Entry {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
    }

    @usableFromInline var slots: [Entry?] = []
    @usableFromInline var freeSlots: [Int] = []
    @usableFromInline var byLocal: [Key.LocalKey: Int] = [:]
    @usableFromInline var byRemote: [Key.RemoteKey: Int] = [:]
    /// Number of entries.
    public private(set) var count = 0

    /// An empty dictionary.
    public init() {}

    /// A dictionary of the pairs; a later pair for the same key replaces an earlier one.
    public init<S: Sequence>(_ pairs: S) where S.Element == (Key, Value) {
        for (key, value) in pairs { self[key] = value }
    }

    /// Whether the dictionary is empty.
    public var isEmpty: Bool { count == 0 }

    /// The slot holding `key`: by remote half first, then by local half.
    func slot(for key: Key) -> Int? {
        if let remote = key.remoteKey, let slot = byRemote[remote] { return slot }
        if let local = key.localKey, let slot = byLocal[local] {
            // A stored full key whose remote half differs is another thing.
            if let remote = key.remoteKey, let stored = slots[slot]?.key.remoteKey, stored != remote { return nil }
            return slot
        }
        return nil
    }

    /// The value stored for `key` (found by either half), or nil. Setting nil removes the entry.
    public subscript(key: Key) -> Value? {
        get { slot(for: key).flatMap { slots[$0]?.value } }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// Every entry equal to `key` under the identifier rule: the one holding its remote half, and the one holding
    /// its local half unless both carry different remote halves. (Two entries when the same thing was
    /// stored once by each half and never with both.)
    public func values(matching key: Key) -> [Value] {
        let (first, second) = valuePair(matching: key)
        return [first, second].compactMap { $0 }
    }

    /// ``values(matching:)`` without an array: the first value and the second, if any. O(1) on average.
    func valuePair(matching key: Key) -> (Value?, Value?) {
        let (first, second) = matchingSlots(key)
        return (first.flatMap { slots[$0]?.value }, second.flatMap { slots[$0]?.value })
    }

    /// The slots of the entries equal to `key` (``values(matching:)``): the one holding its remote half first.
    private func matchingSlots(_ key: Key) -> (Int?, Int?) {
        var first: Int?
        if let remote = key.remoteKey, let slot = byRemote[remote] { first = slot }
        if let local = key.localKey, let slot = byLocal[local], slot != first {
            let stored = slots[slot]?.key.remoteKey
            if key.remoteKey == nil || stored == nil || stored == key.remoteKey {
                return first == nil ? (slot, nil) : (first, slot)
            }
        }
        return (first, nil)
    }

    /// The stored key matching `key`, with every half known for it.
    public func storedKey(for key: Key) -> Key? { slot(for: key).flatMap { slots[$0]?.key } }

    /// Stores `value` for `key`, returning the value it replaced. The stored key absorbs the halves of `key`.
    @discardableResult
    public mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
        if let slot = slot(for: key), let old = slots[slot] {
            let merged = old.key.absorbing(key)
            // Drop a separate entry that the newly known local half pointed at.
            if let local = merged.localKey, let other = byLocal[local], other != slot,
               slots[other]?.key.remoteKey == nil {
                removeSlot(other)
            }
            slots[slot] = Entry(key: merged, value: value)
            index(merged, at: slot)
            return old.value
        }
        insertNew(value, forKey: key)
        return nil
    }

    /// ``updateValue(_:forKey:)`` of a `key` that no entry holds (``subscript(_:)`` answers nil for it), without
    /// looking it up first. O(1) on average.
    mutating func insertNew(_ value: Value, forKey key: Key) {
        assert(slot(for: key) == nil, "insertNew of a key already held")
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = Entry(key: key, value: value)
        } else {
            slot = slots.count
            slots.append(Entry(key: key, value: value))
        }
        index(key, at: slot)
        count += 1
    }

    /// Removes the entry for `key` (found by either half) and returns its value.
    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = slot(for: key) else { return nil }
        return removeSlot(slot)
    }

    /// Removes every entry equal to `key` under the identifier rule (see ``values(matching:)``: the one holding
    /// its remote half and the one holding only its local half) and returns their values.
    @discardableResult
    public mutating func removeValues(matching key: Key) -> [Value] {
        let (first, second) = removeValuePair(matching: key)
        return [first, second].compactMap { $0 }
    }

    /// ``removeValues(matching:)`` without an array: the first value removed and the second, if any. O(1) on
    /// average.
    mutating func removeValuePair(matching key: Key) -> (Value?, Value?) {
        let (first, second) = matchingSlots(key)
        return (first.flatMap { removeSlot($0) }, second.flatMap { removeSlot($0) })
    }

    /// Removes every entry.
    public mutating func removeAll() { self = DualHashDictionary() }

    @discardableResult
    private mutating func removeSlot(_ slot: Int) -> Value? {
        guard let entry = slots[slot] else { return nil }
        // One lookup per half: the index of its entry, removed there.
        if let local = entry.key.localKey, let i = byLocal.index(forKey: local), byLocal[i].value == slot {
            byLocal.remove(at: i)
        }
        if let remote = entry.key.remoteKey, let i = byRemote.index(forKey: remote), byRemote[i].value == slot {
            byRemote.remove(at: i)
        }
        slots[slot] = nil
        freeSlots.append(slot)
        count -= 1
        return entry.value
    }

    private mutating func index(_ key: Key, at slot: Int) {
        if let local = key.localKey { byLocal[local] = slot }
        if let remote = key.remoteKey { byRemote[remote] = slot }
    }

    /// The stored keys.
    public var keys: [Key] { slots.compactMap { $0?.key } }
    /// The stored values.
    public var values: [Value] { slots.compactMap { $0?.value } }

    /// Iterates over (key, value) pairs.
    public func makeIterator() -> AnyIterator<(key: Key, value: Value)> {
        var iterator = slots.makeIterator()
        return AnyIterator {
            while let next = iterator.next() {
                if let entry = next { return (entry.key, entry.value) }
            }
            return nil
        }
    }
}

extension DualHashDictionary: Sendable where Value: Sendable {}
extension DualHashDictionary.Entry: Sendable where Value: Sendable {}

/// A set of ``DualHashable`` keys: membership by the local half, the remote half or both.
public struct DualHashSet<Element: DualHashable>: Sequence, Sendable {
    private var storage = DualHashDictionary<Element, Void>()

    /// An empty set.
    public init() {}
    /// A set of the elements.
    public init<S: Sequence>(_ elements: S) where S.Element == Element {
        for element in elements { insert(element) }
    }

    /// Number of elements.
    public var count: Int { storage.count }
    /// Whether the set is empty.
    public var isEmpty: Bool { storage.isEmpty }
    /// Whether `element` (by either half) is in the set.
    public func contains(_ element: Element) -> Bool { storage.slot(for: element) != nil }
    /// Inserts `element`; a stored element absorbs its missing halves. Returns whether it was new.
    @discardableResult
    public mutating func insert(_ element: Element) -> Bool { storage.updateValue((), forKey: element) == nil }
    /// Removes `element` (by either half).
    public mutating func remove(_ element: Element) { storage.removeValue(forKey: element) }
    /// Iterates over the stored elements.
    public func makeIterator() -> IndexingIterator<[Element]> { storage.keys.makeIterator() }
}
