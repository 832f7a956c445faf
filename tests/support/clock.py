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


class StoppedClock:
    """`now()` stands still at a fixed moment and moves only by `advance()`: for numbers that must come out
    exactly (a time to decision of 2 s, not 2.013 s) however long the test's own steps take."""

    def __init__(self, at: datetime | None = None):
        self._now = at or datetime.now(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock `seconds` forward."""
        assert seconds >= 0, "the clock never goes back"
        self._now += timedelta(seconds=seconds)
