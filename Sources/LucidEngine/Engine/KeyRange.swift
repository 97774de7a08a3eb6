/// One end of a key range.
public enum KeyBound: Sendable, Hashable {
    /// The range includes this key.
    case included([UInt8])
    /// The range stops just before (or starts just after) this key.
    case excluded([UInt8])
}

/// A range of keys for scans, in unsigned byte order. `lower` is the smaller end and `upper` the larger, whatever
/// the scan direction; `nil` means unbounded.
public struct KeyRange: Sendable, Hashable {
    /// The smaller end, or nil for no lower bound.
    public var lower: KeyBound?
    /// The larger end, or nil for no upper bound.
    public var upper: KeyBound?

    /// A range between two optional bounds.
    public init(lower: KeyBound? = nil, upper: KeyBound? = nil) {
        self.lower = lower
        self.upper = upper
    }

    /// Every key.
    public static let all = KeyRange()

    /// Keys in `[from, to)`.
    public static func from(_ from: [UInt8], to: [UInt8]) -> KeyRange {
        KeyRange(lower: .included(from), upper: .excluded(to))
    }

    /// Keys that start with `prefix`.
    public static func prefix(_ prefix: [UInt8]) -> KeyRange {
        // The smallest key greater than every key with the prefix: increment the last byte that is not 0xFF.
        var upper = prefix
        while let last = upper.last, last == 0xFF { upper.removeLast() }
        if upper.isEmpty { return KeyRange(lower: .included(prefix)) }
        upper[upper.count - 1] += 1
        return KeyRange(lower: .included(prefix), upper: .excluded(upper))
    }

    var treeLower: BTreeBound? {
        switch lower {
        case .none: nil
        case .included(let k): .included(k)
        case .excluded(let k): .excluded(k)
        }
    }

    var treeUpper: BTreeBound? {
        switch upper {
        case .none: nil
        case .included(let k): .included(k)
        case .excluded(let k): .excluded(k)
        }
    }
}

/// A key and its value, as returned by scans.
public struct KeyValue: Sendable, Hashable {
    /// The key.
    public var key: [UInt8]
    /// The value stored under it.
    public var value: [UInt8]

    /// A key and its value.
    public init(key: [UInt8], value: [UInt8]) {
        self.key = key
        self.value = value
    }
}
