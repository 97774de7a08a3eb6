/// SplitMix64: a tiny, seedable, deterministic generator for tests, fuzzers and the crash child, so that every
/// randomized run can be replayed from the seed it prints.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The current state; the next output is a function of it alone.
    public private(set) var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits. O(1).
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (modulo reduction, slightly biased; fine for tests). `n` must be positive.
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    /// A uniform integer in `range`.
    public mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    /// A uniform integer in `range`.
    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    /// A uniformly chosen element of a non-empty array.
    public mutating func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }

    /// `count` random (incompressible) bytes: successive outputs, little-endian.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var words = [UInt64](repeating: 0, count: (count + 7) / 8)
        for i in words.indices { words[i] = next().littleEndian }
        return words.withUnsafeBytes { Array($0.prefix(count)) }
    }
}

/// The bytes of a crash-test value, a pure function of `(length, seed)`: random (incompressible), a repeated
/// 8-byte pattern, or text over a small alphabet, chosen by `seed % 3`. Shared by the kill -9 child process and
/// the tests that rebuild what it acknowledged.
public func crashChildValue(length: Int, seed: UInt64) -> [UInt8] {
    var rng = SplitMix64(seed: seed)
    var bytes = [UInt8](repeating: 0, count: length)
    switch seed % 3 {
    case 0:
        var i = 0
        while i < length {
            var word = rng.next()
            for _ in 0..<8 where i < length {
                bytes[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
    case 1:
        let pattern = rng.next()
        for i in 0..<length { bytes[i] = UInt8(truncatingIfNeeded: pattern >> (UInt64(i % 8) * 8)) }
    default:
        let alphabet = Array("abcdefgh ijk,\n".utf8)
        for i in 0..<length { bytes[i] = alphabet[Int(rng.next() % UInt64(alphabet.count))] }
    }
    return bytes
}
