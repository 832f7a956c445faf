"""What the parts of a run's driver share (`_run.RunDriver`, `_proposals.Proposals`, `_calls.CallRunner`):
the options of a request, a decision won in storage, a sub-agent as a supervisor drives it, the narrow parts
of the agent a driver works with (`RunDeps`), where the driver stands with its run (`Standing`), and the
tool messages the model reads."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.redaction import NO_KNOWN_SECRETS
from memory import (
    Grant,
    GrantReader,
    Memory,
    PolicyReader,
    RunStorage,
    StoredRun,
    StoredToolCall,
    ToolCallState,
    ToolPolicy,
)
from memory.states import DecisionKind, NextMove
from tools import AgentToolContext, ApprovalRule, Tool

from ._stream import AgentStream
from ._view import WaitingCallView
from .types import Decision, GrantPayload

if TYPE_CHECKING:
    import openai

ARGS_CHANGED = "the arguments changed after approval was requested; the call was not run"


@dataclass(kw_only=True)
class RequestOptions:
    """The per-request options that shape a run."""

    require_tool_approval: ApprovalRule | None = None
    request_context: dict[str, Any] = field(default_factory=dict)
    max_steps: int = 10
    auto_resume_suspended_tools: bool = False
    model_timeout: float = 60.0
    """One deadline for each model call, the client's retries included."""
    heartbeat_interval: float = 5.0
    """How often a working process refreshes the run's lease."""


@dataclass(frozen=True, kw_only=True)
class WonDecision:
    """A decision won in storage (`Agent.decide`): the value as stored, who made it, through what."""

    decision: Decision
    """`Approve`, `Decline`, `Resume` or `Expire`; a resume's data as it was validated and stored."""
    decided_by: str | None = None
    decided_for: str | None = None
    """Whom `decided_by` stood in for (a delegation in force); None: their own decision."""
    via: str = "runtime"
    """Through what it was decided, for the audit trail: button, home, api, thread, expiry, recovery, runtime."""
    settled_in_turn: bool = False
    """The decision settled the call (a decline, an expiry, a cancel) in the run's turn (`RunStore.transition`'s
    `in_turn`): the run's next move is then one claim (`RunStore.after_work`'s `settled_in_turn`)."""

    @property
    def kind(self) -> DecisionKind:
        return self.decision.kind

    @property
    def reason(self) -> str | None:
        return self.decision.reason


@dataclass(frozen=True, kw_only=True)
class SubAgent:
    """A sub-agent as a supervisor's run drives it: three of its agent's own (private) methods, bound."""

    id: str
    start: Callable[..., Awaitable[AgentStream]]
    """Start its run for a supervisor's call (`prompt=`, `parent=`, `run_id=`, `options=`)."""
    decide: Callable[..., Awaitable[AgentStream]]
    """Pass a decision down to its waiting call (its agent's `decide`)."""
    recover: Callable[[StoredRun], Awaitable[AgentStream]]
    """Go on with its run after the process that worked on it stopped."""


@dataclass(frozen=True, kw_only=True)
class RunDeps:
    """What a `RunDriver` needs of its agent, and nothing more (the driver never sees the `Agent`)."""

    agent_id: str
    owner: str
    """This process's name on the runs it works on (the lease)."""
    model: str
    instructions: str
    model_client: openai.AsyncOpenAI
    runs: RunStorage
    policies: PolicyReader
    """The admins' tool policies, read when a call is proposed and again right before it runs."""
    grants: GrantReader | None = None
    """Standing grants, looked up when a call that would wait for approval is proposed; None: no grants."""
    memory: Memory | None
    """Thread history, for runs that use memory."""
    find_tool: Callable[[str], Tool | None]
    """The tool the model may call by this name (the agent's own, or `agent-<id>` for a sub-agent)."""
    tool_names: Callable[[], list[str]]
    tool_specs: Callable[[], list[dict[str, Any]]]
    """The tools as the model is offered them."""
    sub_agent_for: Callable[[str], SubAgent | None]
    """The sub-agent behind an `agent-<id>` tool; None for any other tool."""
    hooks: Mapping[str, Callable[..., Any]]
    forget_request_rule: Callable[[str], None]
    """Drop the request's approval callable kept for a run that finished."""
    hold: Callable[[StoredToolCall], None] = lambda _row: None
    """Keep watch over a call this process now holds live (`suspend(live=True)`): its lease, its answer."""
    at_work: Counter[str] = field(default_factory=Counter)
    """Run id -> how many drivers of this process work on it now: this process's own recovery leaves
    those runs alone, however late their lease's last beat looks."""
    redact: Callable[[str], str] = NO_KNOWN_SECRETS
    """Masks secrets in what tool code said when it failed (a preview's error, a tool's), before the
    thread, the audit trail or the model see it (`bot.redaction`)."""
    view_of: Callable[[StoredRun, StoredToolCall, ToolPolicy], WaitingCallView] | None = None
    """The one view of a waiting call (`_view.view_of`, with the agent's records): the driver builds it from
    what it holds when it parks a call, and its chunk carries it (`Chunk.view`); None: no view is carried."""


