"""Work slots: how many turns of one replica work on the CPU at once, while waiting turns hold nothing.

A turn alternates between work (the database, building requests, relaying chunks to Slack) and waits
on the network (the model's answer, a tool). Only the work needs bounding: a turn that waits costs no
CPU. So a turn holds one of a replica's `WorkSlots` while it works and gives it up for as long as it
waits inside `waiting()` (the model call and a tool's execution are wrapped in it); the slot is taken
back, in turn with the others, when the wait is over.

The slot a turn holds is found through a context variable, so the tasks the turn starts (its run's
task) give up the same slot when they wait. This module imports nothing of the project: the runtime
(which waits) and the adapters (which hold slots) both use it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar


class _Held:
    """One turn's hold on a slot: at most one permit, given up while any of its tasks waits."""

    def __init__(self, semaphore: asyncio.Semaphore):
        self.semaphore = semaphore
        self.permits = 0
        self.waits = 0
        self.closed = False

    async def take(self) -> None:
        await self.semaphore.acquire()
        if self.permits or self.waits or self.closed:  # taken back by another task, or no longer wanted
            self.semaphore.release()
        else:
            self.permits = 1

    def give(self) -> None:
        if self.permits:
            self.permits = 0
            self.semaphore.release()


_HELD: ContextVar[_Held | None] = ContextVar("work_slot", default=None)


class WorkSlots:
    """At most `size` turns working at once (see the module docstring)."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError("WorkSlots needs at least one slot")
        self.size = size
        self._semaphore = asyncio.Semaphore(size)

    @property
    def working(self) -> int:
        """Slots held now (by turns that are not waiting)."""
        return self.size - self._semaphore._value  # noqa: SLF001 - asyncio exposes no public count

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the block, except while it (or a task it starts) is `waiting()`."""
        held = _Held(self._semaphore)
        await held.take()
        token = _HELD.set(held)
        try:
            yield
        finally:
            _HELD.reset(token)
            held.closed = True
            held.give()


@asynccontextmanager
async def waiting() -> AsyncIterator[None]:
    """Around a wait on the network: the current turn's work slot is given up meanwhile and taken back
    after (a no-op outside a slot). Cancelled while taking it back, the turn holds nothing."""
    held = _HELD.get()
    if held is None or held.closed:
        yield
        return
    held.waits += 1
    held.give()
    try:
        yield
    finally:
        held.waits -= 1
        if not held.waits and not held.closed:
            await held.take()
