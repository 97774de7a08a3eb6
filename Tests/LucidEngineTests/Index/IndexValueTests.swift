import Testing
@testable import LucidEngine

/// The byte-comparable encoding of `IndexValue` (docs/FORMAT.md, "Index terms"): byte order equals the documented
/// value order, -0.0 equals 0.0, every NaN is one NaN above +infinity, decoding inverts encoding with the full
/// length, the encoding is prefix-free, and decoding rejects truncated or foreign bytes without crashing.
@Suite("IndexValue encoding")
struct IndexValueTests {
    /// Values that sit on the edges of the encoding: sign flips, escapes, terminators, type boundaries.
    static let tricky: [IndexValue] = {
        var v: [IndexValue] = [.null, .bool(false), .bool(true)]
        let ints: [Int64] = [.min, .min + 1, -256, -255, -1, 0, 1, 255, 256, 0x00FF_FFFF_FFFF_FFFF, .max - 1, .max]
        v += ints.map { .int($0) }
        let doubles: [Double] = [
            -.infinity, -.greatestFiniteMagnitude, -1e300, -1.5, -1.0, -.leastNormalMagnitude,
            -.leastNonzeroMagnitude * 2, -.leastNonzeroMagnitude, -0.0, 0.0, .leastNonzeroMagnitude,
            .leastNonzeroMagnitude * 2, .leastNormalMagnitude.nextDown, .leastNormalMagnitude, 1e-300, 1.0, 1.5,
            2.0, 1e300, .greatestFiniteMagnitude, .infinity, .nan, -.nan, .signalingNaN,
            Double(bitPattern: 0x7FF0_0000_0000_0001), Double(bitPattern: 0xFFFF_FFFF_FFFF_FFFF),
            Double(bitPattern: 0x7FFF_FFFF_FFFF_FFFF),
        ]
        v += doubles.map { .double($0) }
        let dates: [Int64] = [.min, -1_000_000, -1, 0, 1, 1_700_000_000_000_000, .max]
        v += dates.map { .date(microsecondsSince1970: $0) }
        let strings = ["", "\0", "\0\0", "\0\u{1}", "\u{1}", "a", "a\0", "a\0\0", "a\0b", "a\0\u{1}", "a\u{1}", "aa",
                       "ab", "b", "z", "\u{7F}", "é", "e\u{301}", "ÿ", "日本", "日本語", "😀", "\u{FFFF}", "\u{10FFFF}"]
        v += strings.map { .string($0) }
        let identifiers: [[UInt8]] = [[], [0x00], [0x00, 0x00], [0x00, 0x01], [0x00, 0xFF], [0x00, 0xFF, 0x00, 0x01],
                                      [0x01], [0x01, 0x00], [0x61], [0x61, 0x00], [0xFE, 0xFF], [0xFF],
                                      [0xFF, 0x00], [0xFF, 0x00, 0x01], [0xFF, 0xFF], [0xFF, 0xFF, 0xFF]]
        v += identifiers.map { .identifier($0) }
        return v
    }()

