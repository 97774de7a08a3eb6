// Deterministic test records, generated fast: bytes are built directly (no String(format:), no Foundation
// formatting), so generation costs a small fraction of any engine's time.

/// SplitMix64: a fast, well-mixed 64-bit hash of a counter.
@inline(__always)
func mix64(_ x: UInt64) -> UInt64 {
    var z = x &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// A small deterministic random generator (xorshift64*), for picking keys to read.
struct FastRandom {
    var state: UInt64
    init(seed: UInt64) { state = mix64(seed) | 1 }
    @inline(__always) mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
    @inline(__always) mutating func next(below n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// How record number `i` maps to its 16-byte key.
enum KeyOrder: String {
    /// Keys ascend with the record number: big-endian `i`, then a hash of `i`.
    case sequential
    /// Keys in hash order: a hash of `i`, then big-endian `i` (so keys stay unique).
    case random
}

/// The fields of one record. Text fields are indices into the word tables below.
struct Fields {
    var id: Int
    var titleAdjective: Int
    var titleNoun: Int
    var titlePlace: Int
    var authorFirst: Int
    var authorLast: Int
    var year: Int
    var pages: Int
    /// 0 ... 1000 (tenths of a point on a 0-100 scale); secondary index "rating".
    var rating: Int
    /// Milliseconds since 1970.
    var published: Int
    /// Index into `genres`; secondary index "genre".
    var genre: Int
    var stock: Int

    init(_ i: Int) {
        let h = mix64(UInt64(i) ^ 0x4C55_4349_4421)
        let g = mix64(h)
        id = i
        titleAdjective = Int(h & 31)
        titleNoun = Int((h >> 5) & 31)
        titlePlace = Int((h >> 10) & 31)
        authorFirst = Int((h >> 15) & 31)
        authorLast = Int((h >> 20) & 31)
        year = 1900 + Int((h >> 25) % 125)
        pages = 48 + Int((h >> 32) % 1200)
        rating = Int(g % 1001)
        published = 1_500_000_000_000 + Int((g >> 10) % 300_000_000_000)
        genre = Int((g >> 50) % UInt64(Words.genres.count))
        stock = Int((h >> 44) % 500)
    }

    var title: String {
        "The \(Words.adjectives[titleAdjective]) \(Words.nouns[titleNoun]) of \(Words.places[titlePlace])"
    }
    var author: String { "\(Words.firstNames[authorFirst]) \(Words.lastNames[authorLast])" }
    var genreName: String { Words.genres[genre] }
}

enum Words {
    static let adjectives = [
        "Silent", "Crimson", "Hidden", "Last", "Broken", "Golden", "Forgotten", "Endless", "Distant", "Burning",
        "Frozen", "Secret", "Wandering", "Hollow", "Shining", "Lost", "Quiet", "Restless", "Ancient", "Pale",
        "Bitter", "Gentle", "Savage", "Velvet", "Iron", "Glass", "Midnight", "Northern", "Scarlet", "Winter",
        "Wild", "Little",
    ]
    static let nouns = [
        "Harbor", "Garden", "Empire", "Mirror", "River", "Orchard", "Lantern", "Kingdom", "Storm", "Library",
        "Voyage", "Compass", "Shadow", "Citadel", "Feather", "Engine", "Meadow", "Archive", "Tide", "Crown",
        "Witness", "Signal", "Island", "Bridge", "Forest", "Letter", "Tower", "Season", "Mountain", "Clock",
        "Song", "Door",
    ]
    static let places = [
        "Glass", "Ashes", "Dawn", "the North", "Salt", "the Deep", "Kings", "Winter", "the Moon", "Stone",
        "Rain", "the Valley", "Bones", "Summer", "the Sea", "Thorns", "Smoke", "Silver", "the Lost", "Light",
        "Fire", "Embers", "the Coast", "Dust", "Iron", "the Old World", "Mist", "Wolves", "Paper", "Time",
        "Echoes", "Gold",
    ]
    static let firstNames = [
        "Mara", "Jonas", "Aiko", "Elena", "Tomas", "Priya", "Oren", "Lucia", "Felix", "Nadia",
        "Kofi", "Ingrid", "Rafael", "Yara", "Mateo", "Sofia", "Hugo", "Amara", "Levi", "Chiara",
        "Idris", "Maren", "Dmitri", "Leila", "Anton", "Zoe", "Emil", "Noor", "Pablo", "Astrid",
        "Ravi", "Clara",
    ]
    static let lastNames = [
        "Okafor", "Lindqvist", "Tanaka", "Moreau", "Novak", "Iyer", "Halevi", "Ferreira", "Brandt", "Kovacs",
        "Mensah", "Solberg", "Alvarez", "Haddad", "Rossi", "Nakamura", "Dubois", "Adeyemi", "Weiss", "Marino",
        "Rahman", "Eriksen", "Volkov", "Karimi", "Berger", "Laurent", "Schmidt", "Aziz", "Ortega", "Nilsson",
        "Patel", "Fontaine",
    ]
    static let genres = [
        "mystery", "fantasy", "science-fiction", "romance", "history", "biography", "poetry", "thriller",
        "horror", "travel", "cooking", "philosophy", "economics", "children", "drama", "comics",
        "science", "religion", "art", "music", "sports", "health", "self-help", "essays",
    ]

    /// Every word of the tables above as UTF-8, one after another: word `n` is `table[spans[n].start...]`, its
    /// `spans[n].length` bytes; the adjectives come first, then the nouns, places, first names, last names and
    /// genres (``adjectiveBase`` ...). Values are built from it without String work or an array per word.
    static let (table, spans): ([UInt8], [(start: Int, length: Int)]) = {
        var table: [UInt8] = []
        var spans: [(start: Int, length: Int)] = []
        for word in adjectives + nouns + places + firstNames + lastNames + genres {
            spans.append((table.count, word.utf8.count))
            table.append(contentsOf: word.utf8)
        }
        return (table, spans)
    }()
    static let adjectiveBase = 0
    static let nounBase = adjectiveBase + adjectives.count
    static let placeBase = nounBase + nouns.count
    static let firstNameBase = placeBase + places.count
    static let lastNameBase = firstNameBase + firstNames.count
    static let genreBase = lastNameBase + lastNames.count

    /// The genres as UTF-8 (SQLite's genre column and index terms).
    static let genreBytes = genres.map { Array($0.utf8) }
}

enum Records {
    /// The 16-byte key of record `i`.
    @inline(__always)
    static func key(_ i: Int, _ order: KeyOrder) -> [UInt8] {
        var key = [UInt8](repeating: 0, count: 16)
        writeKey(i, order, into: &key)
        return key
    }

    @inline(__always)
    static func writeKey(_ i: Int, _ order: KeyOrder, into key: inout [UInt8]) {
        let n = UInt64(i)
        let h = mix64(n ^ 0x6B65_7973)
        let (first, second) = order == .sequential ? (n, h) : (h, n)
        key.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: first.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: second.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
    }

    /// The JSON-like value of a record (about 200 bytes).
    static func value(_ f: Fields) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(240)
        appendValue(f, to: &out)
        return out
    }

    /// Appends the JSON-like value of record `f` to `out`: built in a stack buffer through one pointer (the fixed
    /// text from static strings, the words from one flat table, integers written digit by digit in place), then
    /// appended in one copy, so that building a record costs a small fraction of what any engine spends storing it.
    static func appendValue(_ f: Fields, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(byteCount: maxValueLength, alignment: 1) { buffer in
            Words.table.withUnsafeBytes { words in
                var w = ValueWriter(base: buffer.baseAddress.unsafelyUnwrapped, words: words)
                w.text(#"{"id":"#)
                w.int(f.id)
                w.text(#","title":"The "#)
                w.word(Words.adjectiveBase + f.titleAdjective)
                w.byte(0x20)
                w.word(Words.nounBase + f.titleNoun)
                w.text(" of ")
                w.word(Words.placeBase + f.titlePlace)
                w.text(#"","author":""#)
                w.word(Words.firstNameBase + f.authorFirst)
                w.byte(0x20)
                w.word(Words.lastNameBase + f.authorLast)
                w.text(#"","year":"#)
                w.int(f.year)
                w.text(#","pages":"#)
                w.int(f.pages)
                w.text(#","rating":"#)
                w.int(f.rating)
                w.text(#","published":"#)
                w.int(f.published)
                w.text(#","genre":""#)
                w.word(Words.genreBase + f.genre)
                w.text(#"","lang":"en","stock":"#)
                w.int(f.stock)
                w.text(#","format":"paperback","available":true}"#)
                out.append(contentsOf: UnsafeRawBufferPointer(start: buffer.baseAddress, count: w.count))
            }
        }
    }

    /// More than the longest value: the fixed text, the longest words and six integers of at most 20 characters
    /// come to under 400 bytes.
    private static let maxValueLength = 512

    /// Writes a value's bytes through a pointer, into room the caller provides (``maxValueLength``).
    private struct ValueWriter {
        let base: UnsafeMutableRawPointer
        /// ``Words/table``'s bytes.
        let words: UnsafeRawBufferPointer
        var count = 0

        @inline(__always) mutating func byte(_ b: UInt8) {
            base.storeBytes(of: b, toByteOffset: count, as: UInt8.self)
            count += 1
        }

        @inline(__always) mutating func text(_ s: StaticString) {
            (base + count).copyMemory(from: s.utf8Start, byteCount: s.utf8CodeUnitCount)
            count += s.utf8CodeUnitCount
        }

        /// Word `n` of ``Words/table``.
        @inline(__always) mutating func word(_ n: Int) {
            let span = Words.spans[n]
            (base + count).copyMemory(from: words.baseAddress.unsafelyUnwrapped + span.start, byteCount: span.length)
            count += span.length
        }

        /// `value` in decimal.
        @inline(__always) mutating func int(_ value: Int) {
            if value < 0 { byte(UInt8(ascii: "-")) }
            var v = value.magnitude
            var digits = 1
            var rest = v / 10
            while rest > 0 {
                digits += 1
                rest /= 10
            }
            var at = count + digits
            repeat {
                at -= 1
                base.storeBytes(of: UInt8(truncatingIfNeeded: 48 + v % 10), toByteOffset: at, as: UInt8.self)
                v /= 10
            } while v > 0
            count += digits
        }
    }

    /// The secondary-index terms of a record, encoded byte-comparably.
    static func genreTerm(_ genre: Int) -> [UInt8] { Words.genreBytes[genre] }
    static func ratingTerm(_ rating: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: rating >> 8), UInt8(truncatingIfNeeded: rating)]
    }

    /// Average value length over a sample, for the settings line.
    static func averageValueLength(sample: Int = 10_000) -> Int {
        var total = 0
        var buffer: [UInt8] = []
        for i in 0..<sample {
            buffer.removeAll(keepingCapacity: true)
            appendValue(Fields(i), to: &buffer)
            total += buffer.count
        }
        return total / sample
    }
}
