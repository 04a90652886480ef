"""A stderr stand-in for tests of runs sharing a cache: it tells when a run says it waits for another."""
import io
import threading

# seconds a test's thread waits for a hand-over that takes well under one: a guard that turns a broken
# hand-over into a failure instead of a suite that never ends, not a speed threshold
HANG = 600


class WatchedStderr(io.StringIO):
    """stderr, setting `event` when a write holds `phrase` (what a run prints while it waits)."""

    def __init__(self, event: threading.Event, phrase: str) -> None:
        super().__init__()
        self.event = event
        self.phrase = phrase

    def write(self, text: str) -> int:
        if self.phrase in text:
            self.event.set()
        return super().write(text)
