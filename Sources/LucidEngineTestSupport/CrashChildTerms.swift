import LucidEngine

/// The index terms the kill -9 child stores with a value, a pure function of the value bytes
/// (so the test rebuilds them from the values it expects): none for one value in five (and for the empty value),
/// otherwise one `size` term (`.int(count / 256)`) and one to three `tag` terms (`.string("t0")` … `"t6"`,
/// repeats possible). Overwriting a key therefore changes, adds or drops its terms.
public func crashChildTerms(for value: [UInt8]) -> [IndexTerm] {
    guard !value.isEmpty, value.count % 5 != 0 else { return [] }
    // FNV-1a over the first 32 bytes and the length.
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in value.prefix(32) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    hash = (hash ^ UInt64(value.count)) &* 0x100_0000_01B3
    var terms = [IndexTerm(index: "size", value: .int(Int64(value.count / 256)))]
    for i in 0...(hash % 3) {
        terms.append(IndexTerm(index: "tag", value: .string("t\((hash >> (8 + 4 * i)) % 7)")))
    }
    return terms
}
