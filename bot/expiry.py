"""The expiry and escalation sweeps: every replica, every few seconds, brings the approvals that waited
longer than their tool policy's `escalate_after` to its `escalate_to` (`Agent.escalate_waiting_approvals`)
and declines those that waited longer than its expiry (`Agent.expire_waiting_approvals`); with several
replicas each call is escalated once and expired once. It also writes down the end of each delegation whose
time ran out (`DelegationStore.end_lapsed`: a `delegation_ended` line; the delegation stopped counting at
its end time whether or not the sweep ran)."""

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
            await agent.escalate_waiting_approvals()
        except Exception:  # noqa: BLE001 - as below: the next sweep tries again
            log.warning("the escalation sweep failed; it runs again in %gs", every, exc_info=True)
        try:
            await agent.expire_waiting_approvals()
        except Exception:  # noqa: BLE001 - the database may be away for a moment; the next sweep tries again
            log.warning("the expiry sweep failed; it runs again in %gs", every, exc_info=True)
        try:
            await agent.storage.delegations.end_lapsed()
        except Exception:  # noqa: BLE001 - as above
            log.warning("the delegations sweep failed; it runs again in %gs", every, exc_info=True)
        await asyncio.sleep(every)
