"""What a front end reads of an agent's runs and calls: the public records of a call (`ToolCallRecord`), a
run (`RunRecord`) and the suspended runs, made from what storage gives. `Agent` delegates its lookups here."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from memory import RunStatus, Storage, StoredToolCall, ToolCallState
from memory.states import DecisionKind, shown_suspend_payload
from tools import Tool

from ._authorize import stood_in_for
from ._conditions import rule_approvers, rule_line
from .exceptions import AmbiguousSuspendedRunsError, NoSuspendedRunError
from .types import RunRecord, SuspendedRun, SuspendedRunsPage, SuspendedToolCall, ToolCallRecord, ToolPreview


class ToolOwner(Protocol):
    """An agent as far as finding a tool by name goes: its tools and its sub-agents."""

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    @property
    def agents(self) -> Mapping[str, ToolOwner]: ...


class LookingAgent(ToolOwner, Protocol):
    """What the lookups need of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def storage(self) -> Storage: ...


class Lookups:
    """The records of one agent's runs and calls, read from storage."""

    def __init__(self, agent: LookingAgent) -> None:
        self._agent = agent

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        """The record of one call of this agent's run, or None when there is no such call."""
        row = await self._agent.storage.runs.get_tool_call(run_id, tool_call_id)
        if row is None or row.agent_id != self._agent.id:
            return None
        return self.record_of(row)

    async def list_tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """The records of every call of one of this agent's runs, in the order the model made them ([] when
        there is no such run)."""
        if await self.get_run(run_id) is None:
            return []
        return [self.record_of(row) for row in await self._agent.storage.runs.run_calls(run_id)]

    async def stored_answer(self, run_id: str) -> str:
        """The final answer run `run_id` stored (its last assistant text; empty if none)."""
        messages = await self._agent.storage.runs.run_messages(run_id)
        return next((str(m["content"]) for m in reversed(messages) if m["role"] == "assistant" and m["content"]), "")

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The record of one of this agent's runs, or None when there is no such run."""
        run = await self._agent.storage.runs.get_run(run_id)
        if run is None or run.agent_id != self._agent.id:
            return None
        return RunRecord(
            run_id=run.id,
            status=RunStatus(run.status),
            thread_id=run.thread_id,
            resource_id=run.resource_id,
            request_context=dict(run.request_context or {}),
            suspended_at=run.suspended_at,
        )

    def record_of(self, row: StoredToolCall) -> ToolCallRecord:
        """The public record of a stored call, with what this agent (or the sub-agent that owns its tool)
        knows of the tool."""
        shown = self._shown_tool(row.displayed_tool_name)
        own = self._agent.tools.get(row.tool_name)
        editable = own is not None and row.child_run_id is None and own.input_schema is not None
        resume_schema = row.resume_schema if isinstance(row.resume_schema, dict) else None
        if resume_schema is None and shown is not None and shown.resume_schema is not None:
            resume_schema = shown.resume_schema.json_schema
        return ToolCallRecord(
            run_id=row.run_id,
            tool_call_id=row.tool_call_id,
            tool_name=row.displayed_tool_name,
            args=row.displayed_args,
            state=ToolCallState(row.state),
            requires_approval=row.requires_approval,
            description=shown.description if shown is not None else "",
            tool_title=shown.title if shown is not None else None,
            tool_source=shown.source if shown is not None else None,
            tool_hints=shown.hints if shown is not None else (),
            suspend_payload=shown_suspend_payload(row.suspend_payload, interrupted=row.interrupted),
            input_schema=own.input_schema.json_schema if own is not None and own.input_schema and editable else None,
            resume_schema=resume_schema,
            resume_data=row.resume_data,
            decision=DecisionKind.of_recorded(row.decision),
            decided_by=row.decided_by,
            decided_for=row.decided_for,
            decided_at=row.decided_at,
            reason=row.reason,
            suspended_at=row.suspended_at,
            child_run_id=row.child_run_id,
            child_tool_call_id=row.child_tool_call_id,
            fingerprint=row.fingerprint,
            thread_id=row.thread_id,
            resource_id=row.resource_id,
            preview=ToolPreview.of(row.preview),
            live_question=row.held_by is not None and row.state == ToolCallState.SUSPENDED,
            approvals=tuple(a.get("by", "") for a in row.approvals or () if isinstance(a, dict)),
            stood_in_for=stood_in_for(row),
            interrupted=row.interrupted,
            escalated_at=escalated_at(row),
            rule=rule_line(row.rule),
            rule_approvers=rule_approvers(row.rule),
            rule_fields=row.rule if isinstance(row.rule, dict) else None,
        )

    def _shown_tool(self, name: str) -> Tool | None:
        """The tool named `name` here or, for a call that surfaced from a sub-agent, in the sub-agent that
        owns it (breadth first); None if nobody has it."""
        agents: list[ToolOwner] = [self._agent]
        seen: set[int] = set()
        while agents:
            current = agents.pop(0)
            if id(current) in seen:
                continue
            seen.add(id(current))
            if name in current.tools:
                return current.tools[name]
            agents.extend(current.agents.values())
        return None

    async def list_suspended_runs(
        self, *, thread_id: str | None = None, resource_id: str | None = None, page: int = 0, per_page: int = 50
    ) -> SuspendedRunsPage:
        """This agent's runs that wait for a decision or for data, newest first."""
        rows, total, exact = await self._agent.storage.runs.suspended_runs(
            self._agent.id, thread_id=thread_id, resource_id=resource_id, page=page, per_page=per_page
        )
        return SuspendedRunsPage(
            runs=[
                SuspendedRun(
                    run_id=run.id,
                    status="suspended",
                    thread_id=run.thread_id,
                    resource_id=run.resource_id,
                    suspended_at=run.suspended_at,
                    tool_calls=[_suspended_call(c) for c in calls],
                )
                for run, calls in rows
            ],
            total=total,
            total_exact=exact,
        )

    async def the_one_approval(
        self, *, thread_id: str, resource_id: str, tool_call_id: str | None = None
    ) -> tuple[str, str]:
        """(run id, tool call id) of the one approval waiting in a thread (`tool_call_id`: that one); raises
        `NoSuspendedRunError` when none waits, `AmbiguousSuspendedRunsError` when several do."""
        candidates: list[tuple[str, str]] = []
        page = 0
        while True:
            found = await self.list_suspended_runs(
                thread_id=thread_id, resource_id=resource_id, page=page, per_page=100
            )
            candidates += [
                (run.run_id, call.tool_call_id)
                for run in found.runs
                for call in run.tool_calls
                if call.requires_approval and tool_call_id in (None, call.tool_call_id)
            ]
            page += 1
            if page * 100 >= found.total:
                break
        if not candidates:
            raise NoSuspendedRunError(thread_id, resource_id)
        if len(candidates) > 1:
            raise AmbiguousSuspendedRunsError(candidates)
        return candidates[0]


def _suspended_call(call: StoredToolCall) -> SuspendedToolCall:
    return SuspendedToolCall(
        tool_call_id=call.tool_call_id,
        tool_name=call.displayed_tool_name,
        args=call.displayed_args,
        requires_approval=call.requires_approval,
        suspend_payload=shown_suspend_payload(call.suspend_payload, interrupted=call.interrupted),
        preview=ToolPreview.of(call.preview),
        escalated_at=escalated_at(call),
        rule=rule_line(call.rule),
    )


def escalated_at(call: StoredToolCall) -> datetime | None:
    """When the call's current wait was escalated; None if it was not (an older wait's does not count)."""
    at, since = call.escalated_at, call.suspended_at
    return at if at is not None and (since is None or at >= since) else None
