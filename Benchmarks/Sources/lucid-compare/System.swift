import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Monotonic seconds.
@inline(__always)
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Seconds `body` took.
func timed(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return now() - start
}

/// Resident set size of this process, from /proc/self/statm (field 2, in pages).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func makeDirectory(_ path: String) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

func removeTree(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Bytes allocated on disk by the files under `path` (as `du` counts them: st_blocks * 512).
func diskUsage(_ path: String) -> Int {
    var total = 0
    var st = stat()
    guard lstat(path, &st) == 0 else { return 0 }
    total += Int(st.st_blocks) * 512
    if (st.st_mode & S_IFMT) == S_IFDIR, let entries = try? FileManager.default.contentsOfDirectory(atPath: path) {
        for entry in entries { total += diskUsage(path + "/" + entry) }
    }
    return total
}

/// One 4 KiB append then fdatasync, `count` times, on a fresh file in `directory`: the durable-commit ceiling.
func fdatasyncRate(directory: String, count: Int) throws -> Double {
    let path = directory + "/fdatasync-probe"
    let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_APPEND, 0o644)
    guard fd >= 0 else { throw BenchError.failed("open \(path): errno \(errno)") }
    defer {
        Glibc.close(fd)
        unlink(path)
    }
    let block = [UInt8](repeating: 0x5A, count: 4096)
    let seconds = try timed {
        for _ in 0..<count {
            let written = block.withUnsafeBytes { write(fd, $0.baseAddress, 4096) }
            guard written == 4096 else { throw BenchError.failed("write: errno \(errno)") }
            guard fdatasync(fd) == 0 else { throw BenchError.failed("fdatasync: errno \(errno)") }
        }
    }
    return Double(count) / seconds
}

/// One line about the machine: CPU, cores, memory, kernel, and the file system under `directory`.
func machineDescription(directory: String) -> String {
    var cpu = "unknown CPU"
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
       let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
       let colon = line.firstIndex(of: ":") {
        cpu = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
    let memory = Double(sysconf(Int32(_SC_PHYS_PAGES))) * Double(sysconf(Int32(_SC_PAGESIZE))) / Double(1 << 30)
    var name = utsname()
    uname(&name)
    let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    return "\(cpu), \(cores) cores, \(Int(memory.rounded())) GiB, Linux \(kernel), \(fileSystemName(directory)) at \(directory)"
}

/// The file system type of `path`, from /proc/self/mounts (longest mount point that prefixes the path).
func fileSystemName(_ path: String) -> String {
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return "?" }
    let resolved = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? path
    var best = ("", "?")
    for line in mounts.split(separator: "\n") {
        let parts = line.split(separator: " ")
        guard parts.count > 2 else { continue }
        let point = String(parts[1])
        let matches = resolved == point || resolved.hasPrefix(point == "/" ? "/" : point + "/")
        if matches && point.count > best.0.count { best = (point, String(parts[2])) }
    }
    return best.1
}

/// This executable's path, for re-running itself as a child.
func executablePath() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
}

