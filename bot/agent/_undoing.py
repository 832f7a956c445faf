"""Undo: one person takes back a call that ran, within its tool policy's window, through the tool's own
`undo=` (given the call's arguments and its result).

An undo is a decision of the engine like the others: the rule says who may (whoever approved the call, or
the requester of a call nobody approved, and admins), `UndoStore.claim` lets exactly one caller, on any
replica, within the window, undo it once, the tool's undo runs contained (`run_contained`: time bound,
every exception caught), and the outcome is audited (`undone`, `undo_failed`) with a note in the thread's
history, so the model's next turn knows."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from memory import Storage, StoredRun, StoredToolCall, ToolCallState, ToolPolicy
from tools import Tool

from ._authorize import Directory, Refusal, RefusalReason, approvers_so_far, requester_of
from ._contained import run_contained
from ._results import Gone, Refused
from .exceptions import DirectoryUnavailableError
from .types import ToolCallRecord

log = logging.getLogger(__name__)


class UndoAgent(Protocol):
    """What undoing needs of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def directory(self) -> Directory: ...

    def _find_tool(self, name: str) -> Tool | None: ...

    def _record_of(self, row: StoredToolCall) -> ToolCallRecord: ...


class NotUndoable(StrEnum):
    """Why a call cannot be undone (nothing was done)."""

    NO_UNDO = "no_undo"
    """Its tool declares no undo, or its policy's undo window is 0."""
    NOT_RUN = "not_run"
    """It did not run to a result (it waits, was declined, failed...)."""
    TOO_LATE = "too_late"
    """Its policy's undo window has passed."""
    ALREADY_UNDONE = "already_undone"
    """Someone undid it already (or their undo failed): an undo runs once."""


@dataclass(frozen=True, kw_only=True)
class Undone:
    """The tool's undo ran: `result` is what it returned."""

    run_id: str
    tool_call_id: str
    tool_name: str
    undone_by: str | None
    undone_at: datetime
    result: Any


@dataclass(frozen=True, kw_only=True)
class UndoFailed:
    """The tool's undo raised or did not answer in time (`error` says which): the call's effect may stand."""

    run_id: str
    tool_call_id: str
    tool_name: str
    undone_by: str | None
    error: str


@dataclass(frozen=True, kw_only=True)
class CannotUndo:
    """Nothing was done: `reason` says why."""

    reason: NotUndoable
    tool_name: str


UndoResult = Undone | UndoFailed | CannotUndo | Refused | Gone


def undoers(run: StoredRun, call: StoredToolCall) -> tuple[str, ...]:
    """Who may undo the call besides admins: whoever approved it (every approver of a four-eyes call), or
    the requester of a call nobody approved."""
    approved = tuple(dict.fromkeys([*approvers_so_far(call), *([call.decided_by] if call.decided_by else [])]))
    if approved:
        return approved
    requester = requester_of(run)
    return (requester,) if requester else ()


async def undo_window(agent: UndoAgent, call: StoredToolCall, policy: ToolPolicy | None = None) -> int:
    """Seconds the call may be undone after it ran: its policy's (`policy`, read here when not given), 0 when
    its tool declares no undo."""
    tool = agent._find_tool(call.tool_name)
    if tool is None or tool.undo is None or call.child_run_id is not None:
        return 0
    return (policy or await agent.storage.policies.get(call.displayed_tool_name)).undo_seconds


async def undo_offer(agent: UndoAgent, run_id: str, tool_call_id: str) -> tuple[ToolCallRecord, datetime] | None:
    """See `Agent.undo_offer`: the call and its policy are read once, in one statement, for its record and its
    window."""
    run, call, policy = await agent.storage.runs.run_call_and_policy(run_id, tool_call_id)
    if run is None or call is None or run.agent_id != agent.id:
        return None
    until = await undo_until(agent, call, policy)
    return (agent._record_of(call), until) if until is not None else None


async def undo_until(agent: UndoAgent, call: StoredToolCall, policy: ToolPolicy | None = None) -> datetime | None:
    """Until when the call may be undone, if an Undo may be offered now (it ran, nobody undid it, its tool
    declares how, its policy's window is open); None otherwise. `policy`: the call's, read here when not given."""
    if call.state != ToolCallState.DONE or call.undo_state is not None or call.updated_at is None:
        return None
    window = await undo_window(agent, call, policy)
    until = call.updated_at + timedelta(seconds=window)
    return until if window and until > agent.storage.clock.now() else None


