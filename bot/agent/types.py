"""The runtime's public data: chunks of a stream, a run's output, what waits for a decision, and the
records of runs and tool calls a front end reads.

What crosses the runtime's boundary is one of these frozen records, never a database row: a front
end (Slack, the HTTP API, the playground) reads these fields and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal, NotRequired, Required, TypedDict

from memory import ToolPolicy
from memory.states import DecisionKind, RunStatus, ToolCallState, can_decide, outcome_of

from ._authorize import Action, Asked

ChunkType = Literal[
    "text-delta",
    "tool-call",
    "tool-result",
    "tool-call-approval",
    "tool-call-suspended",
    "tool-output-denied",
    "tool-progress",
    "step-finish",
    "finish",
    "error",
]
FinishReason = Literal["stop", "suspended", "length", "error"]


class TextDeltaPayload(TypedDict):
    text: str


class GrantPayload(TypedDict):
    """The standing grant a call runs under without asking: who gave it, and until when (ISO 8601)."""

    grant_id: str
    granted_by: str
    expires_at: str


class ToolCallPayload(TypedDict):
    """A call the model made: its tool (as the model named it) and arguments; `grant` when a standing
    grant lets it run without asking."""

    tool_call_id: str
    tool_name: str
    args: Any
    grant: NotRequired[GrantPayload]


class ToolResultPayload(TypedDict):
    tool_call_id: str
    tool_name: str
    result: Any
    is_error: bool


class WaitingCallPayload(TypedDict):
    """A call that waits: for approval (`tool-call-approval`) or for data (`tool-call-suspended`). The tool and
    arguments a human decides about; `suspend_payload` is what the tool suspended with, `{"interrupted": true,
    ...}` for a call whose tool started before the bot stopped, None for a fresh approval."""

    tool_call_id: str
    tool_name: str
    args: Any
    resume_schema: dict[str, Any] | None
    suspend_payload: Any
    interrupted: NotRequired[bool]
    """True for a call whose tool started before the bot stopped and stored no result (it waits again)."""
    preview: NotRequired[dict[str, Any] | None]
    """What the tool's dry run said before the approval was shown: `{"ok": true, "result": ...}` or
    `{"ok": false, "error": "..."}`; None when the tool has no preview."""


class DeniedPayload(TypedDict):
    tool_call_id: str
    tool_name: str
    reason: str | None


class ProgressPayload(TypedDict):
    tool_call_id: str
    tool_name: str
    message: str
    """What the tool said of how far it has come (`ctx.progress`), one line."""


class FinishPayload(TypedDict):
    finish_reason: FinishReason
    usage: dict[str, int]


class ErrorPayload(TypedDict, total=False):
    message: Required[str]
    interrupted: bool
    """True when the run did not fail: it stopped here (the database went away for longer than the storage
    waits) and is left to recovery, which goes on with it where it stopped; nothing needs to be sent again."""
    taken_over: bool
    """True when this process stalled past the run's lease and another took the run over: nothing of the step
    it was at was stored, so the text it streamed of that step is no answer (a reader takes it back)."""


ChunkPayload = (
    TextDeltaPayload
    | ToolCallPayload
    | ToolResultPayload
    | WaitingCallPayload
    | DeniedPayload
    | ProgressPayload
    | FinishPayload
    | ErrorPayload
    | dict[str, Any]
)
"""What a chunk carries, by its type (see `Chunk`); `step-finish` carries nothing."""


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """One event of a run's stream. The runtime builds each with one of the constructors below, so
    every chunk of a type carries the payload of that type's `TypedDict`."""

    type: ChunkType
    run_id: str
    payload: ChunkPayload = field(default_factory=dict)
    view: WaitingCallView | None = field(default=None, compare=False, repr=False)
    """A waiting call's chunk only, in this process only (never part of the chunk's shape: not compared, not
    shown): the call as people see it (`Agent.waiting_call_view`), built by the runtime from the run, the call
    and the policy it held when it parked the call, so a front end posting it at once reads nothing. None when
    the runtime did not hold them all (a supervisor's call, a recovered run): the front end reads the view."""

    @classmethod
    def text_delta(cls, run_id: str, text: str) -> Chunk:
        return cls(type="text-delta", run_id=run_id, payload=TextDeltaPayload(text=text))

    @classmethod
    def tool_call(
        cls, run_id: str, *, tool_call_id: str, tool_name: str, args: Any, grant: GrantPayload | None = None
    ) -> Chunk:
        payload = ToolCallPayload(tool_call_id=tool_call_id, tool_name=tool_name, args=args)
        if grant is not None:
            payload["grant"] = grant
        return cls(type="tool-call", run_id=run_id, payload=payload)

    @classmethod
    def tool_result(cls, run_id: str, *, tool_call_id: str, tool_name: str, result: Any, is_error: bool) -> Chunk:
        payload = ToolResultPayload(tool_call_id=tool_call_id, tool_name=tool_name, result=result, is_error=is_error)
        return cls(type="tool-result", run_id=run_id, payload=payload)

    @classmethod
    def waiting(
        cls,
        run_id: str,
        *,
        requires_approval: bool,
        payload: WaitingCallPayload,
        view: WaitingCallView | None = None,
    ) -> Chunk:
        kind: ChunkType = "tool-call-approval" if requires_approval else "tool-call-suspended"
        return cls(type=kind, run_id=run_id, payload=payload, view=view)

    @classmethod
    def denied(cls, run_id: str, *, tool_call_id: str, tool_name: str, reason: str | None) -> Chunk:
        payload = DeniedPayload(tool_call_id=tool_call_id, tool_name=tool_name, reason=reason)
        return cls(type="tool-output-denied", run_id=run_id, payload=payload)

    @classmethod
    def tool_progress(cls, run_id: str, *, tool_call_id: str, tool_name: str, message: str) -> Chunk:
        payload = ProgressPayload(tool_call_id=tool_call_id, tool_name=tool_name, message=message)
        return cls(type="tool-progress", run_id=run_id, payload=payload)

    @classmethod
    def step_finish(cls, run_id: str) -> Chunk:
        return cls(type="step-finish", run_id=run_id)

    @classmethod
    def finish(cls, run_id: str, finish_reason: FinishReason, usage: dict[str, int] | None = None) -> Chunk:
        return cls(type="finish", run_id=run_id, payload=FinishPayload(finish_reason=finish_reason, usage=usage or {}))

    @classmethod
    def error(cls, run_id: str, message: str, *, interrupted: bool = False, taken_over: bool = False) -> Chunk:
        payload = ErrorPayload(message=message)
        if interrupted:
            payload["interrupted"] = True
        if taken_over:
            payload["taken_over"] = True
        return cls(type="error", run_id=run_id, payload=payload)


