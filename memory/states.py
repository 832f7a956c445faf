"""The life of a run and of a tool call, written down in one place.

A tool call moves through these states; every move another actor could race (a second click, a
second replica) is made by `RunStore.transition`, one conditional UPDATE whose WHERE names the
states it may leave, so the database decides who won.

    pending ──► running ──► done | failed
       │           │  ▲
       │           ▼  │ (resume)
       │       suspended
       ▼
    awaiting_approval ──► approved ──► running ...
            │     │
            │     └────► declined | expired
            └──────────► running          (a supervisor's call, passing the decision down)
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """Where a run stands."""

    RUNNING = "running"
    """A process is working on it now (`runs.owner` says which, `runs.heartbeat_at` says when last)."""
    SUSPENDED = "suspended"
    """At least one call of its current step waits for a decision or for resume data."""
    COMPLETED = "completed"
    FAILED = "failed"


FINISHED_RUN_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED})


class ToolCallState(StrEnum):
    """Where one tool call stands."""

    PENDING = "pending"
    """Proposed by the model and recorded; not yet checked or started."""
    AWAITING_APPROVAL = "awaiting_approval"
    """Waits for a human to approve or decline it."""
    SUSPENDED = "suspended"
    """The tool called `suspend()`; waits for resume data."""
    APPROVED = "approved"
    """A human approved it; it is about to run."""
    DECLINED = "declined"
    EXPIRED = "expired"
    """Declined because nobody decided before the policy's expiry."""
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


WAITING_STATES = frozenset({ToolCallState.AWAITING_APPROVAL, ToolCallState.SUSPENDED})
SETTLED_STATES = frozenset({ToolCallState.DONE, ToolCallState.FAILED, ToolCallState.DECLINED, ToolCallState.EXPIRED})

TRANSITIONS: dict[ToolCallState, frozenset[ToolCallState]] = {
    ToolCallState.PENDING: frozenset({ToolCallState.RUNNING, ToolCallState.AWAITING_APPROVAL, ToolCallState.FAILED}),
    ToolCallState.AWAITING_APPROVAL: frozenset(
        {ToolCallState.APPROVED, ToolCallState.DECLINED, ToolCallState.EXPIRED, ToolCallState.RUNNING}
    ),
    ToolCallState.SUSPENDED: frozenset({ToolCallState.RUNNING, ToolCallState.EXPIRED}),
    ToolCallState.APPROVED: frozenset({ToolCallState.RUNNING, ToolCallState.FAILED}),
    ToolCallState.RUNNING: frozenset(
        {ToolCallState.DONE, ToolCallState.FAILED, ToolCallState.SUSPENDED, ToolCallState.AWAITING_APPROVAL}
    ),
    ToolCallState.DECLINED: frozenset(),
    ToolCallState.EXPIRED: frozenset(),
    ToolCallState.DONE: frozenset(),
    ToolCallState.FAILED: frozenset(),
}


def sources_of(target: ToolCallState, allowed_from: frozenset[ToolCallState] | None = None) -> list[str]:
    """The states a call may move to `target` from (optionally narrowed), checked against `TRANSITIONS`."""
    sources = [s for s, targets in TRANSITIONS.items() if target in targets]
    if allowed_from is not None:
        sources = [s for s in sources if s in allowed_from]
    if not sources:
        raise ValueError(f"no transition into {target}")
    return [str(s) for s in sources]
