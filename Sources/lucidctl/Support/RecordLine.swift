import Foundation
import LucidEngine

/// One JSON line of `dump` and `import`: a record (or, for import, a deletion) with its index terms.
///
/// ```
/// {"keyspace": "books", "key": "b-000042", "value": {...}, "index": {"genre": ["fantasy"], "rating": [4.5]}}
/// ```
/// - `key` (a UTF-8 string) or `key_base64`; `value` (any JSON, stored as the exact bytes of its text) or
///   `value_base64`; `index` optional; `"delete": true` with no value removes the key.
/// - Terms: `null`, `true`/`false`, a number without `.` or exponent (Int64), a number with one (double: `4.0`
///   stays a double), a string; typed objects where JSON has no type: `{"date": "2024-05-01T12:00:00.000000Z"}`
///   (or an integer of microseconds since 1970 outside years 1 ... 9999), `{"identifier": "utf-8 text"}` (dump writes it
///   when the bytes are UTF-8 without control characters) or `{"identifier_base64": "..."}`, `{"double": "nan" | "inf" | "-inf"}`.
struct RecordLine: Sendable {
    var keyspace: String
    var key: [UInt8]
    /// The value's bytes; nil for a deletion.
    var value: [UInt8]?
    var terms: [IndexTerm]

    /// A bad line: what is wrong with it.
    struct Problem: Error, Sendable {
        var message: String
        init(_ message: String) { self.message = message }
    }

    // MARK: Writing (dump)