@dataclass(frozen=True, kw_only=True)
class SuspendPayload:
    """The call a run stopped at."""

    tool_call_id: str
    tool_name: str
    args: Any
    requires_approval: bool
    """True when it waits for approve/decline; False when the tool suspended itself for data."""
    payload: Any = None
    """What `suspend()` was given; None for an approval."""


@dataclass(kw_only=True)
class AgentOutput:
    """What a finished (or suspended) `generate` returns."""

    text: str
    finish_reason: FinishReason
    run_id: str
    suspend_payload: SuspendPayload | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Each `tool-call` chunk's payload, in order."""
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    """Each `tool-result` chunk's payload, in order."""
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    """The message of the `error` chunk when finish_reason is "error"."""


@dataclass(frozen=True, kw_only=True)
class ToolPreview:
    """What a tool's dry run (`preview=` on `create_tool`) said about a call before its approval was shown."""

    ok: bool
    """False when the preview raised or did not answer in time (the approval was shown anyway)."""
    result: Any = None
    """What the preview returned (text, or any JSON value), when `ok`."""
    error: str | None = None
    """Why there is no result, when not `ok` (the exception, or that it did not answer in time)."""

    @classmethod
    def of(cls, stored: Any) -> ToolPreview | None:
        """The preview stored with a call, or None when it has none."""
        if not isinstance(stored, dict):
            return None
        if stored.get("ok"):
            return cls(ok=True, result=stored.get("result"))
        return cls(ok=False, error=str(stored.get("error") or "the preview failed"))

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "result": self.result, "error": self.error}


@dataclass(frozen=True, kw_only=True)
class SuspendedToolCall:
    tool_call_id: str
    tool_name: str
    args: Any
    requires_approval: bool
    suspend_payload: Any = None
    preview: ToolPreview | None = None
    """What the tool's dry run said before the approval was shown (None: no preview)."""
    escalated_at: datetime | None = None
    """When its wait was escalated to its policy's `escalate_to`; None: not escalated."""
    rule: str | None = None
    """The admin's rule that made it wait, in one line (as `ToolCallRecord.rule`); None: no rule."""


