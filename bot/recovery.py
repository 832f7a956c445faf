"""The bot's recovery loop: every replica takes over, at start and then periodically, the runs a stopped
process left behind (`Agent.recover_stale_runs`; several replicas recovering at once recover each run once)."""

from __future__ import annotations

import asyncio
import logging

from bot.agent import Agent

log = logging.getLogger(__name__)


async def recover_forever(agent: Agent, *, every: float, stale_after: float) -> None:
    """Recover stale runs now and then every `every` seconds, until cancelled; a failed pass is logged and retried."""
    while True:
        try:
            recovered = await agent.recover_stale_runs(stale_after=stale_after)
            if recovered:
                log.info("recovered %d run(s) left by a stopped process: %s", len(recovered), ", ".join(recovered))
        except Exception:  # noqa: BLE001 - the database may be away for a moment; the next pass tries again
            log.warning("the recovery pass failed; it runs again in %gs", every, exc_info=True)
        await asyncio.sleep(every)
