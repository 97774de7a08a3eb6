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

    // The same tables as UTF-8, for building values without String work.
    static let adjectiveBytes = adjectives.map { Array($0.utf8) }
    static let nounBytes = nouns.map { Array($0.utf8) }
    static let placeBytes = places.map { Array($0.utf8) }
    static let firstNameBytes = firstNames.map { Array($0.utf8) }
    static let lastNameBytes = lastNames.map { Array($0.utf8) }
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

    static func appendValue(_ f: Fields, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"id":"#.utf8)
        appendInt(f.id, to: &out)
        out.append(contentsOf: #","title":"The "#.utf8)
        out.append(contentsOf: Words.adjectiveBytes[f.titleAdjective])
        out.append(0x20)
        out.append(contentsOf: Words.nounBytes[f.titleNoun])
        out.append(contentsOf: " of ".utf8)
        out.append(contentsOf: Words.placeBytes[f.titlePlace])
        out.append(contentsOf: #"","author":""#.utf8)
        out.append(contentsOf: Words.firstNameBytes[f.authorFirst])
        out.append(0x20)
        out.append(contentsOf: Words.lastNameBytes[f.authorLast])
        out.append(contentsOf: #"","year":"#.utf8)
        appendInt(f.year, to: &out)
        out.append(contentsOf: #","pages":"#.utf8)
        appendInt(f.pages, to: &out)
        out.append(contentsOf: #","rating":"#.utf8)
        appendInt(f.rating, to: &out)
        out.append(contentsOf: #","published":"#.utf8)
        appendInt(f.published, to: &out)
        out.append(contentsOf: #","genre":""#.utf8)
        out.append(contentsOf: Words.genreBytes[f.genre])
        out.append(contentsOf: #"","lang":"en","stock":"#.utf8)
        appendInt(f.stock, to: &out)
        out.append(contentsOf: #","format":"paperback","available":true}"#.utf8)
    }

    @inline(__always)
    static func appendInt(_ value: Int, to out: inout [UInt8]) {
        var v = value
        if v < 0 { out.append(UInt8(ascii: "-")); v = -v }
        if v == 0 { out.append(UInt8(ascii: "0")); return }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while v > 0 {
                buffer[count] = UInt8(truncatingIfNeeded: 48 + v % 10)
                v /= 10
                count += 1
            }
            for j in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[j]) }
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
