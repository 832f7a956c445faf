"""Every error the agent runtime raises on purpose, each saying what to do about it.

All are `AgentError`s. Eight are defined in `memory.exceptions` and re-exported here: `AgentError`
itself, and `ThreadOwnerError`, `PolicyError`, `RunTakenOverError`, `MessageTakenError`,
`GrantNotAllowedError`, `DatabaseAwayError` and `CommitOutcomeUnknownError`, which storage raises; `memory`
cannot import `bot`, so the root of the hierarchy lives in the lower layer and this module is still the
one place that lists them all.
"""

from __future__ import annotations

from typing import Any

from memory.exceptions import (
    AgentError,
    CommitOutcomeUnknownError,
    DatabaseAwayError,
    GrantNotAllowedError,
    MessageTakenError,
    PolicyError,
    RunTakenOverError,
    ThreadOwnerError,
)
from memory.states import DecisionKind, ToolCallState, waits_instead

_RUNTIME_DOORS = {
    ToolCallState.SUSPENDED: "decide it with Resume(data) (resume_stream, resume_generate)",
    ToolCallState.AWAITING_APPROVAL: "decide it with Approve() or Decline() (approve_tool_call, decline_tool_call)",
}
"""How to give a waiting call the answer it waits for, through `Agent.decide` and its wrappers."""


class SnapshotNotFoundError(AgentError, LookupError):
    """No stored run has that id."""

    def __init__(self, run_id: str, *, storage_configured: bool):
        self.run_id = run_id
        if storage_configured:
            hint = "it may belong to another agent or database, or the id is wrong"
        else:
            hint = (
                "this agent has no storage configured, so runs live only in the process that started them; "
                "pass storage=Storage(url) or memory=Memory(storage) to resume runs after a restart"
            )
        super().__init__(f"no run {run_id!r} is stored: {hint}")


class ToolCallNotSuspendedError(AgentError):
    """The tool call is not waiting: it is unknown, or it was already decided."""

    def __init__(
        self,
        run_id: str,
        tool_call_id: str | None,
        state: str | None = None,
        *,
        wanted: DecisionKind | None = None,
        hint: str | None = None,
    ):
        self.run_id = run_id
        self.tool_call_id = tool_call_id
        self.state = state
        instead = waits_instead(state, wanted) if wanted is not None else None
        if hint is not None:  # it waits, but not for this kind of answer: the hint says which fits
            detail = f"tool call {tool_call_id!r}: {hint}"
        elif tool_call_id is None:
            detail = "has no tool call waiting"
        elif state is None:
            detail = f"has no tool call {tool_call_id!r}"
        elif instead:
            detail = f"tool call {tool_call_id!r} {instead}: {_RUNTIME_DOORS[ToolCallState(state)]}"
        else:
            detail = f"tool call {tool_call_id!r} is not waiting (it is {state})"
        super().__init__(f"run {run_id!r} {detail}")


class ApprovalNotCountedError(AgentError, PermissionError):
    """An approval of a call whose policy needs several distinct approvers (four eyes) that cannot count:
    no approver named, the requester's own, a second one by the same person, or one with edited arguments.
    Nothing changed; the call still waits."""

    def __init__(self, tool_name: str, needed: int, why: str, *, reason: Any = None):
        self.tool_name = tool_name
        self.needed = needed
        self.why = why
        self.reason = reason
        """The rule's `RefusalReason`."""
        super().__init__(f"{tool_name} needs {needed} approvals from different people: {why}")


class NoSuspendedRunError(AgentError):
    """`send_tool_approval` found no run waiting for a decision in that thread."""

    def __init__(self, thread_id: str | None, resource_id: str | None):
        super().__init__(f"no run waits for a decision in thread {thread_id!r} of resource {resource_id!r}")