@dataclass(frozen=True, kw_only=True)
class SuspendedRun:
    run_id: str
    status: str
    thread_id: str | None
    resource_id: str | None
    suspended_at: datetime | None
    tool_calls: list[SuspendedToolCall]


@dataclass(frozen=True, kw_only=True)
class SuspendedRunsPage:
    runs: list[SuspendedRun]
    total: int
    """How many runs wait: exact up to 200 runs past this page's end; past that, the runs counted (a lower
    bound: the count of every one would cost a probe each, and grow with the number waiting)."""
    total_exact: bool = True
    """False when `total` is a lower bound (more runs wait than were counted)."""


@dataclass(frozen=True, kw_only=True)
class ToolCallCheck:
    """What a `before_tool_call` hook gets."""

    tool_name: str
    input: Any
    tool_call_id: str
    run_id: str
    context: Any


@dataclass(frozen=True, kw_only=True)
class ToolCallRecord:
    """One tool call as the runtime stored it: what a front end shows, and what it checks before a
    decision. A copy taken when it was read; the call changes only through the `Agent`'s methods."""

    run_id: str
    """The run the call belongs to (for a call that surfaced from a sub-agent: the supervisor's run)."""
    tool_call_id: str
    """The call's id within its run (for a call that surfaced from a sub-agent: the supervisor's call)."""
    tool_name: str
    """The tool a human decides about: the inner tool for a supervisor's call that passes a decision down."""
    args: Any
    """The arguments a human decides about (the inner call's for a supervisor's call; the edited ones
    once a human edited them)."""
    state: ToolCallState
    """Where the call stands in its lifecycle (see `memory.states`)."""
    requires_approval: bool
    """True when it waits (or waited) for approve/decline; False when it runs without, or asks for data."""
    description: str = ""
    """The description of the tool in `tool_name`, as the model sees it ("" when the agent no longer has it)."""
    tool_title: str | None = None
    """The tool's name for people, when it has one (an MCP tool's title)."""
    tool_source: str | None = None
    """Where the tool comes from when it is not the deployer's code (e.g. "MCP server `tickets`")."""
    tool_hints: tuple[str, ...] = ()
    """What the tool says of itself, unchecked (an MCP server's annotations in words)."""
    suspend_payload: Any = None
    """What the tool suspended with; `{"interrupted": true, ...}` for a call whose tool started and
    stored no result; None for a fresh approval."""
    input_schema: dict[str, Any] | None = None
    """The JSON Schema its arguments may be edited against before an approval; None when they cannot
    be edited (a call that surfaced from a sub-agent is decided as shown)."""
    resume_schema: dict[str, Any] | None = None
    """The JSON Schema of the data that resumes it (stored with the suspension, else the tool's); None
    when it takes none."""
    resume_data: Any = None
    """The data it was resumed with, once resumed."""
    decision: DecisionKind | None = None
    """What a human decided about it, None before any decision."""
    decided_by: str | None = None
    """Who decided (a user id, as the front end named them), None for the runtime itself."""
    decided_for: str | None = None
    """Whom `decided_by` stood in for (a delegation in force at the decision); None: their own decision."""
    decided_at: datetime | None = None
    """When it was decided."""
    reason: str | None = None
    """The reason given with a decline (or an expiry)."""
    suspended_at: datetime | None = None
    """When its current wait began; a new wait (an interrupted call asked again) has a new time."""
    child_run_id: str | None = None
    """For a supervisor's call to a sub-agent: the sub-agent's run."""
    child_tool_call_id: str | None = None
    """For a supervisor's call that shows a waiting inner call: that call's id in `child_run_id`."""
    fingerprint: str | None = None
    """The fingerprint of the canonical tool name and arguments an approval binds to."""
    thread_id: str | None = None
    """The memory thread of its run, if any."""
    resource_id: str | None = None
    """The resource (the user) its run belongs to, if any."""
    preview: ToolPreview | None = None
    """What the tool's dry run said before the approval was shown (None: the tool has no preview)."""
    live_question: bool = False
    """It waits for an answer inside a call its tool keeps open (an MCP server's question): besides an
    answer, it can be declined or cancelled (`Agent.decline_question`)."""
    interrupted: bool = False
    """It waits again because its tool started (or its live question was held) and the bot stopped before
    a result was stored: it may or may not have taken effect (`tool_calls.interrupted`)."""
    approvals: tuple[str, ...] = ()
    """Who approved it so far, in order, when its policy needs several distinct approvers (four eyes);
    empty before the first (and for a call decided by one approval)."""
    stood_in_for: tuple[tuple[str, str], ...] = ()
    """(delegate, delegator) for each decision or approval of it made by someone standing in for another
    (a delegation): a surface names them "@bob for @alice"."""
    escalated_at: datetime | None = None
    """When its current wait was escalated (its policy's `escalate_to`); None: not escalated."""

    def named(self, person: str) -> tuple[str, str | None]:
        """`person` and whom they stood in for on this call (None: on their own behalf)."""
        return person, dict(self.stood_in_for).get(person)

    rule: str | None = None
    """The admin's rule that decided it when it was proposed, in one line ("rule 1: Needs finance:
    args.amount > 100.0", or why its condition could not be evaluated); None: no rule decided."""
    rule_approvers: tuple[str, ...] = ()
    """Who may decide it, when the rule that made it wait names its own approvers (instead of the
    policy's); empty: the policy's approvers."""
    rule_fields: Mapping[str, Any] | None = None
    """The rule of `rule` as stored (its `position`, `condition`, `effect`, `name`, or `failed`: why its
    condition could not be evaluated), for a front end that words it in its reader's language."""

    @property
    def outcome(self) -> str | None:
        """How a human would name what became of it: "approved", "declined", "expired", "answered",
        "cancelled" (a question dismissed); None while it waits."""
        return outcome_of(self.state, self.decision)

    def waits_for(self, kind: DecisionKind) -> bool:
        """Whether a decision of this kind can be made about it now (approve/decline, or resume)."""
        return can_decide(self.state, kind)