    @Test("the encoding orders every pair of tricky values as the documented order does")
    func encodingOrderMatchesValueOrder() {
        var failures: [String] = []
        for a in Self.tricky {
            let ea = a.encoded
            for b in Self.tricky {
                let eb = b.encoded
                let expected = IndexTest.compare(a, b)
                let byBytes = ea == eb ? 0 : (ea.lexicographicallyPrecedes(eb) ? -1 : 1)
                if byBytes != expected {
                    failures.append("\(IndexTest.describe(a)) vs \(IndexTest.describe(b)): documented \(expected), "
                                    + "bytes \(byBytes) ([\(IndexTest.hex(ea))] vs [\(IndexTest.hex(eb))])")
                }
                if (a < b) != (expected < 0) || (a == b) != (expected == 0) {
                    failures.append("\(IndexTest.describe(a)) vs \(IndexTest.describe(b)): operators disagree with "
                                    + "documented \(expected)")
                }
                if expected == 0 && a.hashValue != b.hashValue {
                    failures.append("\(IndexTest.describe(a)) == \(IndexTest.describe(b)) but hashes differ")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) ordering failures: \(failures.prefix(10).joined(separator: "; "))")
        // The list really covers the documented order: sorting by bytes gives the documented type order.
        let sorted = Self.tricky.sorted { $0.encoded.lexicographicallyPrecedes($1.encoded) }
        let ranks = sorted.map(IndexTest.typeRank)
        #expect(ranks == ranks.sorted(), "types must sort null < bool < int < double < date < string < identifier")
    }

    @Test("negative zero equals zero and every NaN is the same value, after +infinity")
    func zeroAndNaN() {
        #expect(IndexValue.double(-0.0).encoded == IndexValue.double(0.0).encoded)
        #expect(IndexValue.double(-0.0) == .double(0.0))
        #expect(Set([IndexValue.double(-0.0), .double(0.0)]).count == 1)
        let nans: [Double] = [.nan, -.nan, .signalingNaN, Double(bitPattern: 0x7FF0_0000_0000_0001),
                              Double(bitPattern: 0xFFFF_FFFF_FFFF_FFFF), Double(bitPattern: 0x7FF8_0000_DEAD_BEEF)]
        for n in nans {
            #expect(IndexValue.double(n).encoded == IndexValue.double(.nan).encoded,
                    "NaN bits 0x\(String(n.bitPattern, radix: 16)) must encode as the canonical NaN")
            #expect(IndexValue.double(.infinity) < .double(n))
            #expect(IndexValue.double(n) < .date(microsecondsSince1970: .min), "NaN is still a double")
        }
        // Decoding -0.0's encoding gives 0.0 (the same bytes); a NaN decodes as a NaN.
        let zero = IndexValue.decode(IndexValue.double(-0.0).encoded[...])
        if case .double(let d)? = zero?.value { #expect(d == 0 && d.sign == .plus) } else { Issue.record("no double") }
        let nan = IndexValue.decode(IndexValue.double(-.nan).encoded[...])
        if case .double(let d)? = nan?.value { #expect(d.isNaN) } else { Issue.record("no double") }
    }

    @Test("encodings match the table of docs/FORMAT.md")
    func goldenEncodings() {
        let cases: [(IndexValue, [UInt8])] = [
            (.null, [0x01]),
            (.bool(false), [0x02, 0x00]),
            (.bool(true), [0x02, 0x01]),
            (.int(0), [0x03, 0x80, 0, 0, 0, 0, 0, 0, 0]),
            (.int(-1), [0x03, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            (.int(.min), [0x03, 0, 0, 0, 0, 0, 0, 0, 0]),
            (.int(0x0102_0304_0506_0708), [0x03, 0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]),
            (.double(0.0), [0x04, 0x80, 0, 0, 0, 0, 0, 0, 0]),
            (.double(-0.0), [0x04, 0x80, 0, 0, 0, 0, 0, 0, 0]),
            (.double(1.0), [0x04, 0xBF, 0xF0, 0, 0, 0, 0, 0, 0]),
            (.double(-1.0), [0x04, 0x40, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            (.double(.nan), [0x04, 0xFF, 0xF8, 0, 0, 0, 0, 0, 0]),
            (.date(microsecondsSince1970: 0), [0x05, 0x80, 0, 0, 0, 0, 0, 0, 0]),
            (.date(microsecondsSince1970: -1), [0x05, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            (.string(""), [0x06, 0x00, 0x01]),
            (.string("a\0b"), [0x06, 0x61, 0x00, 0xFF, 0x62, 0x00, 0x01]),
            (.string("é"), [0x06, 0xC3, 0xA9, 0x00, 0x01]),
            (.identifier([]), [0x07, 0x00, 0x01]),
            (.identifier([0x00, 0xFF]), [0x07, 0x00, 0xFF, 0xFF, 0x00, 0x01]),
        ]
        for (value, bytes) in cases {
            #expect(value.encoded == bytes, "\(IndexTest.describe(value)): [\(IndexTest.hex(value.encoded))]")
            var appended: [UInt8] = [0xAA]
            value.encode(into: &appended)
            #expect(appended == [0xAA] + bytes, "encode(into:) must append the same bytes")
        }
    }

    @Test("decode inverts encode with the full length, also inside a larger buffer")
    func roundTrip() {
        var rng = IndexTest.SplitMix64(seed: 0x1DE5_0001)
        let values = Self.tricky + (0..<3000).map { _ in rng.indexValue() }
        var failures: [String] = []
        for (i, value) in values.enumerated() {
            let encoded = value.encoded
            guard let (decoded, length) = IndexValue.decode(encoded[...]) else {
                failures.append("#\(i) \(IndexTest.describe(value)) does not decode"); continue
            }
            if length != encoded.count || !IndexTest.sameValue(decoded, value) || decoded.encoded != encoded {
                failures.append("#\(i) \(IndexTest.describe(value)) decodes as \(IndexTest.describe(decoded)), "
                                + "length \(length) of \(encoded.count)")
            }
            // Self-delimiting: with garbage before (slice offset) and another value after, decode reads exactly one.
            let before = rng.bytes(rng.int(0...5))
            let after = rng.indexValue().encoded + rng.bytes(rng.int(0...3))
            let buffer = before + encoded + after
            if let (inner, innerLength) = IndexValue.decode(buffer[before.count...]) {
                if innerLength != encoded.count || inner.encoded != encoded {
                    failures.append("#\(i) \(IndexTest.describe(value)) inside a buffer decodes as "
                                    + "\(IndexTest.describe(inner)) length \(innerLength)")
                }
            } else {
                failures.append("#\(i) \(IndexTest.describe(value)) does not decode inside a buffer")
            }
            // IndexTerm(index:value:) keeps the encoding and gives the value back.
            let term = IndexTerm(index: "i", value: value)
            if term.term != encoded || term.value.map({ IndexTest.sameValue($0, value) }) != true {
                failures.append("#\(i) IndexTerm round trip of \(IndexTest.describe(value)) failed")
            }
        }
        #expect(failures.isEmpty, "seed 0x1DE50001: \(failures.prefix(10).joined(separator: "; "))")
    }

    @Test("no encoding is a proper prefix of another (tricky values pairwise, random values sorted)")
    func prefixFree() {
        var failures: [String] = []
        func check(_ a: IndexValue, _ b: IndexValue) {
            let ea = a.encoded, eb = b.encoded
            if ea.count < eb.count && Array(eb.prefix(ea.count)) == ea {
                failures.append("[\(IndexTest.hex(ea))] (\(IndexTest.describe(a))) is a prefix of [\(IndexTest.hex(eb))] "
                                + "(\(IndexTest.describe(b)))")
            }
        }
        for a in Self.tricky { for b in Self.tricky { check(a, b) } }
        let seed: UInt64 = 0x1DE5_0002
        var rng = IndexTest.SplitMix64(seed: seed)
        let small = (0..<300).map { _ in rng.indexValue() }
        for a in small { for b in small + Self.tricky { check(a, b); check(b, a) } }
        // If some encoding were a prefix of another, it would be a prefix of its successor in sorted order.
        let many = (0..<6000).map { _ in rng.indexValue() } + Self.tricky
        let sorted = many.sorted { $0.encoded.lexicographicallyPrecedes($1.encoded) }
        for (a, b) in zip(sorted, sorted.dropFirst()) { check(a, b) }
        #expect(failures.isEmpty, "seed \(seed): \(failures.prefix(10).joined(separator: "; "))")
    }

    @Test("random pairs: byte order equals the documented order, and the operators agree with it")
    func randomPairsOrder() {
        let seed: UInt64 = 0x1DE5_0003
        var rng = IndexTest.SplitMix64(seed: seed)
        var failures: [String] = []
        for _ in 0..<20_000 {
            // Same type half of the time, so that within-type order is exercised.
            let a = rng.indexValue()
            var b = rng.indexValue()
            for _ in 0..<8 where rng.chance(0.5) && IndexTest.typeRank(a) != IndexTest.typeRank(b) { b = rng.indexValue() }
            let expected = IndexTest.compare(a, b)
            let ea = a.encoded, eb = b.encoded
            let byBytes = ea == eb ? 0 : (ea.lexicographicallyPrecedes(eb) ? -1 : 1)
            if byBytes != expected {
                failures.append("\(IndexTest.describe(a)) vs \(IndexTest.describe(b)): documented \(expected), bytes \(byBytes)")
            }
            // The operators compare the values in place (IndexValue+Comparison): they must agree with the bytes.
            if (a < b) != (byBytes < 0) || (b < a) != (byBytes > 0) || (a == b) != (byBytes == 0) {
                failures.append("\(IndexTest.describe(a)) vs \(IndexTest.describe(b)): operators disagree with bytes \(byBytes)")
            }
            if byBytes == 0 && a.hashValue != b.hashValue {
                failures.append("\(IndexTest.describe(a)) == \(IndexTest.describe(b)) but hashes differ")
            }
        }
        #expect(failures.isEmpty, "seed \(seed): \(failures.prefix(10).joined(separator: "; "))")
    }

    @Test("decode rejects every truncation of a valid encoding")
    func truncatedInputIsRejected() {
        var failures: [String] = []
        var rng = IndexTest.SplitMix64(seed: 0x1DE5_0004)
        for value in Self.tricky + (0..<500).map({ _ in rng.indexValue() }) {
            let encoded = value.encoded
            for cut in 0..<encoded.count {
                if let (v, length) = IndexValue.decode(encoded[0..<cut]) {
                    failures.append("\(IndexTest.describe(value)) cut to \(cut) bytes decodes as "
                                    + "\(IndexTest.describe(v)) (\(length))")
                }
            }
            let term = IndexTerm(index: "i", term: encoded + [0x00])
            if term.value != nil {
                failures.append("\(IndexTest.describe(value)) with a trailing byte is accepted as a whole term")
            }
        }
        #expect(failures.isEmpty, "seed 0x1DE50004: \(failures.prefix(10).joined(separator: "; "))")
    }

    @Test("decode rejects foreign bytes and accepts only canonical encodings, without crashing")
    func garbageIsRejected() {
        // Hand-picked non-encodings.
        let bad: [[UInt8]] = [
            [], [0x00], [0x08], [0xFF], [0x02], [0x02, 0x02], [0x02, 0xFF], [0x03, 1, 2, 3], [0x05],
            [0x04, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],                    // -0.0, not canonical
            [0x04, 0xFF, 0xF8, 0, 0, 0, 0, 0, 1],                                      // NaN with a payload
            [0x04, 0x00, 0x07, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],                    // a negative NaN
            [0x06], [0x06, 0x61], [0x06, 0x61, 0x00], [0x06, 0x00, 0x02], [0x06, 0x00, 0x00, 0x01],
            [0x06, 0xC3, 0x00, 0x01],                                                   // invalid UTF-8
            [0x06, 0xED, 0xA0, 0x80, 0x00, 0x01],                                       // a UTF-16 surrogate
            [0x06, 0xC0, 0x80, 0x00, 0x01],                                             // overlong NUL
            [0x07, 0x00], [0x07, 0x00, 0xFE], [0x07, 0x61, 0x00, 0xFF],
        ]
        for bytes in bad {
            #expect(IndexValue.decode(bytes[...]) == nil, "[\(IndexTest.hex(bytes))] must not decode")
            #expect(IndexTerm(index: "i", term: bytes).value == nil)
        }
        // Random bytes: whatever decodes must be exactly the canonical encoding of what it decodes to.
        let seed: UInt64 = 0x1DE5_0005
        var rng = IndexTest.SplitMix64(seed: seed)
        var failures: [String] = []
        var accepted = 0
        for _ in 0..<30_000 {
            var bytes = rng.trickyBytes(rng.int(0...24))
            if !bytes.isEmpty && rng.chance(0.8) { bytes[0] = UInt8(rng.int(0...8)) }
            if rng.chance(0.3) { bytes += [0x00, 0x01] }
            let start = rng.int(0...min(2, bytes.count))
            guard let (value, length) = IndexValue.decode(bytes[start...]) else { continue }
            accepted += 1
            let consumed = Array(bytes[start..<min(bytes.count, start + length)])
            if length < 1 || start + length > bytes.count || value.encoded != consumed {
                failures.append("[\(IndexTest.hex(Array(bytes[start...])))] decodes as \(IndexTest.describe(value)) "
                                + "length \(length), whose encoding is [\(IndexTest.hex(value.encoded))]")
            }
        }
        #expect(failures.isEmpty, "seed \(seed): \(failures.prefix(10).joined(separator: "; "))")
        #expect(accepted > 1000, "seed \(seed): the generator should also produce valid encodings (\(accepted))")
    }

    /// Byte strings around the valid encodings: every tricky value's encoding, with `trailing` after it, and cut
    /// short at every length, then 30,000 random strings from `seed` (mostly with a tag byte first, some with a
    /// string terminator after).
    static func samples(seed: UInt64, trailing: [UInt8]) -> [[UInt8]] {
        var rng = IndexTest.SplitMix64(seed: seed)
        var samples: [[UInt8]] = tricky.map(\.encoded)
        samples += tricky.map { $0.encoded + trailing }
        samples += tricky.flatMap { value in (0..<value.encoded.count).map { Array(value.encoded.prefix($0)) } }
        for _ in 0..<30_000 {
            var bytes = rng.trickyBytes(rng.int(0...24))
            if !bytes.isEmpty && rng.chance(0.8) { bytes[0] = UInt8(rng.int(0...8)) }
            if rng.chance(0.3) { bytes += [0x00, 0x01] }
            samples.append(bytes)
        }
        return samples
    }

    @Test("isValidEncoding (the batch check) accepts exactly the terms that decode whole")
    func validationMatchesDecoding() {
        let seed: UInt64 = 0x1DE5_0006
        let samples = Self.samples(seed: seed, trailing: [0x00])
        var failures: [String] = []
        for bytes in samples where IndexValue.isValidEncoding(bytes) != (IndexTerm(index: "i", term: bytes).value != nil) {
            failures.append("[\(IndexTest.hex(bytes))]")
        }
        #expect(failures.isEmpty, "seed \(seed): \(failures.prefix(10).joined(separator: "; "))")
    }

    @Test("decoding in place (index walks) answers as decode does, for valid, truncated and foreign bytes")
    func inPlaceDecodingMatches() {
        let seed: UInt64 = 0x1DE5_0007
        let samples = Self.samples(seed: seed, trailing: [0x00, 0x61])
        var failures: [String] = []
        for bytes in samples {
            let expected = IndexValue.decode(bytes[...])
            let inPlace = bytes.withUnsafeBytes { IndexValue.decode($0) }
            if inPlace?.value.encoded != expected?.value.encoded || inPlace?.length != expected?.length {
                failures.append("[\(IndexTest.hex(bytes))]")
            }
        }
        #expect(failures.isEmpty, "seed \(seed): \(failures.prefix(10).joined(separator: "; "))")
    }
}
