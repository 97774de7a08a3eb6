import Foundation
import LucidEngine

/// A typed value of an indexed property, as used in queries and kept in the disk store's indexes.
///
/// Values of different cases never compare equal or ordered against each other in filters (`.int(4)` is not
/// `== .double(4)` and not `< .string("a")`), exactly as in the original Lucid. For sorting, every value has a
/// place in one total order: `none` < `bool` < `int` < `double` < `date` < `string` (the order of the disk
/// store's ``IndexValue`` encoding, so memory and disk sort alike).
///
/// An `.array` value (an array property) matches a filter when any element does, and sorts by its smallest
/// element ascending and its largest descending; an empty array behaves like `.none`.
public enum EntityIndexValue: Sendable, Hashable, CustomStringConvertible {
    case none
    case bool(Bool)
    case int(Int)
    case double(Double)
    case date(Date)
    case string(String)
    case array([EntityIndexValue])

    /// `.none` for nil, otherwise the wrapped value's index value.
    public static func optional<T>(_ value: T?, _ transform: (T) -> EntityIndexValue) -> EntityIndexValue {
        value.map(transform) ?? .none
    }

    /// The scalar values this value stands for: the elements of an array, `[]` for `.none` or an empty array.
    public var scalars: [EntityIndexValue] {
        switch self {
        case .none: return []
        case .array(let values): return values.flatMap(\.scalars)
        default: return [self]
        }
    }

    /// The engine term of a scalar value (`.none` → `.null`).
    public var indexValue: IndexValue {
        switch self {
        case .none, .array: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(Int64(i))
        case .double(let d): .double(d)
        case .date(let d): .date(microsecondsSince1970: Int64((d.timeIntervalSince1970 * 1_000_000).rounded()))
        case .string(let s): .string(s)
        }
    }

    /// The engine terms stored for this value: one per scalar, `[.null]` when there is none (so that records
    /// without a value still appear, first, when ordering by the index).
    public var indexTerms: [IndexValue] {
        let scalars = self.scalars
        return scalars.isEmpty ? [.null] : scalars.map(\.indexValue)
    }

    /// The sort key for ascending (`descending == false`) or descending order.
    func sortKey(descending: Bool) -> IndexValue {
        let terms = indexTerms
        return (descending ? terms.max() : terms.min()) ?? .null
    }

    /// Whether two scalar values are of the same case (only those compare in filters).
    func isSameKind(as other: EntityIndexValue) -> Bool {
        switch (self, other) {
        case (.none, .none), (.bool, .bool), (.int, .int), (.double, .double), (.date, .date), (.string, .string):
            return true
        default:
            return false
        }
    }

    /// The string form a regex is matched against: strings as they are, numbers and bools in their
    /// `description`; nil for `.none`.
    var matchableString: String? {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        case .date(let d): d.ISO8601Format()
        case .none, .array: nil
        }
    }

    public var description: String {
        switch self {
        case .none: "none"
        case .bool(let b): "\(b)"
        case .int(let i): "\(i)"
        case .double(let d): "\(d)"
        case .date(let d): d.ISO8601Format()
        case .string(let s): "\"\(s)\""
        case .array(let a): "[\(a.map(\.description).joined(separator: ", "))]"
        }
    }
}

extension EntityIndexValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .none }
}