async def undo_as(agent: UndoAgent, run_id: str, tool_call_id: str, *, actor: str | None, via: str) -> UndoResult:
    """See `Agent.undo_as`."""
    storage = agent.storage
    run, call, policy = await storage.runs.run_call_and_policy(run_id, tool_call_id)  # one statement
    if run is None or call is None or policy is None or run.agent_id != agent.id:
        return Gone(run_id=run_id, tool_call_id=tool_call_id)
    name = call.displayed_tool_name
    tool = agent._find_tool(call.tool_name)
    if tool is None or tool.undo is None or call.child_run_id is not None or not policy.undo_seconds:
        return CannotUndo(reason=NotUndoable.NO_UNDO, tool_name=name)
    if call.state != ToolCallState.DONE:
        return CannotUndo(reason=NotUndoable.NOT_RUN, tool_name=name)
    if call.undo_state is not None:
        return CannotUndo(reason=NotUndoable.ALREADY_UNDONE, tool_name=name)
    refusal = await _refusal(agent, run, call, actor, policy.version)
    if refusal is not None:
        await _audit_refused(storage, call, refusal, actor=actor, via=via)
        return Refused(refusal=refusal)
    if not await storage.undos.claim(call, actor=actor, window=policy.undo_seconds):
        latest = await storage.runs.get_tool_call(run.id, call.tool_call_id)
        if latest is not None and latest.undo_state is not None:
            return CannotUndo(reason=NotUndoable.ALREADY_UNDONE, tool_name=name)
        return CannotUndo(reason=NotUndoable.TOO_LATE, tool_name=name)
    undo = tool.undo
    result = call.result

    async def undo_it() -> Any:
        return await undo(tool.parse_args(call.args), result)

    ended = await run_contained(undo_it, tool.undo_timeout)
    if ended.ok:
        detail, error = _text(ended.value), None
    elif ended.timed_out:
        detail = error = f"the undo did not answer within {tool.undo_timeout:g} s"
    else:
        detail = error = f"{type(ended.error).__name__}: {ended.error}"
    who = actor or "the bot"
    args = json.dumps(call.args, ensure_ascii=False, default=str)
    if error is None:
        told = f"{who} undid the earlier call of the tool {name} with {args}; the undo returned: {detail}"
    else:
        told = f"{who} tried to undo the earlier call of the tool {name} with {args}, and the undo failed ({error}): its effect may still stand"  # noqa: E501
    note = {"role": "user", "content": f"[Note from the bot, not a message from the user] {told}."}
    at = await storage.undos.finish(
        call, run, ok=error is None, actor=actor, via=via, detail=detail, policy_version=policy.version,
        note=note if run.uses_memory and run.thread_id else None,
    )  # fmt: skip
    if error is not None:
        return UndoFailed(run_id=run.id, tool_call_id=call.tool_call_id, tool_name=name, undone_by=actor, error=error)
    return Undone(
        run_id=run.id, tool_call_id=call.tool_call_id, tool_name=name, undone_by=actor, undone_at=at,
        result=ended.value,
    )  # fmt: skip


async def _refusal(
    agent: UndoAgent, run: StoredRun, call: StoredToolCall, actor: str | None, version: int
) -> Refusal | None:
    if actor is None:
        return None  # the caller's own (trusted code, an API token holder acting as the bot)
    may = undoers(run, call)
    name = call.displayed_tool_name
    try:
        if actor in may or await agent.directory.is_admin(actor):
            return None
    except DirectoryUnavailableError as exc:
        return Refusal(reason=RefusalReason.DIRECTORY_UNAVAILABLE, tool_name=name, detail=str(exc), actor=actor)
    return Refusal(reason=RefusalReason.NOT_THE_UNDOER, tool_name=name, may_instead=may, policy_version=version,
                   actor=actor)  # fmt: skip


async def _audit_refused(
    storage: Storage, call: StoredToolCall, refusal: Refusal, *, actor: str | None, via: str
) -> None:
    try:
        await storage.audit_log.record(
            run_id=call.run_id, tool_call_id=call.tool_call_id, tool_name=call.displayed_tool_name,
            action="refused", actor=actor, via=via, args_fingerprint=call.fingerprint,
            policy_version=refusal.policy_version, detail=f"undo: {refusal.text()}"[:500],
        )  # fmt: skip
    except Exception:  # noqa: BLE001 - the refusal stands whether or not its line could be written
        log.exception("could not audit the refused undo of %s/%s", call.run_id, call.tool_call_id)


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:500]


__all__ = [
    "CannotUndo",
    "NotUndoable",
    "UndoFailed",
    "UndoResult",
    "Undone",
    "undo_as",
    "undo_until",
    "undo_window",
    "undoers",
]
