"""The expiry sweep: every replica declines, every few seconds, the approvals that waited longer than
their tool policy's expiry (`Agent.expire_waiting_approvals`; with several replicas each call is
expired once)."""

from __future__ import annotations

import asyncio
import logging

from bot.agent import Agent

log = logging.getLogger(__name__)

EXPIRY_INTERVAL = 5.0
"""Seconds between two sweeps (the policies promise at most 10)."""


async def expire_forever(agent: Agent, *, every: float = EXPIRY_INTERVAL) -> None:
    """Sweep now and then every `every` seconds, until cancelled; a failed sweep is logged and retried."""
    while True:
        try:
            await agent.expire_waiting_approvals()
        except Exception:  # noqa: BLE001 - the database may be away for a moment; the next sweep tries again
            log.warning("the expiry sweep failed; it runs again in %gs", every, exc_info=True)
        await asyncio.sleep(every)
