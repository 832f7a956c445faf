"""The expiry and escalation sweeps: every replica brings the approvals that waited longer than their tool
policy's `escalate_after` to its `escalate_to` (`Agent.escalate_waiting_approvals`) and declines those that
waited longer than its expiry (`Agent.expire_waiting_approvals`); with several replicas each call is
escalated once and expired once. It also writes down the end of each delegation whose time ran out
(`DelegationStore.end_lapsed`: a `delegation_ended` line; the delegation stopped counting at its end time
whether or not the sweep ran).

A sweep passes every few seconds on SQLite. On PostgreSQL it sleeps until the next deadline it knows of (the
call waiting longest of a tool whose policy expires or escalates), or until any replica moves a call or a
policy (`memory._notices`); an idle replica's sweep is then nearly silent. A call this replica itself made
wait cannot come due sooner than the shortest expiry or escalation of the policies the pass read, so its
notice wakes the sweep only that long after it (none, if no policy expires or escalates); a policy this
replica changed wakes it at once, as another replica's work does.
"""

from __future__ import annotations

import logging
import math
import time
from datetime import datetime, timedelta

from bot.agent import Agent
from memory import ToolPolicy

log = logging.getLogger(__name__)

EXPIRY_INTERVAL = 5.0
"""Seconds between two sweeps at most while something may be due (the policies promise at most 10)."""


async def expire_forever(agent: Agent, *, every: float = EXPIRY_INTERVAL) -> None:
    """Sweep now and then every `every` seconds (on PostgreSQL: when something is due), until cancelled; a
    failed sweep is logged and retried."""
    notices = agent.storage.notices
    next_end: datetime | None = None  # not known yet: the first pass writes down what lapsed meanwhile
    known = False
    while True:
        began = time.monotonic()
        try:
            await agent.escalate_waiting_approvals()
        except Exception:  # noqa: BLE001 - as below: the next sweep tries again
            log.warning("the escalation sweep failed; it runs again in %gs", every, exc_info=True)
        try:
            await agent.expire_waiting_approvals()
        except Exception:  # noqa: BLE001 - the database may be away for a moment; the next sweep tries again
            log.warning("the expiry sweep failed; it runs again in %gs", every, exc_info=True)
        # where notices are heard, the end times read by the last pass say whether one may have lapsed (a
        # delegation another replica made since is read by this pass, and written down by the next)
        if not (notices.possible and known) or (next_end is not None and next_end <= agent.storage.clock.now()):
            try:
                await agent.storage.delegations.end_lapsed()
            except Exception:  # noqa: BLE001 - as above
                log.warning("the delegations sweep failed; it runs again in %gs", every, exc_info=True)
                known = False
        due: float | None = every
        own_after = every  # not known: as soon as a pass would come anyway
        if notices.possible:
            try:
                due, own_after, next_end = await _deadlines(agent)
                known = True
            except Exception:  # noqa: BLE001 - not known: look again soon
                log.debug("the next deadline of the expiry sweep is not known", exc_info=True)
                known = False
        await notices.pause(
            every, since=began, due=due, tables=("tool_calls", "tool_policies"), own_after={"tool_calls": own_after}
        )


async def next_due(agent: Agent) -> float | None:
    """Seconds until the next call of `agent` is due to expire or escalate, or a delegation's end is to be
    written down (None: nothing is)."""
    return (await _deadlines(agent))[0]


async def _deadlines(agent: Agent) -> tuple[float | None, float, datetime | None]:
    """`next_due`; the seconds a call that begins to wait now has at least before it is due (infinite: no
    policy expires or escalates calls); and the soonest end of a delegation not yet written down (None: none)."""
    storage = agent.storage
    ends = await storage.delegations.ends_not_written()
    deadlines = list(ends)
    expiring = {p.tool_name: p for p in await storage.policies.with_expiry() if isinstance(p, ToolPolicy)}
    escalating = {}
    if agent.hooks.get("on_escalation") is not None:
        escalating = {p.tool_name: p for p in await storage.policies.with_escalation() if isinstance(p, ToolPolicy)}
    windows = [float(p.expires_after or 0) for p in expiring.values()]
    windows += [float(p.escalate_after or 0) for p in escalating.values()]
    shortest = min(windows, default=math.inf)
    waits = await storage.runs.earliest_waits(agent.id) if expiring or escalating else {}
    for tool_name, (since, unescalated) in waits.items():
        if (policy := expiring.get(tool_name)) is not None:
            deadlines.append(since + timedelta(seconds=policy.expires_after or 0))
        if (policy := escalating.get(tool_name)) is not None and unescalated is not None:
            deadlines.append(unescalated + timedelta(seconds=policy.escalate_after or 0))
    next_end = ends[0] if ends else None
    if not deadlines:
        return None, shortest, next_end
    return max(0.0, (min(deadlines) - storage.clock.now()).total_seconds()), shortest, next_end


__all__ = ["EXPIRY_INTERVAL", "expire_forever", "next_due"]
