import Foundation

/// Finds executables built next to the running test binary (test targets depend on them, so `swift build` and
/// `swift test` build them first): the kill -9 children and `lucidctl`.
public enum BuiltProducts {
    /// Directories that may hold the built products: the one holding the running test binary (on Linux the
    /// `.xctest` file is itself the executable; on Darwin it is a bundle inside the products directory).
    public static func directories() -> [String] {
        var candidates: [URL] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        var seen = Set<String>()
        return candidates.map(\.standardizedFileURL.path).filter { seen.insert($0).inserted }
    }

    /// The executable `name` in one of ``directories()``; the environment variable `override`, when set, names
    /// the path instead.
    public static func executable(named name: String, override: String? = nil) -> URL? {
        if let override, let path = ProcessInfo.processInfo.environment[override] {
            return FileManager.default.isExecutableFile(atPath: path) ? URL(fileURLWithPath: path) : nil
        }
        for directory in directories() {
            let path = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
        }
        return nil
    }
}
