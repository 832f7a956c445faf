"""How approvals are really decided: per tool and per person, read from the audit trail on demand.

One place computes the numbers every surface shows (the admin's App Home, `python -m bot audit
--summary`): how many calls wait, how many people decided, how long they took (p50 and p95), how many
were declined, expired, cancelled or undone, and how many approvals came within a few seconds of the
request (a rubber stamp, perhaps). It is computed when asked, never on a decision's path: three reads
(the audit lines that start or end a wait, the calls waiting now, the policies).

A wait starts at a call's `requested` line (or `interrupted`: it waits for a human again) and ends at
the decision that settles it: `approved` (the last approval a four-eyes call needs), `declined`,
`cancelled`, or `expired` (nobody decided). Time to decision is measured for decisions by people only;
an expiry (or a cancel by `system`) is counted, not timed. A person's row counts the lines they wrote:
each approval they gave (four eyes: every one, not only the last), each decline, cancel and undo. A
supervisor's call that passes its decision down to a sub-agent's call is counted once, as the inner call.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import and_, func, select

from ._audit import SYSTEM
from .states import ToolCallState
from .tables import AuditRow, ToolCallRow

if TYPE_CHECKING:
    from ._storage import Storage

WAIT_STARTS = frozenset({"requested", "interrupted"})
"""Audit actions after which a call waits for a person."""
BY_PEOPLE = frozenset({"approved", "declined", "cancelled"})
"""Audit actions that settle a wait by a person's decision (timed)."""
SETTLES = BY_PEOPLE | {"expired"}
"""Audit actions that settle a wait."""
COUNTED = frozenset({"undone"})
"""Audit actions counted but not part of a wait."""
READ = sorted(WAIT_STARTS | SETTLES | COUNTED)


@dataclass(frozen=True, kw_only=True)
class DecisionStats:
    """The numbers of one row: a tool, or a person."""

    waiting: int = 0
    """Calls waiting for approval now (a person's row: of tools whose policy names them)."""
    decided: int = 0
    """Decisions by people: approvals, declines and cancels (a tool's row: calls settled so)."""
    approved: int = 0
    declined: int = 0
    expired: int = 0
    """Calls nobody decided in time (a tool's row only)."""
    cancelled: int = 0
    undone: int = 0
    quick: int = 0
    """Approvals given within `ApprovalAnalytics.quick_seconds` of the request."""
    p50: float | None = None
    """Median seconds from the request to the decision (nearest rank); None: no timed decision."""
    p95: float | None = None
    """95th percentile of the same (nearest rank)."""

    def fields(self) -> dict[str, int | float | None]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True)
class ApprovalAnalytics:
    """Every tool's and every person's numbers, each sorted by name."""

    tools: dict[str, DecisionStats] = field(default_factory=dict)
    people: dict[str, DecisionStats] = field(default_factory=dict)
    """Keyed by Slack user ID: everyone who approved, declined, cancelled or undid a call, or is named
    as an approver of a tool with a call waiting."""
    quick_seconds: float
    since: datetime | None = None


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (`share` in (0, 1]) of `values`: a value that occurred; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class _Tally:
    def __init__(self) -> None:
        self.counts: dict[str, int] = defaultdict(int)
        self.times: list[float] = []

    def stats(self) -> DecisionStats:
        counts = self.counts
        return DecisionStats(
            waiting=counts["waiting"],
            decided=counts["decided"],
            approved=counts["approved"],
            declined=counts["declined"],
            expired=counts["expired"],
            cancelled=counts["cancelled"],
            undone=counts["undone"],
            quick=counts["quick"],
            p50=percentile(self.times, 0.5),
            p95=percentile(self.times, 0.95),
        )


@dataclass(frozen=True)
class Line:
    """What the summary reads of one audit line."""

    run_id: str
    tool_call_id: str
    tool_name: str
    action: str
    actor: str
    at: datetime


