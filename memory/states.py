"""The life of a run and of a tool call, written down in one place.

Every move another actor could race (a second click, a second replica, a recovery) is made by one
conditional UPDATE whose WHERE names the states it may leave, so the database decides who won
(`RunStore.transition` for tool calls, `RunStore.move_run` for runs). The tables below are the only
moves there are; the runtime asks `next_state_after` which one a decision makes.

A tool call:

    pending ─────────────────► running ──► done | failed
       │  (no approval needed)  ▲  │  │
       │                        │  │  └──► suspended ──(resume)──► approved
       ▼                        │  │                                  │
    awaiting_approval ──► approved ┘  └──► awaiting_approval          │
         │    │                 ▲          (interrupted: it started,  │
         │    └──► declined | expired       no result was stored)     │
         └──────────────────────┴─────────────────────────────────────┘

A live suspension (`tool_calls.held_by`: an MCP server's question, whose call stays open in one process)
is guarded by that process's lease: if the process stops, the call, answered or not, goes from
`suspended` or `approved` to an interrupted `awaiting_approval`, like a call that started
(`INTERRUPTED_FROM`; `tool_calls.interrupted` marks it).

`running` is the durable "the tool started" mark, written right before `execute` is entered (after
the `before_tool_call` hook): a call found `approved` or `pending` after a crash never started and is
carried out once; a call found `running` may have taken effect and goes back to a human.

A run:

    running ──► suspended ──► running ...
       │            │
       └────────────┴──► completed | failed

While a process works on a run it refreshes `runs.heartbeat_at` (the lease); a run whose lease is
older than `stale_after` and that has work in progress is taken over by `Agent.recover_stale_runs`.

After a step's work (its calls run, parked or decided) the process that did it makes its `NextMove`:

    CONTINUE    it holds the run (`running`) and asks the model next: the step is settled
    SUSPENDED   a call of the step still waits (or works elsewhere): the run is parked `suspended`
    HANDED_OFF  another process claimed the run and goes on: this one stops

Whoever settles the last call of a step continues the run; the move is decided with the step or the last
result (`RunStore.record_step`, `RunStore.store_result_and_next_move`), else by `RunStore.after_work`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal


class RunStatus(StrEnum):
    """Where a run stands."""

    RUNNING = "running"
    """A process is working on it now (`runs.owner` says which, `runs.heartbeat_at` says when last)."""
    SUSPENDED = "suspended"
    """At least one call of its current step waits for a decision or for resume data."""
    COMPLETED = "completed"
    FAILED = "failed"


class NextMove(StrEnum):
    """What follows a step's work, for the process that did it: whoever settles the last call of a step
    goes on with the run (`RunStore.after_work`, or with the result or the step that decided it)."""

    CONTINUE = "continue"
    """This process holds the run (`running`) and asks the model next: every call of the step is settled."""
    SUSPENDED = "suspended"
    """A call of the step still waits for a human (or is at work elsewhere); the run is parked `suspended`."""
    HANDED_OFF = "handed_off"
    """Another process claimed the run and goes on with it; this one stops here."""

    @property
    def finish_reason(self) -> Literal["suspended", "stop"]:
        """The `finish` chunk of the stream that stops at this move (a `CONTINUE` stream goes on)."""
        return "suspended" if self == NextMove.SUSPENDED else "stop"


FINISHED_RUN_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED})
UNFINISHED_RUN_STATUSES = frozenset({RunStatus.RUNNING, RunStatus.SUSPENDED})

RUN_STARTS_IN = RunStatus.RUNNING
"""A run is stored `running`: the process that creates it works on it."""

RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.RUNNING: frozenset({RunStatus.SUSPENDED, RunStatus.COMPLETED, RunStatus.FAILED}),
    RunStatus.SUSPENDED: frozenset({RunStatus.RUNNING, RunStatus.FAILED}),
    RunStatus.COMPLETED: frozenset(),
    RunStatus.FAILED: frozenset(),
}


class ToolCallState(StrEnum):
    """Where one tool call stands."""

    PENDING = "pending"
    """Proposed by the model and recorded; not yet checked or started."""
    AWAITING_APPROVAL = "awaiting_approval"
    """Waits for a human to approve or decline it."""
    SUSPENDED = "suspended"
    """The tool called `suspend()`; waits for resume data."""
    APPROVED = "approved"
    """Decided (approved, or resumed with data); it is about to run. After a crash it is carried out once."""
    DECLINED = "declined"
    EXPIRED = "expired"
    """Declined because nobody decided before the policy's expiry."""
    CANCELLED = "cancelled"
    """Someone who may decide it (or an admin) withdrew the waiting call (approval or question): it never runs."""
    RUNNING = "running"
    """The tool started (or, for a supervisor's call, its sub-agent works); its result is not stored yet."""
    DONE = "done"
    FAILED = "failed"


