"""A clock a test moves forward (`memory.Storage(url, clock=...)`): the system's time plus how far the
test has advanced it, so an expiry or a stale lease is reached at once instead of by sleeping, and the
time still runs as it does for everything else the test does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class MovableClock:
    """`now()` is the system's UTC time plus every `advance()` so far; it never goes back."""

    def __init__(self, ahead: float = 0.0):
        self._ahead = timedelta(seconds=ahead)

    def now(self) -> datetime:
        return datetime.now(UTC) + self._ahead

    def advance(self, seconds: float) -> None:
        """Move the clock `seconds` forward."""
        assert seconds >= 0, "the clock never goes back"
        self._ahead += timedelta(seconds=seconds)
