/// A JSON syntax error at a byte offset of the input.
struct JSONSyntaxError: Error, Sendable {
    /// Offset of the byte where parsing failed (0-based).
    var offset: Int
    var message: String
}

/// A JSON value parsed from bytes, with the byte range it came from, so that a value can be copied verbatim.
struct JSONNode: Sendable {
    enum Kind: Sendable {
        case null
        case bool(Bool)
        /// The number's literal text (the caller decides between integer and double).
        case number(String)
        case string(String)
        case array([JSONNode])
        /// Members in input order (duplicates kept; callers reject them where it matters).
        case object([(key: String, value: JSONNode)])
        /// Checked but not built (see ``JSONParser/parseDocument(_:unbuiltMembers:)``).
        case unparsed
    }

    var kind: Kind
    /// Where the value's text lies in the input (no surrounding whitespace).
    var span: Range<Int>
}

/// A strict RFC 8259 parser over bytes: UTF-8 validated, no lone surrogates, no control characters in strings,
/// nesting at most 512 deep. Hand-written (not JSONSerialization) because `import` must store each value's exact
/// bytes, and `dump` must know whether a value's bytes can be written into a line as they are.
struct JSONParser {
    private let bytes: [UInt8]
    private var i = 0
    private var depth = 0
    private let unbuilt: Set<String>
    static let maxDepth = 512

    private init(_ bytes: [UInt8], unbuilt: Set<String>) {
        self.bytes = bytes
        self.unbuilt = unbuilt
    }

    /// Parses one JSON value that makes up all of `bytes` (whitespace around it allowed). Members of the top-level
    /// object named in `unbuiltMembers` are checked but not built (their ``JSONNode/span`` is all a caller needs).
    static func parseDocument(_ bytes: [UInt8], unbuiltMembers: Set<String> = []) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes, unbuilt: unbuiltMembers)
        parser.skipWhitespace()
        let node = try parser.value(build: true)
        parser.skipWhitespace()
        guard parser.i == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return node
    }

    /// True when `bytes` are exactly one JSON value with no whitespace around it and no line break anywhere,
    /// so that they can stand for themselves inside a JSON line.
    static func isSingleLineValue(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first, let last = bytes.last, !isWhitespace(first), !isWhitespace(last),
              !bytes.contains(0x0A), !bytes.contains(0x0D) else { return false }
        var parser = JSONParser(bytes, unbuilt: [])
        guard (try? parser.value(build: false)) != nil else { return false }
        return parser.i == bytes.count
    }

    // MARK: Grammar

    private static func isWhitespace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    private mutating func skipWhitespace() {
        while i < bytes.count, Self.isWhitespace(bytes[i]) { i += 1 }
    }

    private func error(_ message: String) -> JSONSyntaxError { JSONSyntaxError(offset: i, message: message) }

    private mutating func value(build: Bool) throws(JSONSyntaxError) -> JSONNode {
        guard i < bytes.count else { throw error("unexpected end of input") }
        let start = i
        let kind: JSONNode.Kind
        switch bytes[i] {
        case UInt8(ascii: "{"): kind = try object(build: build)
        case UInt8(ascii: "["): kind = try array(build: build)
        case UInt8(ascii: "\""):
            let s = try string(build: build)
            kind = build ? .string(s) : .unparsed
        case UInt8(ascii: "t"): try literal("true"); kind = build ? .bool(true) : .unparsed
        case UInt8(ascii: "f"): try literal("false"); kind = build ? .bool(false) : .unparsed
        case UInt8(ascii: "n"): try literal("null"); kind = build ? .null : .unparsed
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try number()
            kind = build ? .number(String(decoding: bytes[start..<i], as: UTF8.self)) : .unparsed
        default:
            throw error("unexpected character '\(Self.printable(bytes[i]))'")
        }
        return JSONNode(kind: kind, span: start..<i)
    }

    private static func printable(_ b: UInt8) -> String {
        (0x21...0x7E).contains(b) ? String(UnicodeScalar(b)) : "\\x" + String(b, radix: 16)
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let expected = Array(UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
        guard i + expected.count <= bytes.count, Array(bytes[i..<(i + expected.count)]) == expected else {
            throw error("invalid literal (expected \(word))")
        }
        i += expected.count
    }

    private mutating func digits() -> Int {
        let start = i
        while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
        return i - start
    }

    private mutating func number() throws(JSONSyntaxError) {
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) else {
            throw error("invalid number")
        }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            _ = digits()
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw error("invalid number: digits expected after '.'") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw error("invalid number: digits expected in the exponent") }
        }
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth)") }
    }

    private mutating func array(build: Bool) throws(JSONSyntaxError) -> JSONNode.Kind {
        try enter()
        defer { depth -= 1 }
        i += 1
        var items: [JSONNode] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            return build ? .array([]) : .unparsed
        }
        while true {
            skipWhitespace()
            let item = try value(build: build)
            if build { items.append(item) }
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of input inside an array") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; break }
            throw error("expected ',' or ']'")
        }
        return build ? .array(items) : .unparsed
    }

    private mutating func object(build: Bool) throws(JSONSyntaxError) -> JSONNode.Kind {
        try enter()
        defer { depth -= 1 }
        i += 1
        var members: [(key: String, value: JSONNode)] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            return build ? .object([]) : .unparsed
        }
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let name = try string(build: build)
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
            i += 1
            skipWhitespace()
            let member = try value(build: build && !(depth == 1 && unbuilt.contains(name)))
            if build { members.append((name, member)) }
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of input inside an object") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; break }
            throw error("expected ',' or '}'")
        }
        return build ? .object(members) : .unparsed
    }

    /// Reads a string starting at its opening quote; returns its contents when `build` (else "").
    private mutating func string(build: Bool) throws(JSONSyntaxError) -> String {
        i += 1
        let start = i
        var out: [UInt8] = []
        var nonASCII = false
        while true {
            guard i < bytes.count else { throw error("unterminated string") }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { break }
            if b < 0x20 { throw error("control character in a string (escape it)") }
            if b >= 0x80 { nonASCII = true }
            if b != UInt8(ascii: "\\") {
                if build { out.append(b) }
                i += 1
                continue
            }
            i += 1
            guard i < bytes.count else { throw error("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired surrogate escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("unpaired surrogate escape")
                }
                if build { out.append(contentsOf: Array(String(UnicodeScalar(scalar)!).utf8)) }
            default:
                i -= 1
                throw error("invalid escape '\\\(Self.printable(e))'")
            }
        }
        if nonASCII, String(validating: bytes[start..<i], as: UTF8.self) == nil {
            throw error("string is not valid UTF-8")
        }
        i += 1
        return build ? String(decoding: out, as: UTF8.self) : ""
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | UInt32(digit)
            i += 1
        }
        return v
    }
}