WAITING_STATES = frozenset({ToolCallState.AWAITING_APPROVAL, ToolCallState.SUSPENDED})
"""A human has to act: approve or decline, or answer."""
IN_PROGRESS_STATES = frozenset({ToolCallState.PENDING, ToolCallState.APPROVED, ToolCallState.RUNNING})
"""A process has work to do on the call; after a crash the recovery takes it over."""
SETTLED_STATES = frozenset(
    {ToolCallState.DONE, ToolCallState.FAILED, ToolCallState.DECLINED, ToolCallState.EXPIRED, ToolCallState.CANCELLED}
)

CALL_STARTS_IN = frozenset({ToolCallState.PENDING, ToolCallState.AWAITING_APPROVAL, ToolCallState.FAILED})
"""The states a proposed call is stored in: pending (runs without approval), awaiting approval, or failed
at once (arguments that are not JSON or fail the schema, an unknown or disabled tool)."""

TRANSITIONS: dict[ToolCallState, frozenset[ToolCallState]] = {
    ToolCallState.PENDING: frozenset(
        {ToolCallState.RUNNING, ToolCallState.AWAITING_APPROVAL, ToolCallState.DONE, ToolCallState.FAILED}
    ),
    ToolCallState.AWAITING_APPROVAL: frozenset(
        {
            ToolCallState.APPROVED,
            ToolCallState.DECLINED,
            ToolCallState.EXPIRED,
            ToolCallState.RUNNING,
            ToolCallState.CANCELLED,
        }  # fmt: skip
    ),
    # a live suspension (`tool_calls.held_by`) whose process stopped, answered or not, is interrupted
    # (`INTERRUPTED_FROM`)
    ToolCallState.SUSPENDED: frozenset(
        {
            ToolCallState.APPROVED,
            ToolCallState.RUNNING,
            ToolCallState.EXPIRED,
            ToolCallState.AWAITING_APPROVAL,
            ToolCallState.CANCELLED,
        }  # fmt: skip
    ),
    ToolCallState.APPROVED: frozenset(
        {ToolCallState.RUNNING, ToolCallState.DONE, ToolCallState.FAILED, ToolCallState.AWAITING_APPROVAL}
    ),
    ToolCallState.RUNNING: frozenset(
        {ToolCallState.DONE, ToolCallState.FAILED, ToolCallState.SUSPENDED, ToolCallState.AWAITING_APPROVAL}
    ),
    ToolCallState.DECLINED: frozenset(),
    ToolCallState.EXPIRED: frozenset(),
    ToolCallState.CANCELLED: frozenset(),
    ToolCallState.DONE: frozenset(),
    ToolCallState.FAILED: frozenset(),
}


