"""Whether this process stalled: its event loop did not run for a while (SIGSTOP, a paused VM, a swap storm),
long enough for another replica to take its work over. Asked before posting what another replica may have
posted meanwhile (`lost_answers`)."""

from __future__ import annotations

import asyncio
import time


class StallWatch:
    """Notices that this process stalled: its event loop did not run for longer than `gap` seconds (SIGSTOP,
    a paused VM, a swap storm), long enough for another replica to take its work over."""

    def __init__(self, gap: float, *, every: float = 0.5):
        self.gap = gap
        self.every = every
        self._tick = time.monotonic()
        self._stalled_at: float | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Watch from now on (on the running loop); again after a stop."""
        if self._task is None or self._task.done():
            self._tick = time.monotonic()
            self._task = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            now = time.monotonic()
            if now - self._tick > self.gap:
                self._stalled_at = now
            self._tick = now

    def stalled_since(self, since: float) -> bool:
        """Whether the process stalled at or after `since` (a `time.monotonic()`), or is only now waking."""
        self.start()
        if time.monotonic() - self._tick > self.gap:
            return True
        return self._stalled_at is not None and self._stalled_at >= since
