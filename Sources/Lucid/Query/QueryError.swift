/// Why a query cannot run. Thrown by ``Query/validate()`` and by every store before it evaluates a query.
public enum QueryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `with(offset:)` below zero.
    case negativeOffset(Int)
    /// `with(limit:)` below zero.
    case negativeLimit(Int)
    /// A `~=` pattern that does not compile.
    case invalidRegex(pattern: String, reason: String)
    /// An operator or value that cannot apply to its property (e.g. `~=` on an identifier, an index value
    /// compared with `.identifier`, a regex that is not a string, a comparison with an array value).
    case invalidComparison(String)
    /// A query only a remote store can answer (e.g. `.natural` order on local stores).
    case unsupported(String)

    public var description: String {
        switch self {
        case .negativeOffset(let o): "invalid query: offset \(o) is below zero"
        case .negativeLimit(let l): "invalid query: limit \(l) is below zero"
        case .invalidRegex(let p, let r): "invalid query: regular expression \"\(p)\" does not compile: \(r)"
        case .invalidComparison(let d): "invalid query: \(d)"
        case .unsupported(let d): "unsupported query: \(d)"
        }
    }
}
