/// Waits until `condition` holds, checking it up to `timeout / 10 ms` times, 10 ms apart; returns whether it did.
/// It counts checks rather than wall-clock time: the suite shares two threads with tests that block them for
/// seconds, and a wall-clock bound could run out while this task waits to be resumed. The bound only ends a failing
/// test.
func eventually(timeout: Duration = .seconds(5), _ condition: () async -> Bool) async -> Bool {
    let checks = max(1, Int(timeout / .milliseconds(10)))
    for _ in 0..<checks {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
