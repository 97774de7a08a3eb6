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
import MicroWorkloads

let arguments = CommandLine.arguments.dropFirst().map { Int($0) }
guard arguments.allSatisfy({ $0 != nil && $0! > 0 }) else {
    FileHandle.standardError.write(Data("usage: btree-lookup-timing [keys] [lookups]\n".utf8))
    exit(2)
}
let keys = arguments.first.flatMap { $0 } ?? 1_000_000
let lookups = arguments.dropFirst().first.flatMap { $0 } ?? 3_000_000

// The keys of the `btree-*` micro workloads (a scattered half, then the number), inserted in number order, so
// that the tree fills at random places as the engine's random loads fill it.
var key = [UInt8](repeating: 0, count: 16)
var tree = FuzzingSupport.PrimaryTree()
for i in 0..<keys {
    setRandomKey(i, in: &key)
    _ = tree.insert(key, sequence: UInt64(i))
}
var draws = Draws()
// Keys are built before the clock starts, in one buffer read in order (the reads the hardware prefetches).
var probes = [UInt8]()
probes.reserveCapacity(16 * lookups)
for _ in 0..<lookups {
    setRandomKey(draws.next(keys), in: &key)
    probes.append(contentsOf: key)
}

var checksum: UInt64 = 0
let start = DispatchTime.now().uptimeNanoseconds
for l in 0..<lookups {
    key.withUnsafeMutableBytes { target in
        probes.withUnsafeBytes { target.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[(16 * l)..<(16 * l + 16)])) }
    }
    checksum &+= tree.sequence(forKey: key) ?? .max
}
let nanoseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(lookups)
print(String(format: "%.1f ns per lookup, %ld keys, %ld lookups, checksum %llu", nanoseconds, keys, lookups, checksum))