def summarize(
    lines: Iterable[Line],
    waiting: Iterable[tuple[str, str, str]],
    approvers: dict[str, tuple[str, ...]],
    *,
    quick_seconds: float,
    since: datetime | None = None,
) -> ApprovalAnalytics:
    """The numbers of `lines` (oldest first); `waiting`: (run id, call id, tool) of every call waiting
    for approval now; `approvers`: the people each tool's policy names."""
    tools: dict[str, _Tally] = defaultdict(_Tally)
    people: dict[str, _Tally] = defaultdict(_Tally)
    open_calls = {(run_id, call_id) for run_id, call_id, _ in waiting}
    for _, _, tool in waiting:
        tools[tool].counts["waiting"] += 1
        for named in approvers.get(tool, ()):
            people[named].counts["waiting"] += 1
    started: dict[tuple[str, str], datetime] = {}
    last: dict[tuple[str, str], tuple[Line, float | None]] = {}
    """A call's latest decision in its current wait, not yet counted for its tool."""

    def settle(key: tuple[str, str]) -> None:
        decision = last.pop(key, None)
        if decision is None:
            return
        line, seconds = decision
        tally = tools[line.tool_name]
        tally.counts[line.action] += 1
        if line.action in BY_PEOPLE and line.actor != SYSTEM:
            tally.counts["decided"] += 1
            if seconds is not None:
                tally.times.append(seconds)

    for line in lines:
        key = (line.run_id, line.tool_call_id)
        if line.action in WAIT_STARTS:
            settle(key)
            started[key] = line.at
            continue
        if line.action in COUNTED:
            tools[line.tool_name].counts[line.action] += 1
            if line.actor != SYSTEM:
                people[line.actor].counts[line.action] += 1
            continue
        since_request = started.get(key)
        seconds = None if since_request is None else max(0.0, (line.at - since_request).total_seconds())
        last[key] = (line, seconds)  # a later approval of the same wait (four eyes) settles it instead
        if line.action == "approved" and seconds is not None and seconds <= quick_seconds:
            tools[line.tool_name].counts["quick"] += 1
        if line.action in BY_PEOPLE and line.actor != SYSTEM:
            person = people[line.actor]
            person.counts[line.action] += 1
            person.counts["decided"] += 1
            if seconds is not None:
                person.times.append(seconds)
                if line.action == "approved" and seconds <= quick_seconds:
                    person.counts["quick"] += 1
        if line.action in ("declined", "cancelled", "expired"):
            settle(key)
    for key in list(last):
        if key not in open_calls:  # a call still waiting has had approvals, not its last one
            settle(key)
    return ApprovalAnalytics(
        tools={name: tools[name].stats() for name in sorted(tools)},
        people={name: people[name].stats() for name in sorted(people)},
        quick_seconds=quick_seconds,
        since=since,
    )


async def approval_analytics(
    storage: Storage, *, quick_seconds: float, since: datetime | None = None, tool_name: str | None = None
) -> ApprovalAnalytics:
    """The numbers from `storage`'s audit trail (from `since` on; of one tool), and its calls waiting now."""
    calls = ToolCallRow.__table__.c
    audit = AuditRow.__table__.c
    same_call = and_(calls.run_id == audit.run_id, calls.tool_call_id == audit.tool_call_id)
    statement = (
        select(audit.run_id, audit.tool_call_id, audit.tool_name, audit.action, audit.actor, audit.at)
        .select_from(AuditRow.__table__.outerjoin(ToolCallRow.__table__, same_call))
        .where(audit.action.in_(READ), audit.run_id.is_not(None), calls.child_run_id.is_(None))
        .order_by(audit.at, audit.id)
    )
    shown_name = func.coalesce(calls.shown_tool_name, calls.tool_name)
    waiting = select(calls.run_id, calls.tool_call_id, shown_name).where(
        calls.state == str(ToolCallState.AWAITING_APPROVAL), calls.child_run_id.is_(None)
    )
    if since is not None:
        statement = statement.where(audit.at >= since)
    if tool_name is not None:
        statement = statement.where(audit.tool_name == tool_name)
        waiting = waiting.where(shown_name == tool_name)
    async with storage.read() as connection:
        lines = [
            Line(run_id, call_id, tool, action, actor or SYSTEM, at)
            for run_id, call_id, tool, action, actor, at in (await connection.execute(statement)).all()
        ]
        open_calls = [(row[0], row[1], row[2]) for row in (await connection.execute(waiting)).all()]
    policies = await storage.policies.all()
    approvers = {policy.tool_name: policy.users for policy in policies}
    return summarize(lines, open_calls, approvers, quick_seconds=quick_seconds, since=since)


__all__ = ["ApprovalAnalytics", "DecisionStats", "approval_analytics", "percentile", "summarize"]
