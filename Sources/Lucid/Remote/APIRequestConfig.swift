import Foundation

/// An HTTP method.
public enum HTTPMethod: String, Sendable, Hashable, Codable {
    case get = "GET", head = "HEAD", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"

    /// Whether requests with this method change server state (they are barriers in the request queue).
    public var isWrite: Bool { self != .get && self != .head }
}

/// Everything needed to build one HTTP request to the backend: method, path, query, headers, body and policy.
///
/// It is a value (`Codable`, `Hashable`), so the offline request queue can persist it. A path component that names
/// a locally created entity the server does not know yet is kept as a placeholder (`:identifier_<type>:<local>`)
/// until the server's id is known (``rewritingIdentifier(typeID:local:remote:)``); ``hasUnsyncedIdentifier`` says
/// whether one is left.
public struct APIRequestConfig: Sendable, Hashable, Codable {
    public var method: HTTPMethod
    public var path: Path
    /// Overrides the client's host (scheme, host and port, e.g. `http://127.0.0.1:8080`).
    public var host: String?
    /// Query items in order; arrays are written `key[]=a&key[]=b` (brackets percent-encoded).
    public var query: [QueryItem]
    public var headers: [String: String]
    public var body: Body?
    /// Seconds before the request times out (nil: the client's default).
    public var timeoutInterval: Double?
    /// Identical in-flight requests with this flag share one response. Default: on for GET and HEAD.
    public var deduplicate: Bool
    /// An app-defined label (not part of deduplication).
    public var tag: String?

    /// A request; by default deduplicated when it only reads.
    public init(method: HTTPMethod, path: Path, host: String? = nil, query: [QueryItem] = [],
                headers: [String: String] = [:], body: Body? = nil, timeoutInterval: Double? = nil,
                deduplicate: Bool? = nil, tag: String? = nil) {
        self.method = method
        self.path = path
        self.host = host
        self.query = query
        self.headers = headers
        self.body = body
        self.timeoutInterval = timeoutInterval
        self.deduplicate = deduplicate ?? !method.isWrite
        self.tag = tag
    }

    /// Whether the path or query still names an entity by a local id only.
    public var hasUnsyncedIdentifier: Bool {
        path.components.contains { if case .identifier(_, _, nil) = $0 { true } else { false } }
    }

    /// This request with every placeholder of the local id `local` of type `typeID` replaced by `remote`.
    public func rewritingIdentifier(typeID: String, local: String, remote: String) -> APIRequestConfig {
        var copy = self
        copy.path.components = path.components.map { component in
            if case .identifier(typeID, local, nil) = component { return .identifier(typeID: typeID, local: local, remote: remote) }
            return component
        }
        return copy
    }

    /// The percent-encoded path and query, e.g. `books/42?page=2&tags[]=a%20b`.
    public var relativeURL: String {
        let query = QueryItem.encode(self.query)
        return path.encoded + (query.isEmpty ? "" : "?" + query)
    }

    /// The absolute URL under `host` (or this request's own host).
    /// - Throws: ``APIError/invalidRequest(_:)`` when a local-id placeholder is left or the URL is malformed.
    public func url(defaultHost: String) throws(APIError) -> URL {
        if hasUnsyncedIdentifier { throw .invalidRequest("\(path.encoded) names an entity the server does not know yet") }
        var base = host ?? defaultHost
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + "/" + relativeURL) else { throw .invalidRequest("malformed URL \(base)/\(relativeURL)") }
        return url
    }
}

extension APIRequestConfig {
    /// A URL path built with `/`: `.path("books") / identifier / "reviews"`.
    public struct Path: Sendable, Hashable, Codable, CustomStringConvertible {
        /// One component of a path.
        public enum Component: Sendable, Hashable, Codable {
            /// Literal text (percent-encoded when written).
            case text(String)
            /// An entity identifier: written as its remote value, or as a placeholder while only the local value
            /// is known.
            case identifier(typeID: String, local: String?, remote: String?)
        }

        public var components: [Component]

        /// A path of one literal component.
        public static func path(_ text: String) -> Path { Path(components: [.text(text)]) }

        /// Appends a literal component.
        public static func / (lhs: Path, rhs: String) -> Path { Path(components: lhs.components + [.text(rhs)]) }

        /// Appends an entity identifier.
        public static func / <I: EntityIdentifierProtocol>(lhs: Path, rhs: I) -> Path {
            Path(components: lhs.components + [.identifier(typeID: I.identifierTypeID, local: rhs.localValue,
                                                           remote: rhs.remoteValueDescription)])
        }

        /// The path as written in a URL, components percent-encoded and joined by `/`.
        public var encoded: String {
            components.map { component in
                switch component {
                case .text(let t): PercentEncoding.encode(t)
                case .identifier(_, _, let remote?): PercentEncoding.encode(remote)
                case .identifier(let type, let local, nil): ":identifier_\(type):\(local ?? "")"
                }
            }.joined(separator: "/")
        }

        public var description: String { encoded }
    }

    /// One query item.
    public struct QueryItem: Sendable, Hashable, Codable {
        public var name: String
        public var value: QueryValue

        public init(_ name: String, _ value: QueryValue) {
            self.name = name
            self.value = value
        }

        /// `name=value&...`, percent-encoded; a nil value is left out, an array gives `name%5B%5D=v` (`name[]=v`) per element.
        static func encode(_ items: [QueryItem]) -> String {
            items.flatMap { item -> [String] in
                switch item.value {
                case .value(let v?): ["\(PercentEncoding.encode(item.name))=\(PercentEncoding.encode(v))"]
                case .value(nil): []
                case .array(let values): values.map { "\(PercentEncoding.encode(item.name))%5B%5D=\(PercentEncoding.encode($0))" }
                }
            }.joined(separator: "&")
        }
    }

    /// A query value: one (possibly absent) value or an array.
    public enum QueryValue: Sendable, Hashable, Codable {
        case value(String?)
        case array([String])
    }

    /// A request body.
    public enum Body: Sendable, Hashable, Codable {
        /// JSON bytes, sent with `Content-Type: application/json`.
        case json(Data)
        /// `application/x-www-form-urlencoded` pairs.
        case formURLEncoded([QueryItem])
        /// Bytes with their content type.
        case raw(Data, contentType: String)

        /// The body's bytes and content type.
        public var encoded: (data: Data, contentType: String) {
            switch self {
            case .json(let d): (d, "application/json")
            case .formURLEncoded(let items): (Data(QueryItem.encode(items).utf8), "application/x-www-form-urlencoded")
            case .raw(let d, let type): (d, type)
            }
        }

        /// A JSON body of an `Encodable` value (snake_case keys, ISO 8601 dates).
        public static func json<T: Encodable>(encoding value: T) throws -> Body {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = .sortedKeys
            return .json(try encoder.encode(value))
        }
    }
}

/// RFC 3986 percent-encoding: everything but unreserved characters (`A-Z a-z 0-9 - . _ ~`) is escaped.
enum PercentEncoding {
    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}
