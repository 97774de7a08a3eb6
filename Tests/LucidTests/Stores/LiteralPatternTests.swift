import Foundation
import Testing
@testable import Lucid

/// `~=` patterns of literal text are searched for as bytes (``LiteralPattern``) instead of run as regexes: the
/// answers must be those of `NSRegularExpression` on every text, combining marks, precomposed letters, emoji and
/// case included, and patterns with a regex metacharacter must still go to the regex.
@Suite("Literal ~= patterns")
struct LiteralPatternTests {
    /// Pieces that tell code point matching from character matching: a precomposed é and an e with a combining
    /// accent, ß against ss, a dotted capital I, an emoji with a skin-tone modifier and its base, case, spaces,
    /// and characters that are special only to other regex flavours or only inside sets.
    static let pieces = ["a", "b", "e", "é", "e\u{301}", "\u{301}", "ß", "ss", "S", "İ", "i", "👍", "👍🏽", "\u{1F3FD}",
                         " ", "\n", "#", "-", ",", "/", "&", "~", "\0", "Ω", "日本"]

    static func regexMatches(_ pattern: String, _ text: String) throws -> Bool {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    @Test("a byte search answers as NSRegularExpression does, on random literal patterns and texts")
    func agreesWithTheRegex() throws {
        var rng = SplitMix(seed: 0x11_7E8A_1)
        func piece() -> String { Self.pieces[Int(rng.next() % UInt64(Self.pieces.count))] }
        var found = 0
        for round in 0..<3_000 {
            let text = (0..<Int(rng.next() % 12)).map { _ in piece() }.joined()
            // Half the patterns are cut from the text, so that many are found.
            let pattern: String
            if round % 2 == 0, !text.isEmpty {
                let scalars = Array(text.unicodeScalars)
                let start = Int(rng.next() % UInt64(scalars.count))
                let length = Int(rng.next() % UInt64(scalars.count - start + 1))
                var view = String.UnicodeScalarView()
                view.append(contentsOf: scalars[start..<(start + length)])
                pattern = String(view)
            } else {
                pattern = (0..<Int(rng.next() % 3)).map { _ in piece() }.joined()
            }
            guard !pattern.isEmpty else { continue }   // refused by NSRegularExpression, so never literal
            let literal = try #require(LiteralPattern(pattern), "\(pattern.debugDescription) is literal")
            let expected = try Self.regexMatches(pattern, text)
            if expected { found += 1 }
            #expect(literal.isFound(in: text) == expected, "pattern \(pattern.debugDescription) in \(text.debugDescription)")
        }
        #expect(found > 1_000, "enough patterns were found to compare both answers (\(found))")
    }

    @Test("a pattern with a regex metacharacter is not literal")
    func metacharacters() {
        for special in ["\\", "^", "$", ".", "|", "?", "*", "+", "(", ")", "[", "]", "{", "}"] {
            #expect(LiteralPattern("ab" + special + "c") == nil, "\(special)")
        }
        #expect(LiteralPattern("Glass") != nil)
        #expect(LiteralPattern("") == nil, "the empty pattern goes to NSRegularExpression, which refuses it")
    }

    @Test("an empty pattern is still an invalid regex")
    func emptyPattern() {
        guard case .invalidRegex(let pattern, _)? = QueryValidationTests.error(.filter(.title ~= .string(""))) else {
            Issue.record("expected invalidRegex for the empty pattern")
            return
        }
        #expect(pattern == "")
    }

    @Test("queries with literal and regex patterns return what the regex selects, in memory")
    func queries() async throws {
        let titles = ["Caf\u{E9} Noir", "Cafe\u{301} Blanc", "Glass House", "glass", "Stra\u{DF}e", "Strasse", "👍🏽 ok"]
        let store = InMemoryStore<Book>()
        _ = store.setNow(titles.enumerated().map { Book.remote($0.offset + 1, $0.element) })
        for pattern in ["Caf\u{E9}", "e\u{301}", "e", "Glass", "lass", "\u{DF}", "ss", "👍", "\u{1F3FD}", "a.s", "^G"] {
            let got = try store.searchNow(.filter(.title ~= .string(pattern))).array.map(\.title).sorted()
            let expected = try titles.filter { try Self.regexMatches(pattern, $0) }.sorted()
            #expect(got == expected, "pattern \(pattern.debugDescription)")
        }
    }
}
