// Decoding typed values from fuzzer bytes.
//
// Compiled twice, as every file of the fuzz checks: in the root test target, where `FailCasesReplayTests` replays the
// saved inputs through the checks, and in the Fuzz package's `FuzzCommon` library (through a symlink in
// `Fuzz/Sources/FuzzCommon/`), where `LUCID_FUZZ_HARNESS` is defined and each fuzz target runs one check per input.
// So a fuzzer finding and its replay run exactly the same code. Only `@_spi(Fuzzing)` and public API are used.

import LucidEngine
@_spi(Fuzzing) import LucidEngine
import LucidEngineTestSupport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads typed values from the front of fuzzer bytes (in the spirit of LLVM's `FuzzedDataProvider`). Past the end
/// every read returns zeros/empty, so any input decodes to something and short inputs stay meaningful.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var position = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var isAtEnd: Bool { position >= bytes.count }

    public mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    public mutating func u16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    public mutating func u32() -> UInt32 { UInt32(u16()) | UInt32(u16()) << 16 }

    /// An integer in `range`, from as few bytes as the range needs.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        let span = UInt64(range.upperBound - range.lowerBound)
        if span == 0 { return range.lowerBound }
        var value: UInt64 = 0
        var covered: UInt64 = 0
        while covered < span {
            value = value << 8 | UInt64(byte())
            covered = covered << 8 | 0xFF
        }
        return range.lowerBound + Int(value % (span + 1))
    }

    /// One of `choices`.
    public mutating func pick<T>(_ choices: [T]) -> T { choices[int(in: 0...(choices.count - 1))] }

    /// Up to `count` bytes (fewer at the end).
    public mutating func bytes(upTo count: Int) -> [UInt8] {
        let n = min(count, bytes.count - min(position, bytes.count))
        defer { position += n }
        return Array(bytes[position..<(position + n)])
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] { bytes(upTo: bytes.count) }
}
