/// Bounds-checked reads over an entity record. Every length is checked against the bytes left before use.
struct BinaryReader {
    let bytes: [UInt8]

    func corrupt(_ what: String, at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath(), debugDescription: "\(what) at byte \(position)"))
    }

    func tag(at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> EntityCodec.Tag {
        guard position < bytes.count else { throw corrupt("truncated record", at: position, codingPath()) }
        guard let tag = EntityCodec.Tag(rawValue: bytes[position]) else {
            throw corrupt("unknown tag \(bytes[position])", at: position, codingPath())
        }
        return tag
    }

    func varint(at position: inout Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < bytes.count else { throw corrupt("truncated varint", at: position, codingPath()) }
            let byte = bytes[position]
            position += 1
            guard shift < 64 else { throw corrupt("varint too long", at: position, codingPath()) }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// A length that must fit in the bytes left after `position`.
    func length(at position: inout Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Int {
        let raw = try varint(at: &position, codingPath())
        guard raw <= UInt64(bytes.count - position) else {
            throw corrupt("length \(raw) past the end of the record", at: position, codingPath())
        }
        return Int(raw)
    }

    func fixed(_ count: Int, at position: Int, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> UInt64 {
        guard count <= bytes.count - position else { throw corrupt("truncated number", at: position, codingPath()) }
        var value: UInt64 = 0
        for i in 0..<count { value |= UInt64(bytes[position + i]) << UInt64(8 * i) }
        return value
    }

    /// The position just past the value starting at `position`. Depth-bounded, so hostile nesting throws.
    func skip(at position: Int, depth: Int = 0, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Int {
        guard depth <= EntityCodec.maxDepth else { throw corrupt("nesting too deep", at: position, codingPath()) }
        var p = position + 1
        switch try tag(at: position, codingPath()) {
        case .end: throw corrupt("unexpected end tag", at: position, codingPath())
        case .null, .falseValue, .trueValue, .empty: return p
        case .int, .uint: _ = try varint(at: &p, codingPath()); return p
        case .double: _ = try fixed(8, at: p, codingPath()); return p + 8
        case .float: _ = try fixed(4, at: p, codingPath()); return p + 4
        case .string:
            let n = try length(at: &p, codingPath())
            return p + n
        case .keyed:
            while true {
                let keyLength = try quickOrCheckedVarint(at: &p, codingPath())
                if keyLength == 0 { return p }
                guard keyLength - 1 <= UInt64(bytes.count - p) else {
                    throw corrupt("key past the end of the record", at: p, codingPath())
                }
                p += Int(keyLength - 1)
                p = try valueEnd(at: p, depth: depth + 1, codingPath())
            }
        case .unkeyed:
            while true {
                guard p < bytes.count else { throw corrupt("truncated container", at: p, codingPath()) }
                if bytes[p] == EntityCodec.Tag.end.rawValue { return p + 1 }
                p = try valueEnd(at: p, depth: depth + 1, codingPath())
            }
        }
    }

    /// The entries of the keyed container whose tag is at `position` (a container at `depth`: its values are
    /// checked, by skipping them, at `depth + 1`), in record order, and the position just past its end tag.
    /// - Throws: `typeMismatch` when the value there is not a keyed container, `dataCorrupted` for bad bytes.
    func keyedEntries(at position: Int, depth: Int,
                      _ codingPath: @autoclosure () -> [any CodingKey]) throws -> (entries: [KeyedEntry], end: Int) {
        guard try tag(at: position, codingPath()) == .keyed else {
            throw mismatch([String: Int].self, at: position, codingPath())
        }
        var entries: [KeyedEntry] = []
        entries.reserveCapacity(16)   // one allocation for a typical entity instead of one per doubling
        var p = position + 1
        while true {
            let keyLength = try quickOrCheckedVarint(at: &p, codingPath())
            if keyLength == 0 { return (entries, p) }
            guard keyLength - 1 <= UInt64(bytes.count - p) else {
                throw corrupt("key past the end of the record", at: p, codingPath())
            }
            let key = p..<(p + Int(keyLength - 1))
            p = key.upperBound
            entries.append(KeyedEntry(key: key, value: p))
            p = try valueEnd(at: p, depth: depth + 1, codingPath())
        }
    }

    /// Whether the key bytes at `range` are `name`. Compares in place (no slice or `UTF8View` iteration).
    @inline(__always)
    func key(_ range: Range<Int>, equals name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard range.count == name.count else { return false }
        guard let name = name.baseAddress else { return true }
        return bytes.withUnsafeBufferPointer { bytes in
            bytesEqual(bytes.baseAddress! + range.lowerBound, name, count: range.count)
        }
    }
}

/// An entry of a keyed container: where its key's bytes are and where its value starts.
struct KeyedEntry {
    var key: Range<Int>
    var value: Int
}

// MARK: Identifiers (for EntityRecordReader's identifier read and EntityIdentifier's binary decoding)

extension BinaryReader {
    /// The parts of the identifier whose keyed container starts at `position`, as `EntityIdentifier.init(from:)`
    /// reads them: the first `local` entry's string and the position of the first `remote` entry's value, null
    /// as absent, other keys ignored. `depth` is the container's depth in the record.
    func identifierParts(at position: Int, depth: Int,
                         _ codingPath: @autoclosure () -> [any CodingKey]) throws -> (local: String?, remote: Int?) {
        guard try tag(at: position, codingPath()) == .keyed else {
            throw mismatch([String: Int].self, at: position, codingPath())
        }
        var local: Int?
        var remote: Int?
        var p = position + 1
        while true {
            let keyLength = try quickOrCheckedVarint(at: &p, codingPath())
            if keyLength == 0 { break }
            guard keyLength - 1 <= UInt64(bytes.count - p) else {
                throw corrupt("key past the end of the record", at: p, codingPath())
            }
            let key = p..<(p + Int(keyLength - 1))
            p = key.upperBound
            if local == nil, isKey(key, "local") { local = p }
            else if remote == nil, isKey(key, "remote") { remote = p }
            p = try valueEnd(at: p, depth: depth + 1, codingPath())
        }
        // Read as the keyed container reads them: errors name the entry's key after the container's path.
        var localValue: String?
        if let local, try !isNil(at: local, codingPath() + [RecordKey("local")]) {
            localValue = try decodeString(at: local, codingPath() + [RecordKey("local")])
        }
        if let r = remote, try isNil(at: r, codingPath() + [RecordKey("remote")]) { remote = nil }
        return (localValue, remote)
    }

    /// Whether the key bytes at `range` are `name`'s UTF-8.
    private func isKey(_ range: Range<Int>, _ name: StaticString) -> Bool {
        name.withUTF8Buffer { key(range, equals: $0) }
    }
}