class DecisionKind(StrEnum):
    """What someone decided about a waiting call."""

    APPROVE = "approve"
    DECLINE = "decline"
    RESUME = "resume"
    EXPIRE = "expire"
    """Nobody decided (or answered) before the tool policy's expiry: settled as expired (by the expiry sweep)."""
    DECLINE_QUESTION = "decline_question"
    """The human will not answer a live question (an MCP server's `elicitation/create`): the server hears
    `decline`, and its call goes on."""
    CANCEL_QUESTION = "cancel_question"
    """The question is dismissed without a choice (a Cancel click, or nobody answered in time): the server
    hears `cancel`, and its call goes on."""
    CANCEL = "cancel"
    """Someone who may decide the call (or an admin) withdrew it while it waited, for approval or for an
    answer: it never runs, and the model reads that it was cancelled (not declined)."""

    @property
    def recorded_as(self) -> str:
        """The word stored in `tool_calls.decision` and in the audit trail."""
        return {
            "approve": "approved", "decline": "declined", "resume": "resumed", "expire": "expired",
            "decline_question": "answer_declined", "cancel_question": "answer_cancelled", "cancel": "cancelled",
        }[self.value]  # fmt: skip

    @property
    def outcome(self) -> str:
        """How a human names what the decision made of the call: approved, declined, answered, expired,
        cancelled (a question dismissed)."""
        return {
            "approve": "approved", "decline": "declined", "resume": "answered", "expire": "expired",
            "decline_question": "declined", "cancel_question": "cancelled", "cancel": "cancelled",
        }[self.value]  # fmt: skip

    @property
    def refuses(self) -> bool:
        """The call does not run (declined, expired, or cancelled)."""
        return self in (DecisionKind.DECLINE, DecisionKind.EXPIRE, DecisionKind.CANCEL)

    @property
    def answers(self) -> bool:
        """It settles a question (resume data, or a decline or cancel of a live question)."""
        return self in (DecisionKind.RESUME, DecisionKind.DECLINE_QUESTION, DecisionKind.CANCEL_QUESTION)

    @property
    def answer_action(self) -> str:
        """What an MCP server hears for this answer: `accept`, `decline` or `cancel`."""
        return {DecisionKind.DECLINE_QUESTION: "decline", DecisionKind.CANCEL_QUESTION: "cancel"}.get(self, "accept")

    @classmethod
    def of_recorded(cls, word: str | None) -> DecisionKind | None:
        """The kind whose `recorded_as` is `word` (what `tool_calls.decision` holds); None for no decision."""
        return next((kind for kind in cls if kind.recorded_as == word), None)


DECISION_WAITS_IN: dict[DecisionKind, ToolCallState] = {
    DecisionKind.APPROVE: ToolCallState.AWAITING_APPROVAL,
    DecisionKind.DECLINE: ToolCallState.AWAITING_APPROVAL,
    DecisionKind.RESUME: ToolCallState.SUSPENDED,
    DecisionKind.EXPIRE: ToolCallState.AWAITING_APPROVAL,
    DecisionKind.DECLINE_QUESTION: ToolCallState.SUSPENDED,
    DecisionKind.CANCEL_QUESTION: ToolCallState.SUSPENDED,
    DecisionKind.CANCEL: ToolCallState.AWAITING_APPROVAL,
}
"""The waiting state a call must be in for each kind of decision (a new kind adds its row)."""
ALSO_WAITS_IN: dict[DecisionKind, frozenset[ToolCallState]] = {
    DecisionKind.CANCEL: frozenset({ToolCallState.SUSPENDED}),
    DecisionKind.EXPIRE: frozenset({ToolCallState.SUSPENDED}),
}
"""The other waiting states a kind of decision can settle: a cancel withdraws a question too, and a question
nobody answered within its tool policy's expiry expires as an approval does."""

_WAITS_FOR = {ToolCallState.AWAITING_APPROVAL: "approval", ToolCallState.SUSPENDED: "resume data"}


def waiting_state_for(kind: DecisionKind) -> ToolCallState:
    """The state a call must be in for this kind of decision."""
    return DECISION_WAITS_IN[kind]


def waiting_states_for(kind: DecisionKind) -> frozenset[ToolCallState]:
    """Every state a call may be in for this kind of decision (`waiting_state_for`, and `ALSO_WAITS_IN`)."""
    return frozenset({DECISION_WAITS_IN[kind]}) | ALSO_WAITS_IN.get(kind, frozenset())