class AmbiguousSuspendedRunsError(AgentError):
    """`send_tool_approval` found several waiting calls and was not told which one."""

    def __init__(self, candidates: list[tuple[str, str]]):
        self.candidates = candidates
        listed = ", ".join(f"{run}/{call}" for run, call in candidates)
        super().__init__(
            f"{len(candidates)} tool calls wait in this thread ({listed}); pass tool_call_id to choose one"
        )


class ResumeDataInvalidError(AgentError, ValueError):
    """Resume data failed the tool's `resume_schema`; the call stays suspended and can be resumed again."""

    def __init__(self, tool_name: str, errors: list[Any]):
        self.tool_name = tool_name
        self.errors = errors
        self.paths = [e.path for e in errors]
        listed = "; ".join(str(e) for e in errors)
        super().__init__(f"resume data for {tool_name!r} does not fit its resume_schema: {listed}")


class ResumeSchemaInvalidError(ResumeDataInvalidError):
    """The schema the call waits for an answer to is not a valid JSON Schema (tools.check_schema), so no
    answer can be checked against it: nothing is stored, and the call waits as it did. Decline or cancel
    it (a live question), or fix the tool's schema."""

    def __init__(self, tool_name: str, problem: str):
        super().__init__(tool_name, [])
        self.problem = problem
        self.args = (f"the question of {tool_name!r} has a schema that is not valid, so no answer fits it: {problem}",)


class ToolArgsInvalidError(AgentError, ValueError):
    """Edited arguments failed the tool's `input_schema`; nothing was decided."""

    def __init__(self, tool_name: str, errors: list[Any]):
        self.tool_name = tool_name
        self.errors = errors
        listed = "; ".join(str(e) for e in errors)
        super().__init__(f"arguments for {tool_name!r} do not fit its input_schema: {listed}")


class ModelError(AgentError, RuntimeError):
    """The model failed (a network error, an HTTP error, a timeout) or answered something unusable.

    A run meets it as `finish_reason="error"` with the message in an `error` chunk; auto-resume meets
    it as "no answer" and leaves the call waiting.
    """


class SubAgentNotFoundError(AgentError, LookupError):
    """A stored run names a sub-agent call, but this agent has no such sub-agent (its `agents=` changed)."""

    def __init__(self, agent_id: str, tool_call_id: str, tool_name: str):
        self.tool_name = tool_name
        super().__init__(
            f"{agent_id}: call {tool_call_id} has a child run but {tool_name} is no sub-agent of this agent; "
            "build the agent with the same agents= it had when the run started"
        )


class DirectoryUnavailableError(AgentError, RuntimeError):
    """The front end's directory could not tell who someone is (Slack did not answer); nothing was decided.
    The message says which lookup failed, for people."""


class QuestionHeldElsewhereError(AgentError):
    """A sub-agent's live question (an MCP server's) waits in another bot process, and an answer given here
    cannot reach it yet: nothing was decided. It can be answered through the process that holds it."""

    def __init__(self, run_id: str, tool_call_id: str):
        self.run_id = run_id
        self.tool_call_id = tool_call_id
        super().__init__(
            f"the question of call {tool_call_id} in run {run_id} waits inside a sub-agent's MCP call held by "
            "another bot process, which an answer given here cannot reach yet; nothing was decided: answer it "
            "again (it may reach that process), or decline it"
        )


__all__ = [
    "AgentError",
    "DirectoryUnavailableError",
    "QuestionHeldElsewhereError",
    "ApprovalNotCountedError",
    "CommitOutcomeUnknownError",
    "DatabaseAwayError",
    "GrantNotAllowedError",
    "AmbiguousSuspendedRunsError",
    "ModelError",
    "NoSuspendedRunError",
    "PolicyError",
    "ResumeDataInvalidError",
    "ResumeSchemaInvalidError",
    "RunTakenOverError",
    "MessageTakenError",
    "SnapshotNotFoundError",
    "SubAgentNotFoundError",
    "ThreadOwnerError",
    "ToolArgsInvalidError",
    "ToolCallNotSuspendedError",
]
