"""What time it is, for every decision that compares a stored time with now: whether an approval has
waited past its expiry, whether a run's lease is stale, whether a message's post is due again.

`Storage` carries one clock (`Storage(url, clock=...)`, the system's UTC time by default), and the
runtime and the adapters read "now" from `storage.clock`; a test passes a clock it moves forward
instead of sleeping until a second has passed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """A source of the current time."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The system's clock: `datetime.now(UTC)`."""

    def now(self) -> datetime:
        return datetime.now(UTC)


SYSTEM_CLOCK = SystemClock()
