import Synchronization

/// A flag that can be set once, from any thread.
final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)
    init() {}
    var isSet: Bool { value.load(ordering: .acquiring) }
    /// Sets the flag; true only for the caller that changed it.
    func setOnce() -> Bool {
        value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }
}