@dataclass(kw_only=True)
class Standing:
    """Where a driver stands with its run, shared by its parts: whether it is the run's worker (the run is
    `running` on its behalf), and the run's next move when the transaction that stored the step, or the one
    result at work, already made it (see `RunDriver._after_work`)."""

    holds_run: bool
    next_move: NextMove | None = None


def disabled_error(tool_name: str) -> str:
    """The result of a call to a tool an admin's policy disabled: a fact, said so that the model may pass
    it on and a front end may show it as it is (no instruction to the model in it)."""
    return f"The tool {tool_name!r} is disabled by an admin's policy, so it was not run."


def expired_message(call: StoredToolCall, reason: str | None) -> dict[str, Any]:
    """The tool message the model reads when nobody decided a call (or answered its question) before its
    policy's expiry."""
    if call.state == ToolCallState.SUSPENDED:
        content = "Nobody answered this tool's question in time: the question expired, so the tool did not go on."
    else:
        content = "Nobody approved this tool call in time: the approval request expired, so it was not run."
    if reason:
        content += f" ({reason})"
    return {"role": "tool", "tool_call_id": call.tool_call_id, "content": content}


def declined_message(call: StoredToolCall, reason: str | None) -> dict[str, Any]:
    """The tool message the model reads when a call was declined (stored with the decision)."""
    if call.interrupted:
        content = (
            "This tool call was interrupted before its result was stored, and the user chose not to run it "
            "again: it did not complete, and it may or may not have taken effect."
        )
    else:
        content = "The user did not approve this tool call, so it was not run."
    if reason:
        content += f" Reason: {reason}"
    return {"role": "tool", "tool_call_id": call.tool_call_id, "content": content}


def suspended_with(call: StoredToolCall) -> Any:
    """What the call's tool suspended with, also after an interruption wrapped it."""
    if call.interrupted and isinstance(call.suspend_payload, dict):
        return call.suspend_payload.get("suspended_with")
    return call.suspend_payload


def cancelled_from_outside() -> bool:
    """Whether the running task was cancelled (a shutdown, a stream closed), as opposed to tool code that
    raised `CancelledError` by itself."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def tool_context_for(row: StoredToolCall, tool: Tool) -> AgentToolContext:
    """What the tool is handed of its call's wait: the resume data, what it suspended with when it was
    answered, and the answer's action (an MCP server's `accept`, `decline`, `cancel`)."""
    decided = DecisionKind.of_recorded(row.decision)
    answer_action = decided.answer_action if decided is not None and decided.answers else None
    answered = row.resume_data is not None or answer_action is not None
    return AgentToolContext(
        tool.suspend_schema,
        resume_data=row.resume_data,
        suspend_payload=suspended_with(row) if answered else None,
        answer_action=answer_action,
    )


def internal_failure(run_id: str) -> str:
    """What a reader is told of a run that failed inside the bot: no internals, where to look."""
    return f"The bot hit an internal error and stopped this run; the details are in its log (run {run_id})."


def failed_call(row: StoredToolCall, error: str) -> StoredToolCall:
    row.state = str(ToolCallState.FAILED)
    row.result = {"error": error}
    row.is_error = True
    return row


def result_message_of(tool_call_id: str, result: Any) -> dict[str, Any]:
    content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}


def result_message(row: StoredToolCall) -> dict[str, Any]:
    return result_message_of(row.tool_call_id, row.result)


def grant_payload(grant: Grant | None) -> GrantPayload | None:
    """What a front end shows of the standing grant a call runs under (None: it runs under none)."""
    if grant is None:
        return None
    return GrantPayload(
        grant_id=grant.id, granted_by=grant.granted_by, expires_at=grant.expires_at.isoformat(timespec="seconds")
    )
