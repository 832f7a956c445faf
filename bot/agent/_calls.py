"""Running the calls of a run that need no (more) decision: each started once (the started mark), its tool's
`execute` run (or a sub-agent's run), and its result, suspension or failure stored with the tool message the
model reads; a decision won in storage carried out. `RunDriver` hands its work to its `CallRunner`."""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot import metrics, telemetry
from bot.concurrency import waiting
from memory import Audit, StoredRun, StoredToolCall, ToolCallState, ToolPolicy
from tools import AgentToolContext, SchemaValidationError, Tool, ToolContext, to_jsonable

from ._driving import (
    ARGS_CHANGED,
    RequestOptions,
    RunDeps,
    Standing,
    SubAgent,
    WonDecision,
    cancelled_from_outside,
    disabled_error,
    result_message_of,
    tool_context_for,
)
from ._fingerprint import fingerprint
from ._previews import error_text
from .exceptions import SubAgentNotFoundError
from .types import AgentOutput, Chunk, ToolCallCheck

log = logging.getLogger(__name__)


class CallRunner:
    """Runs one run's calls and stores what became of them."""

    def __init__(self, deps: RunDeps, run: StoredRun, options: RequestOptions, standing: Standing) -> None:
        self.deps = deps
        self.run = run
        self.options = options
        self.runs = deps.runs
        self.standing = standing
        self._started: dict[str, datetime] = {}
        """Tool call id -> the time of this driver's own "started" mark: its result is stored only if nothing
        moved the call since (a stalled process's execution, interrupted and run again elsewhere, is not)."""

    async def work_on(
        self, calls: list[StoredToolCall], policies: Mapping[str, ToolPolicy] | None = None
    ) -> list[Chunk]:
        """Carry out calls that need no (more) decision, concurrently; the chunks of their outcomes.
        `policies`: tool call id -> its tool's policy, as this action read it already (when the call was
        proposed, or decided): not read again (see `_execute`)."""
        alone = len(calls) == 1  # then its result decides the run's next move too
        policies = policies or {}
        chunks: list[Chunk] = []
        for outcome in await asyncio.gather(
            *(self._work_on_one(call, policies.get(call.tool_call_id), decides_next=alone) for call in calls)
        ):
            chunks += outcome
        return chunks

    async def _work_on_one(self, call: StoredToolCall, policy: ToolPolicy | None, *, decides_next: bool) -> list[Chunk]:
        if call.state == ToolCallState.RUNNING:
            return await self._continue_sub_agent(call, decides_next=decides_next)
        return await self._execute(call, policy, decides_next=decides_next)

    async def _execute(
        self, row: StoredToolCall, policy: ToolPolicy | None = None, *, decides_next: bool
    ) -> list[Chunk]:
        """Run a call that is pending (no approval needed) or decided (approved, or resumed with data).
        `decides_next`: it is the driver's only work, so storing its result also makes the run's next move.

        The tool's policy is read, unless this action read it already (`policy`: when the call was proposed,
        or decided); a disable that came since is still met, by the started mark's own read of it. The
        `before_tool_call` hook runs first; then the call is marked `running` in storage
        (the "tool started" mark, one conditional UPDATE: whoever wins runs it, once), in the same
        statement as the last read of the policy (a disable committed before it wins); then `execute`.
        """
        tool = self.deps.find_tool(row.tool_name)
        if tool is None or row.fingerprint != fingerprint(row.tool_name, row.args):
            reason = ARGS_CHANGED if tool is not None else f"the tool {row.tool_name!r} is no longer available"
            return await self._store_result(
                row, ToolCallState.FAILED, {"error": reason}, is_error=True, decides_next=decides_next
            )
        policy = policy or await self.deps.policies.get(row.tool_name)
        sub_agent = self.deps.sub_agent_for(row.tool_name)
        not_started = await self._mark_started(row, policy, sub_agent, decides_next=decides_next)
        if not_started is not None:
            return not_started
        if sub_agent is not None:
            return await self._run_sub_agent(row, sub_agent, decides_next=decides_next)
        context = tool_context_for(row, tool)
        try:
            output = await self._call_tool(row, tool, policy, context)
        except asyncio.CancelledError as exc:
            if cancelled_from_outside():
                raise  # a shutdown: the run is left to the recovery (its call is found started)
            return await self._tool_failed(row, exc, decides_next=decides_next)
        except BaseException as exc:  # noqa: BLE001 - tool code: a SystemExit it raises must not stop the bot
            return await self._tool_failed(row, exc, decides_next=decides_next)
        return await self._store_tool_outcome(row, tool, context, output, decides_next=decides_next)

    async def _tool_failed(self, row: StoredToolCall, exc: BaseException, *, decides_next: bool) -> list[Chunk]:
        """What `execute` raised, whatever it was, as a failed call the model reads."""
        # the full text for operators; the model, the thread and the audit trail get it without secrets
        log.info("tool %s failed in run %s: %r", row.tool_name, self.run.id, exc)
        error = self.deps.redact(error_text(exc))
        return await self._store_result(row, ToolCallState.FAILED, {"error": error}, True, decides_next=decides_next)

    async def _mark_started(
        self, row: StoredToolCall, policy: ToolPolicy, sub_agent: SubAgent | None, *, decides_next: bool
    ) -> list[Chunk] | None:
        """Mark the call `running` unless its policy disables the tool or the `before_tool_call` hook answers
        for it: None once this caller holds the mark and runs the call; else the chunks of what became of
        it (blocked, answered by the hook, or none when another caller took it)."""
        if policy.disabled:
            return await self._blocked(row, policy.version, decides_next=decides_next)
        skipped, output = await self._before_tool_call(row)
        if skipped:
            return await self._store_result(row, ToolCallState.DONE, to_jsonable(output), decides_next=decides_next)
        # a sub-agent's run is named with the mark, so a recovery finds it and goes on with it
        child = {"child_run_id": uuid.uuid4().hex, "child_tool_call_id": None} if sub_agent is not None else {}
        started, disabled_by = await self.runs.start(row, held_by=None, **child)
        if disabled_by is not None:
            return await self._blocked(row, disabled_by, decides_next=decides_next)
        if not started:
            return []  # someone else took it: a call runs once
        if sub_agent is None and row.updated_at is not None:
            self._started[row.tool_call_id] = row.updated_at
        return None

    async def _call_tool(self, row: StoredToolCall, tool: Tool, policy: ToolPolicy, context: AgentToolContext) -> Any:
        """The tool's `execute` on the call's arguments, traced, while the run's turn serves others."""
        with telemetry.tool_call(row, policy, context):  # off: a no-op
            async with waiting():  # a tool's work is a wait for the turn: its work slot serves another
                return await tool.execute(
                    tool.parse_args(row.args),
                    ToolContext(
                        run_id=self.run.id,
                        tool_call_id=row.tool_call_id,
                        thread_id=self.run.thread_id,
                        resource_id=self.run.resource_id,
                        request_context=self.options.request_context,
                        agent=context,
                        idempotency_key=f"{self.run.id}:{row.tool_call_id}",
                        tool_name=row.tool_name,
                    ),
                )

    async def _store_tool_outcome(
        self, row: StoredToolCall, tool: Tool, context: AgentToolContext, output: Any, *, decides_next: bool
    ) -> list[Chunk]:
        """Store what `execute` came back with: a suspension (the call waits), or its output checked
        against the tool's `output_schema` (done, or failed when it does not fit)."""
        if context.suspend_error is not None:
            error = f"the tool suspended with a payload that does not fit its suspend_schema: {context.suspend_error}"
            return await self._store_result(
                row, ToolCallState.FAILED, {"error": error}, True, decides_next=decides_next
            )
        if context.suspended:
            await self._store_suspension(row, tool, context)
            return []
        output = to_jsonable(output)
        if tool.output_schema is not None:
            try:
                tool.output_schema.validate(output)
            except SchemaValidationError as exc:
                return await self._store_result(
                    row, ToolCallState.FAILED, {"error": f"output does not fit: {exc}"}, True, decides_next=decides_next
                )
        return await self._store_result(row, ToolCallState.DONE, output, decides_next=decides_next)

    async def _store_suspension(self, row: StoredToolCall, tool: Tool, context: AgentToolContext) -> None:
        """The call waits for resume data with what the tool suspended with; a live suspension (its call
        stays open here, an MCP server's question) is held by this process."""
        self._started.pop(
            row.tool_call_id, None
        )  # its answer may be decided elsewhere: what follows is not this mark's
        await self.runs.transition(
            row,
            ToolCallState.SUSPENDED,
            suspend_payload=context.suspended_with,
            resume_schema=context.resume_schema or (tool.resume_schema.json_schema if tool.resume_schema else None),
            resume_data=None,
            requires_approval=False,
            held_by=self.deps.owner if context.live else None,
        )
        if context.live:
            self.deps.hold(row)
        metrics.tool_run(row.tool_name, "suspended")

    async def _before_tool_call(self, row: StoredToolCall) -> tuple[bool, Any]:
        hook = self.deps.hooks.get("before_tool_call")
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

    async def _blocked(self, row: StoredToolCall, policy_version: int, *, decides_next: bool) -> list[Chunk]:
        """A decided or pending call whose tool an admin disabled before it started: it does not run, the
        model reads that it is disabled, and the audit trail says `blocked` (by that policy version)."""
        audit = Audit(
            action="blocked", detail="the tool is disabled by an admin's policy", policy_version=policy_version
        )
        return await self._store_result(
            row, ToolCallState.FAILED, {"error": disabled_error(row.tool_name)}, True, audit, decides_next=decides_next
        )

    async def _store_result(
        self,
        row: StoredToolCall,
        to: ToolCallState,
        result: Any,
        is_error: bool = False,
        audit: Audit | None = None,
        *,
        decides_next: bool = False,
    ) -> list[Chunk]:
        """Store a call's result and the tool message the model reads, in one statement; with
        `decides_next` (the call was this driver's only work) the run's next move is made with it
        (`RunStore.store_result_and_next_move`), kept for `_after_work`."""
        message = result_message_of(row.tool_call_id, result)
        error = result.get("error") if is_error and isinstance(result, dict) else None
        if audit is None:
            action = "executed" if to == ToolCallState.DONE else "failed"
            audit = Audit(action=action, detail=error and str(error)[:500])
        stored = {"result": result, "is_error": is_error}
        since = self._started.pop(row.tool_call_id, None)
        if decides_next:
            won, self.standing.next_move = await self.runs.store_result_and_next_move(
                row, to, run=self.run, messages=[message], audit=audit, owner=self.deps.owner,
                holds_run=self.standing.holds_run, since=since, **stored,
            )  # fmt: skip
        else:
            won = await self.runs.transition(
                row, to, messages=[message], run=self.run, audit=audit, since=since, **stored
            )
        if not won:
            log.warning("run %s: call %s was settled elsewhere; its result here is dropped", self.run.id, row.id)
            return []
        metrics.tool_run(row.tool_name, "error" if is_error else "ok")
        return [self.result_chunk(row)]

    async def carry_out_decision(self, call: StoredToolCall, decision: WonDecision, policy: ToolPolicy) -> list[Chunk]:
        if call.child_run_id is not None and call.state == ToolCallState.RUNNING:
            child = self._sub_agent_of(call)
            stream = await child.decide(
                call.child_run_id,
                call.child_tool_call_id,
                decision.decision,
                decided_by=decision.decided_by,
                via=decision.via,
            )
            # the supervisor's call settles outside `_work_on`: `_surface_waits_or_go_on` makes the next move after it
            chunks = await self._after_child(call, await stream.result(), decides_next=False)
            if decision.kind.refuses:
                chunks.insert(0, self._denied_chunk(call, decision.reason))
            return chunks
        if decision.kind.refuses:
            return [self._denied_chunk(call, decision.reason)]  # its tool message was stored with the decision
        return await self.work_on([call], {call.tool_call_id: policy})

    async def _continue_sub_agent(self, row: StoredToolCall, *, decides_next: bool) -> list[Chunk]:
        """Go on with the sub-agent run of a supervisor's call that was at work when its process stopped."""
        sub_agent = self._sub_agent_of(row)
        child_run = await self.runs.get_run(row.child_run_id) if row.child_run_id else None
        if child_run is None:
            raise RuntimeError(f"the sub-agent run of call {row.tool_call_id} is not stored")
        stream = await sub_agent.recover(child_run)
        return await self._after_child(row, await stream.result(), decides_next=decides_next)

    def _sub_agent_of(self, call: StoredToolCall) -> SubAgent:
        sub_agent = self.deps.sub_agent_for(call.tool_name)
        if sub_agent is None:
            raise SubAgentNotFoundError(self.deps.agent_id, call.tool_call_id, call.tool_name)
        return sub_agent

    async def _run_sub_agent(self, row: StoredToolCall, sub_agent: SubAgent, *, decides_next: bool) -> list[Chunk]:
        stream = await sub_agent.start(
            prompt=str(row.args.get("prompt", "")), parent=self.run, run_id=row.child_run_id, options=self.options
        )
        return await self._after_child(row, await stream.result(), decides_next=decides_next)

    async def _after_child(self, row: StoredToolCall, output: AgentOutput, *, decides_next: bool) -> list[Chunk]:
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
                    interrupted=inner.interrupted,
                    resume_schema=inner.resume_schema,
                    fingerprint=inner.fingerprint,
                    preview=inner.preview,
                    child_run_id=output.run_id,
                    child_tool_call_id=inner.tool_call_id,
                )
                return []
        if output.finish_reason == "error":
            return await self._store_result(
                row,
                ToolCallState.FAILED,
                {"error": output.error or "the sub-agent failed"},
                True,
                decides_next=decides_next,
            )
        return await self._store_result(row, ToolCallState.DONE, {"text": output.text}, decides_next=decides_next)

    def result_chunk(self, row: StoredToolCall) -> Chunk:
        return Chunk.tool_result(
            self.run.id,
            tool_call_id=row.tool_call_id,
            tool_name=row.tool_name,
            result=row.result,
            is_error=bool(row.is_error),
        )

    def _denied_chunk(self, row: StoredToolCall, reason: str | None) -> Chunk:
        return Chunk.denied(
            self.run.id, tool_call_id=row.tool_call_id, tool_name=row.displayed_tool_name, reason=reason
        )
