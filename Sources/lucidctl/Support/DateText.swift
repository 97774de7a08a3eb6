/// Dates of index terms as RFC 3339 UTC text with microseconds, `2024-05-01T12:00:00.000000Z`, converted exactly
/// (no Foundation formatter, whose precision is milliseconds on some platforms).
enum DateText {
    static let microsecondsPerDay: Int64 = 86_400_000_000

    /// The text for `microseconds` since 1970 UTC, or nil outside years 1 ... 9999 (written as an integer then).
    static func format(microsecondsSince1970 us: Int64) -> String? {
        let (days, rest) = floorDivision(us, microsecondsPerDay)
        let (y, m, d) = civil(fromDays: days)
        guard (1...9999).contains(y) else { return nil }
        let seconds = rest / 1_000_000, micros = rest % 1_000_000
        return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T" + pad(seconds / 3600, 2) + ":"
            + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2) + "." + pad(micros, 6) + "Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z` (a `t` or space may stand for `T`, `z` for `Z`).
    static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func num(_ range: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in range {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) else { return nil }
                v = v * 10 + Int64(b[i] - UInt8(ascii: "0"))
            }
            return v
        }
        guard let y = num(0..<4), b[4] == UInt8(ascii: "-"), let m = num(5..<7), b[7] == UInt8(ascii: "-"),
              let d = num(8..<10), [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(b[10]),
              let hh = num(11..<13), b[13] == UInt8(ascii: ":"), let mm = num(14..<16), b[16] == UInt8(ascii: ":"),
              let ss = num(17..<19) else { return nil }
        var i = 19
        var micros: Int64 = 0
        if b[i] == UInt8(ascii: ".") {
            let start = i + 1
            i = start
            while i < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i]) { i += 1 }
            let count = i - start
            guard (1...6).contains(count), let fraction = num(start..<i) else { return nil }
            micros = fraction
            for _ in count..<6 { micros *= 10 }
        }
        guard i == b.count - 1, b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") else { return nil }
        guard y >= 1, (1...12).contains(m), (1...daysInMonth(y, m)).contains(d), hh < 24, mm < 60, ss < 60 else {
            return nil
        }
        let days = days(fromCivil: y, m, d)
        return days * microsecondsPerDay + ((hh * 60 + mm) * 60 + ss) * 1_000_000 + micros
    }

    private static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    private static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
