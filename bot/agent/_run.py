"""The tool-calling loop of one run: ask the model, record its calls, run or park them, go on.

A `RunDriver` works on one stored run. It never holds a database transaction across a `yield`, so
whoever reads the stream may approve a call from inside its loop. Every call's fate is written to
storage before the chunk that announces it is yielded.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory import RunStatus, ToolCallState
from memory._memory import pair_tool_results
from memory.states import SETTLED_STATES, WAITING_STATES
from memory.tables import RunRow, ToolCallRow, utcnow
from tools import (
    AgentToolContext,
    ApprovalCheck,
    ApprovalRule,
    SchemaValidationError,
    Tool,
    ToolContext,
    rule_says_yes,
    to_jsonable,
)

from ._fingerprint import fingerprint
from ._model import ModelError, stream_step
from .types import AgentOutput, Chunk, ToolCallCheck

if TYPE_CHECKING:
    from ._agent import Agent

log = logging.getLogger(__name__)

ARGS_CHANGED = "the arguments changed after approval was requested; the call was not run"


@dataclass(kw_only=True)
class RequestOptions:
    """The per-request options that shape a run."""

    require_tool_approval: ApprovalRule | None = None
    request_context: dict[str, Any] = field(default_factory=dict)
    max_steps: int = 10
    auto_resume_suspended_tools: bool = False


@dataclass(kw_only=True)
class Decision:
    """What a human (or the answer extraction) decided about one waiting call."""

    kind: str  # "approve" | "decline" | "resume"
    actor: str | None = None
    reason: str | None = None
    resume_data: Any = None


class RunDriver:
    def __init__(self, agent: Agent, run: RunRow, options: RequestOptions):
        self.agent = agent
        self.run = run
        self.options = options
        self.runs = agent.storage.runs
        self.usage: dict[str, int] = {}

    # --- the loop ---------------------------------------------------------------------------
    async def loop(self, notes: list[str] | None = None) -> AsyncIterator[Chunk]:
        """Drive the run from where it stands until it finishes or parks a call."""
        try:
            while True:
                if self.run.step >= self.run.max_steps:
                    yield await self._finish(RunStatus.COMPLETED, "length")
                    return
                reply = None
                async for part in stream_step(
                    self.agent.model_client, self.agent.model, await self._context(notes), self.agent.tool_specs()
                ):
                    if isinstance(part, str):
                        yield self._chunk("text-delta", text=part)
                    else:
                        reply = part
                assert reply is not None
                notes = None
                for key, value in reply.usage.items():
                    self.usage[key] = self.usage.get(key, 0) + value
                self.run.step += 1
                await self._make_call_ids_unique(reply.tool_calls)
                await self.runs.add_messages(self.run, [reply.message()])
                await self.runs.set_run(self.run.id, step=self.run.step, heartbeat_at=utcnow())
                if not reply.tool_calls:
                    yield self._chunk("step-finish")
                    yield await self._finish(RunStatus.COMPLETED, "stop")
                    return
                waiting: list[ToolCallRow] = []
                async for chunk in self._run_step(reply.tool_calls, waiting):
                    yield chunk
                yield self._chunk("step-finish")
                if waiting:
                    yield self._chunk("finish", finish_reason="suspended", usage=self.usage)
                    return
        except ModelError as exc:
            log.warning("run %s: %s", self.run.id, exc)
            async for chunk in self._fail(str(exc)):
                yield chunk
        except Exception as exc:
            log.exception("run %s failed", self.run.id)
            async for chunk in self._fail(f"{type(exc).__name__}: {exc}"):
                yield chunk

    async def after_decision(self, call: ToolCallRow, decision: Decision) -> AsyncIterator[Chunk]:
        """Carry out a decision already won in storage, then go on with the run if its step is settled."""
        try:
            for chunk in await self._carry_out(call, decision):
                yield chunk
            if call.state in WAITING_STATES:
                yield self._waiting_chunk(call)
                yield self._chunk("finish", finish_reason="suspended", usage=self.usage)
                return
            step_calls = await self.runs.step_calls(self.run.id, call.step)
            if not all(c.state in SETTLED_STATES for c in step_calls):
                yield self._chunk("finish", finish_reason="suspended", usage=self.usage)
                return
            if not await self.runs.claim_run(self.run.id, self.agent.owner):
                yield self._chunk("finish", finish_reason="stop", usage=self.usage)  # another process goes on
                return
        except Exception as exc:
            log.exception("run %s: carrying out a decision failed", self.run.id)
            async for chunk in self._fail(f"{type(exc).__name__}: {exc}"):
                yield chunk
            return
        async for chunk in self.loop():
            yield chunk

    async def _make_call_ids_unique(self, tool_calls: list[dict[str, Any]]) -> None:
        """Give a call a fresh id when the model reuses one (some servers send "call_0" every step)."""
        if not tool_calls:
            return
        taken = await self.runs.call_ids(self.run.id)
        for position, tool_call in enumerate(tool_calls):
            if tool_call["id"] in taken:
                tool_call["id"] = f"{tool_call['id']}-s{self.run.step}p{position}"
            taken.add(tool_call["id"])

    # --- one step ---------------------------------------------------------------------------
    async def _run_step(self, tool_calls: list[dict[str, Any]], waiting: list[ToolCallRow]) -> AsyncIterator[Chunk]:
        rows = [await self._record(position, tool_call) for position, tool_call in enumerate(tool_calls)]
        await self.runs.add_tool_calls(rows)
        await self.runs.add_messages(self.run, [_result_message(r) for r in rows if r.state == ToolCallState.FAILED])
        for row in rows:
            yield self._chunk("tool-call", tool_call_id=row.tool_call_id, tool_name=row.tool_name, args=row.args)
        for row in rows:
            if row.state == ToolCallState.FAILED:
                yield self._result_chunk(row)
        ready = [row for row in rows if row.state == ToolCallState.PENDING]
        for chunks in await asyncio.gather(*(self._execute(row) for row in ready)):
            for chunk in chunks:
                yield chunk
        waiting.extend(row for row in rows if row.state in WAITING_STATES)
        if waiting:
            # stored before any reader hears of it: a reader may approve as soon as it sees the chunk
            await self.runs.set_run(self.run.id, status=RunStatus.SUSPENDED, suspended_at=utcnow(), owner=None)
            for row in waiting:
                yield self._waiting_chunk(row)

    async def _record(self, position: int, tool_call: dict[str, Any]) -> ToolCallRow:
        """A row for one proposed call: pending, awaiting approval, or failed with the reason."""
        name = tool_call["function"]["name"]
        row = ToolCallRow(
            run_id=self.run.id,
            tool_call_id=tool_call["id"],
            agent_id=self.agent.id,
            thread_id=self.run.thread_id,
            resource_id=self.run.resource_id,
            step=self.run.step,
            position=position,
            tool_name=name,
            args=None,
            state=str(ToolCallState.PENDING),
            requires_approval=False,
            is_error=False,
        )
        try:
            row.args = json.loads(tool_call["function"]["arguments"] or "{}")
        except json.JSONDecodeError as exc:
            row.args = tool_call["function"]["arguments"]
            return _failed(row, f"the arguments are not valid JSON ({exc}); send a JSON object")
        tool = self.agent.find_tool(name)
        if tool is None:
            return _failed(row, f"there is no tool {name!r}; available: {', '.join(self.agent.tool_names())}")
        try:
            tool.parse_args(row.args)
        except SchemaValidationError as exc:
            return _failed(row, f"invalid arguments for {name!r}: {exc}")
        row.fingerprint = fingerprint(name, row.args)
        if await self._approval_required(tool, row.args):
            row.state = str(ToolCallState.AWAITING_APPROVAL)
            row.requires_approval = True
            row.suspended_at = utcnow()
        return row

    async def _approval_required(self, tool: Tool, args: Any) -> bool:
        """The contract's rule: the tool's callable decides alone; else the tool's flag OR the request's rule."""
        if self.agent.is_sub_agent_tool(tool.id):
            return False  # the sub-agent's own tools are what need approval; the request's rule goes down to them
        check = ApprovalCheck(
            tool_name=tool.id,
            args=args,
            request_context=self.options.request_context,
            workspace=self.options.request_context.get("workspace"),
        )
        required = await tool.approval_required(check)  # None: the tool leaves it to the request
        if required is not None:
            return required
        return await rule_says_yes(self.options.require_tool_approval, check)

    # --- running one call -------------------------------------------------------------------
    async def _execute(self, row: ToolCallRow, decision: Decision | None = None) -> list[Chunk]:
        """Run a pending, approved or resumed call; return the chunks of its outcome."""
        if row.state != ToolCallState.RUNNING and not await self.runs.transition(row, ToolCallState.RUNNING):
            return []  # someone else took it: a call runs once
        tool = self.agent.find_tool(row.tool_name)
        if tool is None or row.fingerprint != fingerprint(row.tool_name, row.args):
            reason = ARGS_CHANGED if tool is not None else f"the tool {row.tool_name!r} is no longer available"
            return await self._settle(row, ToolCallState.FAILED, {"error": reason}, is_error=True)
        skipped, output = await self._before_tool_call(row)
        if skipped:
            return await self._settle(row, ToolCallState.DONE, to_jsonable(output))
        sub_agent = self.agent.sub_agent_for(row.tool_name)
        if sub_agent is not None:
            return await self._run_sub_agent(row, sub_agent)
        context = AgentToolContext(
            tool.suspend_schema,
            resume_data=decision.resume_data if decision is not None else None,
            suspend_payload=row.suspend_payload if decision is not None else None,
        )
        try:
            output = await tool.execute(
                tool.parse_args(row.args),
                ToolContext(
                    run_id=self.run.id,
                    tool_call_id=row.tool_call_id,
                    thread_id=self.run.thread_id,
                    resource_id=self.run.resource_id,
                    request_context=self.options.request_context,
                    agent=context,
                ),
            )
        except Exception as exc:  # noqa: BLE001 - a failing tool is a result the model should see
            log.info("tool %s failed in run %s: %r", row.tool_name, self.run.id, exc)
            return await self._settle(row, ToolCallState.FAILED, {"error": f"{type(exc).__name__}: {exc}"}, True)
        if context.suspend_error is not None:
            error = f"the tool suspended with a payload that does not fit its suspend_schema: {context.suspend_error}"
            return await self._settle(row, ToolCallState.FAILED, {"error": error}, True)
        if context.suspended:
            await self.runs.transition(
                row,
                ToolCallState.SUSPENDED,
                suspend_payload=context.suspended_with,
                resume_schema=tool.resume_schema.json_schema if tool.resume_schema else None,
                requires_approval=False,
            )
            return []
        output = to_jsonable(output)
        if tool.output_schema is not None:
            try:
                tool.output_schema.validate(output)
            except SchemaValidationError as exc:
                return await self._settle(row, ToolCallState.FAILED, {"error": f"output does not fit: {exc}"}, True)
        return await self._settle(row, ToolCallState.DONE, output)

    async def _before_tool_call(self, row: ToolCallRow) -> tuple[bool, Any]:
        hook = self.agent.hooks.get("before_tool_call")
        if hook is None:
            return False, None
        answer = hook(
            ToolCallCheck(
                tool_name=row.tool_name,
                input=row.args,
                tool_call_id=row.tool_call_id,
                run_id=self.run.id,
                context=self.options.request_context,
            )
        )
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, dict) and answer.get("proceed") is False:
            return True, answer.get("output")
        return False, None

    async def _settle(self, row: ToolCallRow, to: ToolCallState, result: Any, is_error: bool = False) -> list[Chunk]:
        await self.runs.transition(row, to, result=result, is_error=is_error)
        await self.runs.add_messages(self.run, [_result_message(row)])
        return [self._result_chunk(row)]

    async def _carry_out(self, call: ToolCallRow, decision: Decision) -> list[Chunk]:
        if call.child_run_id is not None:
            child = self.agent.find_agent_of_run_child(call)
            stream = await child.decide(call.child_run_id, call.child_tool_call_id, decision)
            chunks = await self._after_child(call, await stream.result())
            if decision.kind == "decline":
                chunks.insert(0, self._denied_chunk(call, decision.reason))
            return chunks
        if decision.kind == "decline":
            content = "The user did not approve this tool call, so it was not run."
            if decision.reason:
                content += f" Reason: {decision.reason}"
            await self.runs.add_messages(
                self.run, [{"role": "tool", "tool_call_id": call.tool_call_id, "content": content}]
            )
            return [self._denied_chunk(call, decision.reason)]
        return await self._execute(call, decision if decision.kind == "resume" else None)

    # --- sub-agents -------------------------------------------------------------------------
    async def _run_sub_agent(self, row: ToolCallRow, sub_agent: Agent) -> list[Chunk]:
        stream = await sub_agent.start_child_run(
            prompt=str(row.args.get("prompt", "")), parent=self.run, options=self.options
        )
        return await self._after_child(row, await stream.result())

    async def _after_child(self, row: ToolCallRow, output: AgentOutput) -> list[Chunk]:
        """Show a waiting inner call as this call, or turn the sub-agent's answer into this call's result."""
        if output.finish_reason == "suspended":
            inner = await self.runs.latest_waiting_call(output.run_id)
            if inner is not None:
                await self.runs.transition(
                    row,
                    ToolCallState.AWAITING_APPROVAL if inner.requires_approval else ToolCallState.SUSPENDED,
                    requires_approval=inner.requires_approval,
                    shown_tool_name=inner.displayed_tool_name,
                    shown_args=inner.displayed_args,
                    suspend_payload=inner.suspend_payload,
                    resume_schema=inner.resume_schema,
                    fingerprint=inner.fingerprint,
                    child_run_id=output.run_id,
                    child_tool_call_id=inner.tool_call_id,
                )
                return []
        if output.finish_reason == "error":
            return await self._settle(
                row, ToolCallState.FAILED, {"error": output.error or "the sub-agent failed"}, True
            )
        return await self._settle(row, ToolCallState.DONE, {"text": output.text})

    # --- endings and chunks -----------------------------------------------------------------
    async def _finish(self, status: RunStatus, finish_reason: str) -> Chunk:
        await self.runs.set_run(self.run.id, status=status, finish_reason=finish_reason, owner=None)
        return self._chunk("finish", finish_reason=finish_reason, usage=self.usage)

    async def _fail(self, message: str) -> AsyncIterator[Chunk]:
        try:
            await self.runs.set_run(
                self.run.id, status=RunStatus.FAILED, finish_reason="error", error=message, owner=None
            )
        except Exception:
            log.exception("run %s: could not store the failure", self.run.id)
        yield self._chunk("error", message=message)
        yield self._chunk("finish", finish_reason="error", usage=self.usage)

    async def _context(self, notes: list[str] | None) -> list[dict[str, Any]]:
        # one system message, first: some OpenAI-compatible servers accept no other place for it
        system = "\n\n".join(part for part in [self.agent.instructions, *(notes or [])] if part)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if self.run.uses_memory:
            history = await self.agent.memory.window(self.run.thread_id)
        else:
            history = [m for group in pair_tool_results(await self.runs.run_messages(self.run.id)) for m in group]
        return messages + history

    def _chunk(self, type_: str, **payload: Any) -> Chunk:
        return Chunk(type=type_, run_id=self.run.id, payload=payload)

    def _result_chunk(self, row: ToolCallRow) -> Chunk:
        return self._chunk(
            "tool-result",
            tool_call_id=row.tool_call_id,
            tool_name=row.tool_name,
            result=row.result,
            is_error=bool(row.is_error),
        )

    def _denied_chunk(self, row: ToolCallRow, reason: str | None) -> Chunk:
        return self._chunk(
            "tool-output-denied",
            tool_call_id=row.tool_call_id,
            tool_name=row.displayed_tool_name,
            reason=reason,
        )

    def _waiting_chunk(self, row: ToolCallRow) -> Chunk:
        payload = {
            "tool_call_id": row.tool_call_id,
            "tool_name": row.displayed_tool_name,
            "args": row.displayed_args,
            "resume_schema": row.resume_schema,
        }
        if row.state == ToolCallState.AWAITING_APPROVAL:
            return self._chunk("tool-call-approval", **payload)
        return self._chunk("tool-call-suspended", suspend_payload=row.suspend_payload, **payload)


def _failed(row: ToolCallRow, error: str) -> ToolCallRow:
    row.state = str(ToolCallState.FAILED)
    row.result = {"error": error}
    row.is_error = True
    return row


def _result_message(row: ToolCallRow) -> dict[str, Any]:
    result = row.result
    content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    return {"role": "tool", "tool_call_id": row.tool_call_id, "content": content}
