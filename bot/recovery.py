"""The bot's recovery loop: every replica takes over, at start and then periodically, the runs a stopped
process left behind (`Agent.recover_stale_runs`; several replicas recovering at once recover each run once).

On SQLite a pass runs every `every` seconds. On PostgreSQL the loop sleeps until the oldest lease of a run
at work could go stale, or, with no run at work, until another replica starts or moves one
(`memory._notices`); a run this replica started or moved itself has a lease at least as fresh as the notice,
so that notice wakes the loop only `stale_after` seconds after it (and this process's own runs at work are
never taken over while it drives them, `Agent.recover_stale_runs`)."""

from __future__ import annotations

import asyncio
import logging
import time

from bot.agent import Agent

log = logging.getLogger(__name__)


class RecoveryLoop:
    """Recover stale runs now and then every `every` seconds, in a task, until `stop()`.

    `stop()` lets a pass under way finish instead of cancelling it mid-query: a query cut off while the
    process shuts down would leave its database connection to be reset after the event loop is gone.
    """

    def __init__(self, agent: Agent, *, every: float, stale_after: float):
        self.agent = agent
        self.every = every
        self.stale_after = stale_after
        agent.beat_within(stale_after)
        self._stopping = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="recovery")

    async def _run(self) -> None:
        storage = self.agent.storage
        while not self._stopping.is_set():
            began = time.monotonic()
            due: float | None = self.every
            try:
                recovered = await self.agent.recover_stale_runs(stale_after=self.stale_after)
                if recovered:
                    log.info("recovered %d run(s) left by a stopped process: %s", len(recovered), ", ".join(recovered))
                if storage.notices.possible:
                    oldest = await storage.runs.oldest_lease_at_work(self.agent.id)
                    due = None if oldest is None else (oldest - storage.clock.now()).total_seconds() + self.stale_after
            except Exception:  # noqa: BLE001 - the database may be away for a moment; the next pass tries again
                log.warning("the recovery pass failed; it runs again in %gs", self.every, exc_info=True)
            pause = asyncio.ensure_future(
                storage.notices.pause(
                    self.every,
                    since=began,
                    due=due,
                    tables=("runs", "tool_calls"),
                    own_after={"runs": self.stale_after, "tool_calls": self.stale_after},
                )
            )
            stopping = asyncio.ensure_future(self._stopping.wait())
            await asyncio.wait({pause, stopping}, return_when=asyncio.FIRST_COMPLETED)
            for waiter in (pause, stopping):
                waiter.cancel()
            await asyncio.gather(pause, stopping, return_exceptions=True)

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop after the pass under way, if any (cancelled only if it takes longer than `timeout`)."""
        self._stopping.set()
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self._task)
        except TimeoutError:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