def can_decide(state: str | None, kind: DecisionKind) -> bool:
    """Whether a call in `state` can take a decision of this kind now."""
    return state in waiting_states_for(kind)


def waits_instead(state: str | None, kind: DecisionKind) -> str | None:
    """What a waiting call waits for when it is not what `kind` decides ("waits for resume data, not for
    a decision"); None when it waits for `kind`, or waits for nothing. The one wording of that mismatch:
    each front end adds its own way to give the other answer."""
    if state not in _WAITS_FOR or can_decide(state, kind):
        return None
    wanted = "resume data" if waiting_state_for(kind) == ToolCallState.SUSPENDED else "a decision"
    return f"waits for {_WAITS_FOR[ToolCallState(state)]}, not for {wanted}"


def next_state_after(kind: DecisionKind, *, passes_down: bool) -> ToolCallState:
    """The state a decision moves a waiting call to: the one place that chooses it.

    A decline settles the call. An approval or a resume marks it decided-but-not-started, so a crash
    before the tool starts leaves it to be carried out. A supervisor's call that passes the decision
    down to a sub-agent's call is at work at once (the inner call keeps the decision's own record).
    """
    if passes_down:
        return ToolCallState.RUNNING
    if kind == DecisionKind.EXPIRE:
        return ToolCallState.EXPIRED
    if kind == DecisionKind.CANCEL:
        return ToolCallState.CANCELLED
    return ToolCallState.DECLINED if kind == DecisionKind.DECLINE else ToolCallState.APPROVED


INTERRUPTED_FROM = frozenset({ToolCallState.RUNNING, ToolCallState.SUSPENDED, ToolCallState.APPROVED})
"""The states a call is interrupted from when its process stopped: `running` (its tool started), or
`suspended` / `approved` while a live question held it. The move goes to `INTERRUPTED_WAITS_IN` and sets
`tool_calls.interrupted`."""
INTERRUPTED_WAITS_IN = ToolCallState.AWAITING_APPROVAL
"""An interrupted call waits for a human as an approval: approving runs it again."""


def shown_suspend_payload(suspend_payload: Any, *, interrupted: bool) -> Any:
    """A call's suspend payload as the runtime shows it (the contract's shape): an interrupted call's is
    `{"interrupted": true, ...}`; what is stored keeps the mark in its own column."""
    if not interrupted:
        return suspend_payload
    return {"interrupted": True, **(suspend_payload if isinstance(suspend_payload, dict) else {})}


def outcome_of(state: str, decision: DecisionKind | None) -> str | None:
    """How a human would name what became of a call: approved, declined, expired, answered; None while it waits."""
    if state in WAITING_STATES:
        return None
    if state == ToolCallState.EXPIRED:
        return DecisionKind.EXPIRE.outcome
    if state == ToolCallState.CANCELLED:
        return DecisionKind.CANCEL.outcome
    if state == ToolCallState.DECLINED or decision == DecisionKind.DECLINE:
        return DecisionKind.DECLINE.outcome
    if decision in (DecisionKind.RESUME, DecisionKind.DECLINE_QUESTION, DecisionKind.CANCEL_QUESTION):
        return decision.outcome
    return DecisionKind.APPROVE.outcome


def run_sources_of(target: RunStatus) -> list[str]:
    """The run statuses a run may move to `target` from, checked against `RUN_TRANSITIONS`."""
    sources = [s for s, targets in RUN_TRANSITIONS.items() if target in targets]
    if not sources:
        raise ValueError(f"no run transition into {target}")
    return [str(s) for s in sources]


def sources_of(target: ToolCallState, allowed_from: frozenset[ToolCallState] | None = None) -> list[str]:
    """The states a call may move to `target` from (optionally narrowed), checked against `TRANSITIONS`."""
    sources = [s for s, targets in TRANSITIONS.items() if target in targets]
    if allowed_from is not None:
        sources = [s for s in sources if s in allowed_from]
    if not sources:
        raise ValueError(f"no transition into {target}")
    return [str(s) for s in sources]