# --- decisions: what a front end passes to `Agent.decide` --------------------------------------
@dataclass(frozen=True)
class Decision:
    """What someone decides about one waiting call: one of `Approve`, `Decline`, `Resume` (or the
    runtime's own `Expire`). A front end builds the value; `Agent.decide` works out what it means.

    A new kind of decision is a subclass naming its `DecisionKind` (and the kind's rows in
    `memory.states`: where it waits, where it moves the call, how it is recorded)."""

    kind: ClassVar[DecisionKind]
    """The kind of decision (what `tool_calls.decision` records, through `DecisionKind.recorded_as`)."""

    @property
    def reason(self) -> str | None:
        """The reason the model reads with a refusal; None for a decision that lets the call run."""
        return None


@dataclass(frozen=True, kw_only=True)
class GrantRequest:
    """What an approver asks for with `Approve(grant=...)`: a standing grant ("allow for 1 hour in this
    thread") of the call's tool in the run's thread, as long as the tool's policy allows (`grant_seconds`)."""

    same_arguments: bool = False
    """True: the grant covers only later calls with exactly these arguments."""
    seconds: int | None = None
    """How long, at most the policy's `grant_seconds`; None: the policy's `grant_seconds`."""


@dataclass(frozen=True)
class Approve(Decision):
    """Run the call that waits for approval, with the arguments it was shown, or with edited `args`."""

    args: Any = None
    """Edited arguments, checked against the tool's `input_schema` (only a direct tool call can be
    edited); None runs the call as shown."""
    grant: GrantRequest | None = None
    """Also give a standing grant (the policy must allow grants; refused with `GrantNotAllowedError`)."""
    kind: ClassVar[DecisionKind] = DecisionKind.APPROVE


@dataclass(frozen=True)
class Decline(Decision):
    """Do not run the call that waits for approval; the model reads that it was not approved, and why."""

    reason: str | None = None
    """Why, in the decider's words; the model reads it."""
    kind: ClassVar[DecisionKind] = DecisionKind.DECLINE


@dataclass(frozen=True)
class Resume(Decision):
    """Resume the call that suspended itself, with data that fits its `resume_schema`."""

    data: Any
    """The resume data (the tool reads it as `ctx.agent.resume_data`)."""
    kind: ClassVar[DecisionKind] = DecisionKind.RESUME


@dataclass(frozen=True)
class Expire(Decision):
    """Nobody decided before the tool policy's expiry: the call is declined as expired (the sweep's own)."""

    reason: str | None = None
    """What the model reads of the expiry (e.g. "nobody decided within 60 s")."""
    kind: ClassVar[DecisionKind] = DecisionKind.EXPIRE