    /// The line for a record, without the newline. The value is written as JSON when its bytes are exactly one
    /// JSON value on one line (so that importing the line stores the same bytes), as `value_base64` otherwise.
    static func encode(keyspace: String, key: [UInt8], value: [UInt8], terms: [IndexTerm]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + key.count + value.count * 4 / 3)
        out.append(contentsOf: Array(#"{"keyspace":"#.utf8))
        JSONText.appendString(keyspace, to: &out)
        appendBytes(key, name: "key", to: &out)
        if JSONParser.isSingleLineValue(value) {
            out.append(contentsOf: Array(#","value":"#.utf8))
            out.append(contentsOf: value)
        } else {
            out.append(contentsOf: Array(#","value_base64":"#.utf8))
            JSONText.appendString(Data(value).base64EncodedString(), to: &out)
        }
        if !terms.isEmpty {
            // Grouped by index, in the order each index first appears; terms in their stored order.
            var names: [String] = []
            var grouped: [String: [IndexTerm]] = [:]
            for term in terms {
                if grouped[term.index] == nil { names.append(term.index) }
                grouped[term.index, default: []].append(term)
            }
            out.append(contentsOf: Array(#","index":{"#.utf8))
            for (i, name) in names.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendString(name, to: &out)
                out.append(contentsOf: Array(":[".utf8))
                for (j, term) in grouped[name]!.enumerated() {
                    if j > 0 { out.append(UInt8(ascii: ",")) }
                    termJSON(term).render(into: &out)
                }
                out.append(UInt8(ascii: "]"))
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// `,"name":"text"` for UTF-8 bytes, `,"name_base64":"..."` otherwise.
    private static func appendBytes(_ bytes: [UInt8], name: String, to out: inout [UInt8]) {
        if String(validating: bytes, as: UTF8.self) != nil {
            out.append(contentsOf: Array(",\"\(name)\":".utf8))
            JSONText.appendString(utf8: bytes, to: &out)
        } else {
            out.append(contentsOf: Array(",\"\(name)_base64\":".utf8))
            JSONText.appendString(Data(bytes).base64EncodedString(), to: &out)
        }
    }

    /// The JSON form of one term (see the type's documentation).
    static func termJSON(_ term: IndexTerm) -> JSONText {
        guard let value = term.value else {
            // Every committed term decodes; a foreign one is still shown, as its encoded bytes.
            return .object([("encoded_base64", .string(Data(term.term).base64EncodedString()))])
        }
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let v): return .int(v)
        case .double(let d):
            if d.isNaN { return .object([("double", .string("nan"))]) }
            if d.isInfinite { return .object([("double", .string(d < 0 ? "-inf" : "inf"))]) }
            return .double(d)
        case .date(let us):
            if let text = DateText.format(microsecondsSince1970: us) { return .object([("date", .string(text))]) }
            return .object([("date", .int(us))])
        case .string(let s): return .string(s)
        case .identifier(let bytes):
            if let text = String(validating: bytes, as: UTF8.self), !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
                return .object([("identifier", .string(text))])
            }
            return .object([("identifier_base64", .string(Data(bytes).base64EncodedString()))])
        }
    }

    // MARK: Reading (import)

    static let knownFields: Set<String> = ["keyspace", "key", "key_base64", "value", "value_base64", "index", "delete"]

    /// Parses one line. `keyspace`, when given, replaces the line's keyspace (which may then be left out).
    /// Checks the engine's limits so that a commit never fails on a line that parsed.
    static func decode(_ line: [UInt8], keyspace override: String?) throws(Problem) -> RecordLine {
        let document: JSONNode
        do {
            document = try JSONParser.parseDocument(line, unbuiltMembers: ["value"])
        } catch {
            throw Problem("invalid JSON at column \(error.offset + 1): \(error.message)")
        }
        guard case .object(let members) = document.kind else { throw Problem("a line must be a JSON object") }
        var fields: [String: JSONNode] = [:]
        for (name, node) in members {
            guard knownFields.contains(name) else {
                throw Problem("unknown field \"\(name)\" (expected one of \(knownFields.sorted().joined(separator: ", ")))")
            }
            guard fields.updateValue(node, forKey: name) == nil else { throw Problem("field \"\(name)\" appears twice") }
        }

        let keyspace: String
        if let override {
            keyspace = override
        } else {
            guard let node = fields["keyspace"] else { throw Problem("no \"keyspace\" (or pass --keyspace)") }
            guard case .string(let name) = node.kind else { throw Problem("\"keyspace\" must be a string") }
            keyspace = name
        }
        guard (1...255).contains(keyspace.utf8.count) else { throw Problem("keyspace name must be 1 to 255 UTF-8 bytes") }

        let key = try bytes(fields, "key")
        guard key.count <= 1024 else { throw Problem("key of \(key.count) bytes exceeds 1024") }

        var isDelete = false
        if let node = fields["delete"] {
            guard case .bool(let flag) = node.kind else { throw Problem("\"delete\" must be true or false") }
            isDelete = flag
        }
        if isDelete {
            guard fields["value"] == nil, fields["value_base64"] == nil, fields["index"] == nil else {
                throw Problem("a deletion has no \"value\", \"value_base64\" or \"index\"")
            }
            return RecordLine(keyspace: keyspace, key: key, value: nil, terms: [])
        }
        let value: [UInt8]
        switch (fields["value"], fields["value_base64"]) {
        case (let node?, nil): value = Array(line[node.span])
        case (nil, .some): value = try bytes(fields, "value")
        case (.some, .some): throw Problem("both \"value\" and \"value_base64\"")
        case (nil, nil): throw Problem("no \"value\" or \"value_base64\" (use \"delete\": true to remove a key)")
        }
        guard value.count <= 4 << 20 else { throw Problem("value of \(value.count) bytes exceeds 4 MiB") }
        let terms = try fields["index"].map(indexTerms) ?? []
        return RecordLine(keyspace: keyspace, key: key, value: value, terms: terms)
    }

    /// The bytes of `name` (a UTF-8 string) or `name_base64`; exactly one of them must be present.
    private static func bytes(_ fields: [String: JSONNode], _ name: String) throws(Problem) -> [UInt8] {
        switch (fields[name], fields[name + "_base64"]) {
        case (let node?, nil):
            guard case .string(let text) = node.kind else {
                throw Problem("\"\(name)\" must be a string (use \"\(name)_base64\" for bytes)")
            }
            return Array(text.utf8)
        case (nil, let node?):
            return try base64(node, field: name + "_base64")
        case (.some, .some): throw Problem("both \"\(name)\" and \"\(name)_base64\"")
        case (nil, nil): throw Problem("no \"\(name)\" or \"\(name)_base64\"")
        }
    }

    private static func base64(_ node: JSONNode, field: String) throws(Problem) -> [UInt8] {
        guard case .string(let text) = node.kind, let data = Data(base64Encoded: text) else {
            throw Problem("\"\(field)\" must be a base64 string")
        }
        return [UInt8](data)
    }

    private static func indexTerms(_ node: JSONNode) throws(Problem) -> [IndexTerm] {
        guard case .object(let indexes) = node.kind else {
            throw Problem("\"index\" must be an object of index names to lists of terms")
        }
        var terms: [IndexTerm] = []
        for (name, list) in indexes {
            guard (1...255).contains(name.utf8.count) else { throw Problem("index name must be 1 to 255 UTF-8 bytes") }
            let items: [JSONNode]
            if case .array(let array) = list.kind { items = array } else { items = [list] }
            for item in items {
                let term = IndexTerm(index: name, value: try indexValue(item, index: name))
                guard term.term.count <= 1024 else { throw Problem("a term of index \"\(name)\" exceeds 1024 bytes") }
                terms.append(term)
            }
        }
        guard terms.count <= 4096 else { throw Problem("\(terms.count) index terms exceed 4096") }
        return terms
    }

    /// One term: see the type's documentation for the JSON forms.
    static func indexValue(_ node: JSONNode, index: String) throws(Problem) -> IndexValue {
        switch node.kind {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .string(let s): return .string(s)
        case .number(let text): return try number(text, index: index)
        case .object(let members):
            guard members.count == 1, let (type, item) = members.first else {
                throw Problem("a typed term of index \"\(index)\" is an object with one member: date, identifier, identifier_base64 or double")
            }
            switch (type, item.kind) {
            case ("date", .string(let text)):
                guard let us = DateText.parse(text) else {
                    throw Problem("date \"\(text)\" of index \"\(index)\" is not YYYY-MM-DDTHH:MM:SS[.ffffff]Z")
                }
                return .date(microsecondsSince1970: us)
            case ("date", .number(let text)):
                guard let us = Int64(text) else { throw Problem("date of index \"\(index)\" must be integer microseconds") }
                return .date(microsecondsSince1970: us)
            case ("identifier", .string(let text)): return .identifier(Array(text.utf8))
            case ("identifier_base64", _): return .identifier(try base64(item, field: "identifier_base64"))
            case ("double", .string(let text)):
                switch text {
                case "nan", "NaN": return .double(.nan)
                case "inf", "+inf", "infinity": return .double(.infinity)
                case "-inf", "-infinity": return .double(-.infinity)
                default: throw Problem("{\"double\": \"\(text)\"} of index \"\(index)\": expected nan, inf or -inf")
                }
            case ("double", .number(let text)):
                guard let d = Double(text), d.isFinite else { throw Problem("double \(text) of index \"\(index)\" is out of range") }
                return .double(d)
            default:
                throw Problem("unknown typed term {\"\(type)\": ...} of index \"\(index)\" (expected date, identifier, identifier_base64 or double)")
            }
        case .array: throw Problem("index \"\(index)\": a term cannot be a list (the index's value is a list of terms)")
        case .unparsed: throw Problem("index \"\(index)\": unreadable term")
        }
    }

    /// `4` is an Int64; `4.0`, `4.5` and `1e3` are doubles.
    private static func number(_ text: String, index: String) throws(Problem) -> IndexValue {
        if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
            guard let v = Int64(text) else {
                throw Problem("integer \(text) of index \"\(index)\" does not fit in 64 bits (write it with .0 for a double)")
            }
            return .int(v)
        }
        guard let d = Double(text), d.isFinite else { throw Problem("number \(text) of index \"\(index)\" is out of range") }
        return .double(d)
    }
}
