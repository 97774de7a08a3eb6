/// A failure talking to the backend.
public enum APIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request cannot be built (a local-id placeholder left, a malformed URL).
    case invalidRequest(String)
    /// The server could not be reached.
    case networkUnreachable(String)
    /// No answer in time.
    case timeout
    /// An HTTP status outside 200–299 (and not 304), with the server's body.
    case httpStatus(code: Int, body: [UInt8])
    /// The body is not what the endpoint promises.
    case undecodableBody(String)

    public var description: String {
        switch self {
        case .invalidRequest(let d): "invalid request: \(d)"
        case .networkUnreachable(let d): "network unreachable: \(d)"
        case .timeout: "request timed out"
        case .httpStatus(let code, let body): "HTTP \(code): \(String(decoding: body.prefix(200), as: UTF8.self))"
        case .undecodableBody(let d): "undecodable body: \(d)"
        }
    }
}
