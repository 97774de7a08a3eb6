// FuzzManifest's check: manifest slots and segment headers (shared with the Fuzz package: see FuzzInput.swift).

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

/// Input: one mode byte (bit 0: recompute the CRC first; bit 1: the bytes are a segment header, else a manifest
/// slot), then the bytes.
///
/// Checks: decoding never traps or throws anything but the documented errors; a valid manifest's canonical
/// re-encoding is exactly the bytes it was read from when it has the current version (so no field is silently
/// dropped or normalised), and always decodes again to itself; a valid segment header re-encodes to the same 52
/// bytes of fields.
enum ManifestChecks {
    static func check(_ input: [UInt8]) throws {
        guard let mode = input.first else { return }
        var bytes = Array(input.dropFirst())
        if mode & 2 != 0 {
            if mode & 1 != 0 { bytes = FuzzingSupport.withValidSegmentHeaderChecksum(bytes) }
            guard let reencoded = FuzzingSupport.decodeSegmentHeader(bytes) else { return }
            try fuzzRequire(reencoded.count == FuzzingSupport.segmentHeaderLength,
                            "segment header re-encodes to \(reencoded.count) bytes")
            try fuzzRequire(reencoded[0..<52] == bytes[0..<52], "segment header fields change when re-encoded")
            try fuzzRequire(FuzzingSupport.decodeSegmentHeader(reencoded) == reencoded,
                            "re-encoded segment header does not decode")
        } else {
            if mode & 1 != 0 { bytes = FuzzingSupport.withValidManifestChecksum(bytes) }
            guard case .valid(let reencoded, let segments, let obsolete) = FuzzingSupport.decodeManifest(bytes)
            else { return }
            // A slot of the current version re-encodes to exactly its bytes; an older one (version 1) is
            // rewritten in the current layout, which must then be stable.
            if bytes[8..<12].elementsEqual(reencoded[8..<12]) {
                try fuzzRequire(bytes.starts(with: reencoded),
                                "a valid manifest does not re-encode to the bytes it came from")
            }
            try fuzzRequire(reencoded.count == 24 + 12 + 34 * segments + 4 + 8 * obsolete + 4,
                            "manifest of \(segments) segments has \(reencoded.count) bytes")
            try fuzzRequire(FuzzingSupport.decodeManifest(reencoded)
                                == .valid(reencoded: reencoded, segments: segments, obsolete: obsolete),
                        "re-encoded manifest does not decode to itself")
        }
    }
}
