#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `~=` pattern that is literal text to the regular expressions ``QueryEvaluator`` compiles
/// (`NSRegularExpression`, ICU's syntax, no options): it holds none of the characters that are special outside a
/// set, `\ ^ $ . | ? * + ( ) [ ] { }`. Such a regex matches exactly the texts that hold the pattern's code points
/// in a row (case-sensitive, no canonical equivalence: ICU's defaults), which is where the pattern's UTF-8 bytes
/// occur in the text's UTF-8 bytes: UTF-8 is self-synchronizing, so a run of one valid UTF-8 string's bytes found
/// in another's starts and ends on code point boundaries. Searching the bytes (`memchr`, `memcmp`) costs tens of
/// nanoseconds where `NSRegularExpression` costs microseconds per text on Linux.
struct LiteralPattern: Sendable {
    /// The pattern's UTF-8 bytes.
    let bytes: [UInt8]

    /// The pattern as literal text, or nil when it holds a character special to the regex syntax, or is empty
    /// (`NSRegularExpression` refuses an empty pattern, and the query keeps that error). O(pattern).
    init?(_ pattern: String) {
        guard !pattern.isEmpty else { return nil }
        for byte in pattern.utf8 {
            switch byte {
            case UInt8(ascii: "\\"), UInt8(ascii: "^"), UInt8(ascii: "$"), UInt8(ascii: "."), UInt8(ascii: "|"),
                 UInt8(ascii: "?"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "("), UInt8(ascii: ")"),
                 UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "{"), UInt8(ascii: "}"):
                return nil
            default:
                continue
            }
        }
        bytes = Array(pattern.utf8)
    }

    /// Whether the regex of this pattern finds a match in `text`. O(text · pattern) at worst, O(text) typically;
    /// no allocation for a native string.
    func isFound(in text: String) -> Bool {
        var text = text
        return text.withUTF8 { haystack in
            guard haystack.count >= bytes.count, let base = haystack.baseAddress else { return false }
            return bytes.withUnsafeBufferPointer { needle in
                // Each place the first byte occurs (`memchr`), then the rest compared there (`memcmp`).
                let last = haystack.count - needle.count
                var start = 0
                while start <= last {
                    guard let hit = memchr(base + start, Int32(needle[0]), last - start + 1) else { return false }
                    let i = UnsafeRawPointer(hit) - UnsafeRawPointer(base)
                    if memcmp(base + i, needle.baseAddress!, needle.count) == 0 { return true }
                    start = i + 1
                }
                return false
            }
        }
    }
}
