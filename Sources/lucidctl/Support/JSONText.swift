/// A JSON value to print, with its object members in a fixed order (so `--json` outputs are stable).
enum JSONText: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    /// Printed with the shortest text that reads back as the same double; must be finite.
    case double(Double)
    case string(String)
    case array([JSONText])
    case object([(String, JSONText)])

    /// The value as one line of JSON (no trailing newline).
    var rendered: String {
        var out: [UInt8] = []
        render(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the value's compact JSON text to `out`.
    func render(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: Array("null".utf8))
        case .bool(let b): out.append(contentsOf: Array((b ? "true" : "false").utf8))
        case .int(let v): out.append(contentsOf: Array("\(v)".utf8))
        case .uint(let v): out.append(contentsOf: Array("\(v)".utf8))
        case .double(let d): out.append(contentsOf: Array(Self.number(d).utf8))
        case .string(let s): Self.appendString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.render(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (name, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.appendString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                value.render(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A finite double as a JSON number that always reads back as a double: `4.0`, `4.5`, `1e-07`
    /// (Swift's shortest round-trip text, which always has a point or an exponent). Not for NaN or infinities.
    static func number(_ d: Double) -> String {
        precondition(d.isFinite, "JSON has no text for \(d)")
        return "\(d == 0 ? 0.0 : d)"
    }

    /// Appends `s` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, ... or `\u00XX`;
    /// everything else as its UTF-8 bytes.
    static func appendString(_ s: String, to out: inout [UInt8]) {
        appendString(utf8: s.utf8, to: &out)
    }

    /// ``appendString(_:to:)`` for bytes known to be valid UTF-8.
    static func appendString<S: Sequence>(utf8 bytes: S, to out: inout [UInt8]) where S.Element == UInt8 {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20, 0x7F:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