@dataclass(frozen=True)
class DeclineQuestion(Decision):
    """Refuse to answer a live question (an MCP server's `elicitation/create`, `ToolCallRecord.live_question`):
    the server hears `decline` and its call goes on; the tool's result, not an error, reaches the model."""

    reason: str | None = None
    """Why, for the audit trail (the server hears only `decline`)."""
    kind: ClassVar[DecisionKind] = DecisionKind.DECLINE_QUESTION


@dataclass(frozen=True)
class CancelQuestion(Decision):
    """Dismiss a live question without a choice (a Cancel click, or nobody answered in time): the server
    hears `cancel` and its call goes on."""

    reason: str | None = None
    """Why, for the audit trail (e.g. "nobody answered within 3600 s")."""
    kind: ClassVar[DecisionKind] = DecisionKind.CANCEL_QUESTION


@dataclass(frozen=True)
class Cancel(Decision):
    """Withdraw a call that waits for approval or for an answer: it never runs, and the model reads that it
    was cancelled (not declined). A live question (an MCP server's) is cancelled as `CancelQuestion`: its
    server hears `cancel` and its call goes on."""

    reason: str | None = None
    """Why, in the canceller's words; the model reads it."""
    kind: ClassVar[DecisionKind] = DecisionKind.CANCEL


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One run as the runtime stored it, as far as a front end needs it."""

    run_id: str
    status: RunStatus
    """Where the run stands (see `memory.states`)."""
    thread_id: str | None
    """The memory thread it belongs to; None for a run without memory (a sub-agent's, a one-off)."""
    resource_id: str | None
    """The resource (the user) it belongs to."""
    request_context: dict[str, Any] = field(default_factory=dict)
    """The `request_context` it was started with (what a front end put there, e.g. who asked)."""
    suspended_at: datetime | None = None
    """When it last began to wait."""


class EscalationResult(StrEnum):
    """What became of one escalation a front end was asked to deliver."""

    DELIVERED = "delivered"
    """Brought to the target (audited `escalated`)."""
    RETRY = "retry"
    """Not delivered now (the chat service was busy or failing): a later sweep tries again."""
    FAILED = "failed"
    """Cannot be delivered (a group with no members, an unknown channel): audited `escalation_failed`,
    not tried again for this wait."""


@dataclass(frozen=True, kw_only=True)
class Escalation:
    """A call still waiting for approval after its policy's delay, to be brought to `target`; what the
    runtime hands to the front end's `on_escalation` hook (which returns an `EscalationOutcome`)."""

    call: ToolCallRecord
    target: str
    """The policy's `escalate_to`: a user-group ID (`S…`) or a channel ID (`C…`)."""
    after: int
    """The policy's `escalate_after`, in seconds."""
    policy_version: int


@dataclass(frozen=True, kw_only=True)
class EscalationOutcome:
    result: EscalationResult
    detail: str
    """For the audit line: the target it reached, or why not."""


@dataclass(frozen=True, kw_only=True)
class WaitingCallView:
    """A waiting call as people see it: the call (`record`: its tool, arguments, preview), who asked, the
    approvals so far, who may decide and until when, and the grants on offer."""

    record: ToolCallRecord
    requester: str | None
    """Whose request led to the call."""
    approvals: tuple[str, ...]
    """Four eyes: who approved it so far, in order."""
    approvals_required: int
    deciders: tuple[str, ...]
    """Who may decide it (people and user groups); empty: anyone in the conversation."""
    answerers: tuple[str, ...]
    """Who may answer it, when it is a question: the requester and the tool's approvers."""
    self_approval: bool
    """Whether the requester may approve their own call."""
    disabled: bool
    """An admin disabled the tool: it can only be declined."""
    expires_at: datetime | None
    """When a waiting approval is declined as expired (None: never)."""
    grant_seconds: int | None
    """The longest standing grant an approval may give (None: no grant on offer)."""
    policy: ToolPolicy = field(repr=False)
    """The tool's policy the view was built with (the rule weighs the viewer against it)."""
    thread_id: str | None = None
    approvals_for_other_args: bool = False

    @property
    def policy_version(self) -> int:
        return self.policy.version

    @property
    def is_question(self) -> bool:
        return not self.record.requires_approval

    def asked(self, viewer: str | None, action: Action) -> Asked:
        return Asked(
            actor=viewer, action=action, tool_name=self.record.tool_name, requester=self.requester,
            thread_id=self.thread_id, approvals=(*self.approvals, *(d for _, d in self.record.stood_in_for)),
            approvals_for_other_args=self.approvals_for_other_args, waits_for_approval=not self.is_question,
        )  # fmt: skip
