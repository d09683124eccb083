import RaveRuntime

extension ShutdownLatch {
    /// Sleeps for `duration` or until the latch opens, whichever comes first.
    ///
    /// Periodic background work thus stops promptly at shutdown. Polls four times a second because a waiter
    /// on the latch could not be cancelled when the sleep ends first.
    func sleep(for duration: Duration) async {
        let end = ContinuousClock.now + duration
        while !isOpen && ContinuousClock.now < end {
            try? await Task.sleep(for: min(.milliseconds(250), end - ContinuousClock.now))
        }
    }
}
