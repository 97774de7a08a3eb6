// The B-tree's point lookup where it waits for memory: a tree of many keys (1M by default, about 100 MB of nodes,
// well past the processor's caches) and 3M lookups of present keys in a fixed-seed random order, timed by the wall
// clock. The package-benchmark workloads `btree-*` use 100k keys, which mostly fit the caches here, and callgrind
// (`micro-instructions`) counts instructions, not waits; this is the figure a change to the nodes' memory layout
// is judged by. Build it at each of the two commits to compare (for a commit older than this tool, copy this file
// and its target in Package.swift into a worktree of that commit) and alternate the runs (one run on this VM moves
// by 10-20%):
//
//   swift run -c release --package-path Benchmarks/Micro btree-lookup-timing [keys] [lookups]
//
// Prints the mean time per lookup and a checksum of the values found (equal across builds).
@_spi(Fuzzing) import LucidEngine
import Foundation

let arguments = CommandLine.arguments.dropFirst().map { Int($0) }
guard arguments.allSatisfy({ $0 != nil && $0! > 0 }) else {
    FileHandle.standardError.write(Data("usage: btree-lookup-timing [keys] [lookups]\n".utf8))
    exit(2)
}
let keys = arguments.first.flatMap { $0 } ?? 1_000_000
let lookups = arguments.dropFirst().first.flatMap { $0 } ?? 3_000_000

/// Key `i`: 8 scattered bytes then `i` (16 bytes, the engine benchmark's key length), so inserting in `i` order
/// fills the tree at random places, as the engine's random loads do.
func key(_ i: Int) -> [UInt8] {
    let n = UInt64(truncatingIfNeeded: i)
    return withUnsafeBytes(of: ((n &* 0x9E37_79B9_7F4A_7C15).bigEndian, n.bigEndian)) { Array($0) }
}

/// A fixed-seed generator (a 64-bit LCG's high bits), so every build looks up the same keys in the same order.
struct Draws {
    var state: UInt64 = 42
    mutating func next(below bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 11) % UInt64(bound))
    }
}

var tree = FuzzingSupport.PrimaryTree()
for i in 0..<keys { _ = tree.insert(key(i), sequence: UInt64(i)) }
var draws = Draws()
// Keys are built before the clock starts, in one buffer read in order (the reads the hardware prefetches).
var probes = [UInt8]()
probes.reserveCapacity(16 * lookups)
for _ in 0..<lookups { probes.append(contentsOf: key(draws.next(below: keys))) }

var checksum: UInt64 = 0
var probe = [UInt8](repeating: 0, count: 16)
let start = DispatchTime.now().uptimeNanoseconds
for l in 0..<lookups {
    probe.withUnsafeMutableBytes { target in
        probes.withUnsafeBytes { target.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[(16 * l)..<(16 * l + 16)])) }
    }
    checksum &+= tree.sequence(forKey: probe) ?? .max
}
let nanoseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(lookups)
print(String(format: "%.1f ns per lookup, %ld keys, %ld lookups, checksum %llu", nanoseconds, keys, lookups, checksum))
