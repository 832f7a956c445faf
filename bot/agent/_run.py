"""The tool-calling loop of one run: ask the model, record its calls, run or park them, go on.

A `RunDriver` works on one stored run. It never holds a database transaction across a `yield`, so
whoever reads the stream may approve a call from inside its loop. Every call's fate is written to
storage before the chunk that announces it is yielded. While the driver works it keeps the run's
lease fresh (`runs.heartbeat_at`); the states it moves calls and runs through are in `memory.states`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot import metrics, telemetry
from bot.concurrency import waiting
from bot.redaction import NO_KNOWN_SECRETS
from memory import (
    Audit,
    CallColumns,
    Grant,
    GrantReader,
    Memory,
    PolicyReader,
    RuleEffect,
    RunStatus,
    RunStorage,
    StoredRun,
    StoredToolCall,
    ToolCallState,
    ToolPolicy,
    pair_tool_results,
)
from memory.states import (
    IN_PROGRESS_STATES,
    INTERRUPTED_FROM,
    INTERRUPTED_WAITS_IN,
    WAITING_STATES,
    DecisionKind,
    NextMove,
    shown_suspend_payload,
)
from memory.tables import utcnow
from tools import (
    AgentToolContext,
    ApprovalCheck,
    ApprovalRule,
    JsonValueError,
    SchemaValidationError,
    Tool,
    ToolContext,
    clean_text,
    read_json,
    rule_says_yes,
    to_jsonable,
)

from ._conditions import EVALUATION_TIMEOUT, RuleOutcome, joined, refused_error, rule_line, rule_outcome, timed_out
from ._fingerprint import fingerprint
from ._model import stream_step
from ._previews import STOPPED, error_text, preview_line, run_preview
from ._stream import AgentStream
from .exceptions import AgentError, DatabaseAwayError, ModelError, RunTakenOverError, SubAgentNotFoundError
from .types import AgentOutput, Chunk, Decision, FinishReason, GrantPayload, ToolCallCheck, WaitingCallPayload

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

ARGS_CHANGED = "the arguments changed after approval was requested; the call was not run"
INTERRUPTED = (
    "The tool started, but the bot stopped before its result was stored: it may or may not have taken effect. "
    "Approve to run it again, or decline."
)
TAKEN_OVER = (
    "This process stalled for longer than the run's lease, and another process took the run over meanwhile: "
    "the answer comes from there, and nothing of what this one was doing was stored."
)
LEFT_TO_RECOVERY = (
    "The database could not be reached for a moment, so this run stopped where it was; it is picked up again "
    "there (by this process or another) once its lease runs out. Nothing failed, and nothing needs to be sent again."
)


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


class RunDriver:
    def __init__(
        self,
        deps: RunDeps,
        run: StoredRun,
        options: RequestOptions,
        *,
        messages: list[dict[str, Any]] | None = None,
    ):
        self.deps = deps
        self.run = run
        self.options = options
        self.runs = deps.runs
        self.usage: dict[str, int] = {}
        self._new_messages = messages
        """The messages of a run just created without thread memory, or as the first run of a new thread:
        they are all its first step would read, so it reads nothing."""
        self._next_move: NextMove | None = None
        """The run's next move, when the transaction that stored the step or the one result at work already
        made it (see `_after_work`)."""
        self._policy_versions: dict[str, int] = {}
        """Tool call id -> the version of its tool's policy when it was proposed (for the audit trail)."""
        self._blocked_ids: set[str] = set()
        """Tool call ids of the calls the model made to a disabled tool (audited as `blocked`)."""
        self._granted: dict[str, Grant] = {}
        """Tool call id -> the standing grant that lets it run without asking (audited as `grant_used`)."""
        self._trials: dict[str, tuple[str, dict[str, Any]]] = {}
        """Tool call id -> what a trial rule would have done to it (`would_require`...) and that rule."""
        self._holds_run = run.status == RunStatus.RUNNING
        """True while this driver is the run's worker (the run is `running` on its behalf)."""
        self._started: dict[str, datetime] = {}
        """Tool call id -> the time of this driver's own "started" mark: its result is stored only if nothing
        moved the call since (a stalled process's execution, interrupted and run again elsewhere, is not)."""

    # --- entry points -----------------------------------------------------------------------
    def loop(self, notes: list[str] | None = None) -> AsyncIterator[Chunk]:
        """Drive the run from where it stands until it finishes or parks a call."""
        return self._guarded(self._steps(notes))

    def after_decision(self, call: StoredToolCall, decision: WonDecision, policy: ToolPolicy) -> AsyncIterator[Chunk]:
        """Carry out a decision already won in storage, then go on with the run if its step is settled.

        `policy` is the tool's policy as read for the decision, right before it was stored."""
        return self._guarded(self._decided(call, decision, policy))

    def recover(self, interrupted: list[StoredToolCall]) -> AsyncIterator[Chunk]:
        """Go on with a run taken over from a process that stopped (see `prepare_recovery`)."""
        return self._guarded(self._recovered(interrupted))

    async def _guarded(self, work: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
        """Keep the lease while `work` runs; a failure fails the run and tells the reader."""
        telemetry.describe_turn(self.deps.agent_id, self.run)
        at_work = self.deps.at_work
        at_work[self.run.id] += 1
        keeper = asyncio.get_running_loop().create_task(self._keep_lease(), name=f"lease {self.run.id}")
        try:
            async for chunk in work:
                yield chunk
        except RunTakenOverError as exc:  # the run is another process's now: leave it as it is
            log.warning("%s", exc)
            self._holds_run = False
            yield Chunk.error(self.run.id, TAKEN_OVER)
            yield Chunk.finish(self.run.id, "error", self.usage)
        except DatabaseAwayError as exc:
            # not a failure of the run: storing one would fail too, and telling the reader so would be false.
            # The run's lease goes stale and recovery (any replica's) goes on from what was stored.
            log.warning("run %s: the database went away (%s); left to recovery", self.run.id, exc)
            self._holds_run = False
            yield Chunk.error(self.run.id, LEFT_TO_RECOVERY, interrupted=True)
            yield Chunk.finish(self.run.id, "error", self.usage)
        except ModelError as exc:
            log.warning("run %s: %s", self.run.id, exc)
            async for chunk in self._fail(str(exc)):
                yield chunk
        except AgentError as exc:  # the runtime's own errors are written for people: say what it was
            log.exception("run %s failed", self.run.id)
            async for chunk in self._fail(f"{type(exc).__name__}: {exc}"):
                yield chunk
        except Exception:
            # the details (a database's error text, a stack) are for operators, not for the thread
            log.exception("run %s failed", self.run.id)
            async for chunk in self._fail(internal_failure(self.run.id)):
                yield chunk
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            at_work[self.run.id] -= 1
            if at_work[self.run.id] <= 0:
                del at_work[self.run.id]

    async def _keep_lease(self) -> None:
        while True:
            await asyncio.sleep(self.options.heartbeat_interval)
            try:
                await self.runs.heartbeat(self.run.id, self.deps.owner)
            except Exception:  # noqa: BLE001 - a missed beat is retried; the work goes on
                log.warning("run %s: could not refresh the lease", self.run.id, exc_info=True)

    # --- the loop ---------------------------------------------------------------------------
    async def _steps(self, notes: list[str] | None = None) -> AsyncIterator[Chunk]:
        while True:
            if self.run.step >= self.run.max_steps:
                yield await self._finish(RunStatus.COMPLETED, "length")
                return
            reply = None
            async for part in stream_step(
                self.deps.model_client,
                self.deps.model,
                await self._context(notes),
                self.deps.tool_specs(),
                timeout=self.options.model_timeout,
            ):
                if isinstance(part, str):
                    yield Chunk.text_delta(self.run.id, part)
                else:
                    reply = part
            assert reply is not None
            notes = None
            for key, value in reply.usage.items():
                self.usage[key] = self.usage.get(key, 0) + value
            self.run.step += 1
            if not reply.tool_calls:
                yield Chunk.step_finish(self.run.id)
                yield await self._finish(RunStatus.COMPLETED, "stop", messages=[reply.message()], answers_step=True)
                return
            await self._make_call_ids_unique(reply.tool_calls)
            rows = [await self._record(position, tool_call) for position, tool_call in enumerate(reply.tool_calls)]
            # the dry runs, before anything of the step is stored or shown: their results go with the approvals
            await self._previews([row for row in rows if row.state == ToolCallState.AWAITING_APPROVAL])
            failed = [_result_message(r) for r in rows if r.state == ToolCallState.FAILED]
            pending = any(r.state == ToolCallState.PENDING for r in rows)
            waits = any(r.state in WAITING_STATES for r in rows)
            # with nothing to run here, what follows is known now: a waiting call parks the run with the step
            await self.runs.record_step(
                self.run,
                reply.message(),
                rows,
                results=failed,
                audits=self._requested(rows),
                suspend=waits and not pending,
            )
            if not pending:
                self._next_move = NextMove.SUSPENDED if waits else NextMove.CONTINUE
            for row in rows:
                yield Chunk.tool_call(
                    self.run.id, tool_call_id=row.tool_call_id, tool_name=row.tool_name, args=row.args,
                    grant=_grant_payload(self._granted.get(row.tool_call_id)),
                )  # fmt: skip
            for row in rows:
                if row.state == ToolCallState.FAILED:
                    yield self._result_chunk(row)
            for chunk in await self._work_on([row for row in rows if row.state == ToolCallState.PENDING]):
                yield chunk
            waiting, move = await self._after_work(rows)
            for chunk in waiting:
                yield chunk
            yield Chunk.step_finish(self.run.id)
            if move != NextMove.CONTINUE:
                yield Chunk.finish(self.run.id, move.finish_reason, self.usage)
                return

    async def _decided(self, call: StoredToolCall, decision: WonDecision, policy: ToolPolicy) -> AsyncIterator[Chunk]:
        kind, actor, via = decision.kind, decision.decided_by, decision.via
        telemetry.decided(call, kind=kind.recorded_as, outcome=kind.outcome, actor=actor, via=via)
        if call.child_run_id is None:  # a supervisor's call passes the decision down: the inner call counts
            metrics.waited(call.displayed_tool_name, kind.outcome, since=call.suspended_at, until=call.decided_at)
        for chunk in await self._carry_out_decision(call, decision, policy):
            yield chunk
        async for chunk in self._surface_waits_or_go_on([call]):
            yield chunk

    async def _recovered(self, interrupted: list[StoredToolCall]) -> AsyncIterator[Chunk]:
        calls = await self.runs.step_calls(self.run.id, self.run.step)
        if not calls and self._holds_run:
            async for chunk in self._steps():  # it stopped during a model call: ask again
                yield chunk
            return
        work = [c for c in calls if c.state in IN_PROGRESS_STATES]
        for chunk in await self._work_on(work):
            yield chunk
        async for chunk in self._surface_waits_or_go_on([*interrupted, *work]):
            yield chunk

    async def _surface_waits_or_go_on(self, touched: list[StoredToolCall]) -> AsyncIterator[Chunk]:
        """After calls were carried out outside the loop: surface what waits, or go on with the run."""
        waiting, move = await self._after_work(touched)
        for chunk in waiting:
            yield chunk
        if move != NextMove.CONTINUE:
            yield Chunk.finish(self.run.id, move.finish_reason, self.usage)
            return
        async for chunk in self._steps():
            yield chunk

    async def _after_work(self, touched: list[StoredToolCall]) -> tuple[list[Chunk], NextMove]:
        """Make the run's `NextMove` after a step's work: `CONTINUE` (this driver asks the model next),
        `SUSPENDED` (a call waits), or `HANDED_OFF` (another process goes on); with the chunks of calls
        that now wait.

        Whoever settles the last call of a step continues the run (`RunStore.after_work`). When the
        transaction that recorded the step, or the result of the one call at work, already decided it,
        nothing more is read or written here.
        """
        move, self._next_move = self._next_move, None
        if move is None:
            move = await self.runs.after_work(self.run, self.deps.owner, holds_run=self._holds_run)
        self._holds_run = move == NextMove.CONTINUE
        waiting = [self._waiting_chunk(row) for row in touched if row.state in WAITING_STATES]
        return waiting, move

    async def _make_call_ids_unique(self, tool_calls: list[dict[str, Any]]) -> None:
        """Give a call a fresh id when the model reuses one (some servers send "call_0" every step)."""
        if self.run.step == 1:
            return  # the first step: the run has no calls yet
        taken = await self.runs.call_ids(self.run.id)
        for position, tool_call in enumerate(tool_calls):
            if tool_call["id"] in taken:
                tool_call["id"] = f"{tool_call['id']}-s{self.run.step}p{position}"
            taken.add(tool_call["id"])

    async def _work_on(self, calls: list[StoredToolCall], policy: ToolPolicy | None = None) -> list[Chunk]:
        """Carry out calls that need no (more) decision, concurrently; the chunks of their outcomes.
        `policy`: of the one call a decision just read it for (see `_execute`)."""
        alone = len(calls) == 1  # then its result decides the run's next move too
        chunks: list[Chunk] = []
        for outcome in await asyncio.gather(*(self._work_on_one(call, policy, decides_next=alone) for call in calls)):
            chunks += outcome
        return chunks

    async def _work_on_one(self, call: StoredToolCall, policy: ToolPolicy | None, *, decides_next: bool) -> list[Chunk]:
        if call.state == ToolCallState.RUNNING:
            return await self._continue_sub_agent(call, decides_next=decides_next)
        return await self._execute(call, policy, decides_next=decides_next)

    # --- one step ---------------------------------------------------------------------------
    async def _record(self, position: int, tool_call: dict[str, Any]) -> StoredToolCall:
        """A row for one proposed call: pending, awaiting approval, or failed with the reason."""
        name = tool_call["function"]["name"]
        row = StoredToolCall(
            run_id=self.run.id,
            tool_call_id=tool_call["id"],
            agent_id=self.deps.agent_id,
            thread_id=self.run.thread_id,
            resource_id=self.run.resource_id,
            step=self.run.step,
            position=position,
            tool_name=name,
            args=None,
            state=str(ToolCallState.PENDING),
            requires_approval=False,
            is_error=False,
            approval_count=0,
        )
        try:  # finite numbers only, text the databases store (tools._json_values)
            row.args = read_json(tool_call["function"]["arguments"] or "{}")
        except JsonValueError as exc:
            row.args = clean_text(tool_call["function"]["arguments"])
            return _failed(row, f"the arguments are not valid JSON ({exc}); send a JSON object")
        tool = self.deps.find_tool(name)
        if tool is None:
            return _failed(row, f"there is no tool {name!r}; available: {', '.join(self.deps.tool_names())}")
        try:
            tool.parse_args(row.args)
        except SchemaValidationError as exc:
            return _failed(row, f"invalid arguments for {name!r}: {exc}")
        row.fingerprint = fingerprint(name, row.args)
        policy = await self.deps.policies.get(name)
        self._policy_versions[row.tool_call_id] = policy.version
        if policy.disabled:
            self._blocked_ids.add(row.tool_call_id)
            return _failed(row, disabled_error(name))
        outcome = await self._rules(tool, row, policy)
        if outcome.effect == RuleEffect.REFUSE:
            self._blocked_ids.add(row.tool_call_id)
            return _failed(row, refused_error(name, row.rule))
        code_requires = await self._approval_required(tool, row.args)
        # a policy (or its rule) adds an approval; it never removes one the code asks for
        if outcome.effect == RuleEffect.ALLOW:
            needs = code_requires
            if needs:
                row.rule = None  # the code asks for approval, and a rule never removes that: it changed nothing
        else:
            needs = policy.adds_approval or code_requires or outcome.effect == RuleEffect.REQUIRE_APPROVAL
        self._note_trial(row, outcome.trial, needs=needs, code_requires=code_requires)
        if needs:
            grant = await self._live_grant(row, policy)
            if grant is not None:  # an approver allowed this tool in this thread for a while: it runs now
                self._granted[row.tool_call_id] = grant
                return row
            row.state = str(ToolCallState.AWAITING_APPROVAL)
            row.requires_approval = True
            row.suspended_at = utcnow()
            telemetry.waits_for_approval(row, policy)
        return row

    async def _rules(self, tool: Tool, row: StoredToolCall, policy: ToolPolicy) -> RuleOutcome:
        """What the policy's rules say about the call; the deciding rule is kept on the row (fixed with it).
        Evaluated in a worker thread, bounded by `EVALUATION_TIMEOUT`: a slow rule never holds the event loop."""
        if not policy.rules or self.deps.sub_agent_for(tool.id) is not None:
            return RuleOutcome()
        context = self.options.request_context
        evaluation = asyncio.to_thread(
            rule_outcome,
            policy.rules,
            args=row.args,
            schema=tool.parameters(),
            requester=context.get("requester") or self.run.resource_id or "",
            channel=context.get("channel") or "",
            tool=tool.id,
            now=utcnow(),
        )
        try:
            outcome = await asyncio.wait_for(evaluation, EVALUATION_TIMEOUT)
        except TimeoutError:  # the thread runs on to its end (bounded by the size limits); the call asks
            log.warning("the rules of %s took longer than %s s in run %s", tool.id, EVALUATION_TIMEOUT, self.run.id)
            outcome = timed_out()
        row.rule = outcome.stored
        return outcome

    def _note_trial(
        self, row: StoredToolCall, trial: dict[str, Any] | None, *, needs: bool, code_requires: bool
    ) -> None:
        """Remember what a trial rule would have changed about this call (audited with the step)."""
        if trial is None:
            return
        effect = trial["effect"]
        if effect == RuleEffect.REFUSE:
            self._trials[row.tool_call_id] = ("would_refuse", trial)
        elif effect == RuleEffect.REQUIRE_APPROVAL and not needs:
            self._trials[row.tool_call_id] = ("would_require", trial)
        elif effect == RuleEffect.ALLOW and needs and not code_requires:
            self._trials[row.tool_call_id] = ("would_allow", trial)

    async def _live_grant(self, row: StoredToolCall, policy: ToolPolicy) -> Grant | None:
        """The live standing grant that covers this call, read now with the policy as it is now: none when
        the policy no longer allows grants (or needs several approvals), in a run without a thread, or when
        the only grant was given by the requester while the policy refuses self-approval."""
        if self.deps.grants is None or not policy.allows_grants or not self.run.thread_id:
            return None
        requester = self.options.request_context.get("requester") or self.run.resource_id
        return await self.deps.grants.matching(
            agent_id=self.deps.agent_id,
            tool_name=row.tool_name,
            thread_id=self.run.thread_id,
            fingerprint=row.fingerprint,
            longest=policy.grant_seconds or 0,
            not_granted_by=None if policy.self_approval else requester,
        )

    async def _previews(self, rows: list[StoredToolCall]) -> None:
        """Run the dry runs (`preview=`) of a step's calls that will wait for approval, concurrently; what each
        said, or that it failed, is kept on its row. Never `execute`, never the started mark: a preview changes
        nothing the runtime knows of, and its failure blocks nothing.

        Which previews start is stored first: one met again at this step after a crash (the process died
        while it ran, before the step was stored) is not run a second time (see `bot.agent._previews`)."""
        rows = [row for row in rows if self._preview_of(row) is not None]
        if not rows:
            return
        marks = self.run.previews_started or {}
        started_before = set(marks.get("calls") or ()) if marks.get("step") == self.run.step else set()
        await self.runs.mark_previews_started(self.run, [row.fingerprint for row in rows if row.fingerprint])
        for row in rows:
            if row.fingerprint in started_before:
                log.warning(
                    "run %s: the preview of %s started before a stop; not run again", self.run.id, row.tool_call_id
                )
                row.preview = {"ok": False, "error": STOPPED}
        await asyncio.gather(*(self._preview(row) for row in rows if row.preview is None))

    def _preview_of(self, row: StoredToolCall) -> Tool | None:
        tool = self.deps.find_tool(row.tool_name)
        return tool if tool is not None and tool.preview is not None else None

    async def _preview(self, row: StoredToolCall) -> None:
        tool = self._preview_of(row)
        assert tool is not None
        context = ToolContext(
            run_id=self.run.id,
            tool_call_id=row.tool_call_id,
            thread_id=self.run.thread_id,
            resource_id=self.run.resource_id,
            request_context=self.options.request_context,
            agent=AgentToolContext(tool.suspend_schema),
            idempotency_key=f"{self.run.id}:{row.tool_call_id}",
        )
        row.preview = await run_preview(tool, row, context, redact=self.deps.redact)

    def _requested(self, rows: list[StoredToolCall]) -> list[tuple[StoredToolCall, Audit]]:
        """The audit lines of a step's calls: requested by the speaker (those that wait for approval, and
        those a standing grant lets run, with `grant_used`), or blocked (those the model made to a disabled tool)."""
        context = self.options.request_context
        requester = context.get("requester") or self.run.resource_id
        audits = []
        for row in rows:
            version = self._policy_versions.get(row.tool_call_id)
            if row.tool_call_id in self._trials:
                action, trial = self._trials[row.tool_call_id]
                audits.append(
                    (
                        row,
                        Audit(
                            action=action, actor=requester, policy_version=version, detail=f"trial {rule_line(trial)}"
                        ),
                    )
                )
            if row.state == ToolCallState.AWAITING_APPROVAL:
                detail = joined(rule_line(row.rule), preview_line(row.preview))
                audits.append((row, Audit(action="requested", actor=requester, policy_version=version, detail=detail)))
            elif row.rule and row.tool_call_id not in self._blocked_ids and row.tool_call_id not in self._granted:
                detail = f"runs without asking: {rule_line(row.rule)}"
                audits.append((row, Audit(action="requested", actor=requester, policy_version=version, detail=detail)))
            elif row.tool_call_id in self._granted:
                grant = self._granted[row.tool_call_id]
                detail = "runs without asking: " + grant.describe()
                audits.append((row, Audit(action="requested", actor=requester, policy_version=version, detail=detail)))
                audits.append(
                    (row, Audit(action="grant_used", actor=grant.granted_by, policy_version=version, detail=detail))
                )
            elif row.tool_call_id in self._blocked_ids and row.rule:
                detail = f"an admin's rule refused the call, so it was not run: {rule_line(row.rule)}"
                audits.append((row, Audit(action="blocked", actor=requester, policy_version=version, detail=detail)))
            elif row.tool_call_id in self._blocked_ids:
                detail = "an admin's policy disabled the tool, so the call was not run"
                audits.append((row, Audit(action="blocked", actor=requester, policy_version=version, detail=detail)))
        return audits

    async def _approval_required(self, tool: Tool, args: Any) -> bool:
        """The contract's rule: the tool's callable decides alone; else the tool's flag OR the request's rule."""
        if self.deps.sub_agent_for(tool.id) is not None:
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
    async def _execute(
        self, row: StoredToolCall, policy: ToolPolicy | None = None, *, decides_next: bool
    ) -> list[Chunk]:
        """Run a call that is pending (no approval needed) or decided (approved, or resumed with data).
        `decides_next`: it is the driver's only work, so storing its result also makes the run's next move.

        The tool's policy is read again (it may have changed), unless the decision just read it
        (`policy`). The `before_tool_call` hook runs first; then the call is marked `running` in storage
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
        context = _tool_context_for(row, tool)
        try:
            output = await self._call_tool(row, tool, policy, context)
        except asyncio.CancelledError as exc:
            if _cancelled_from_outside():
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
        """Store a call's result and the tool message the model reads, in one transaction; with
        `decides_next` (the call was this driver's only work) the same transaction makes the run's next
        move (`RunStore.after_work`), kept for `_after_work`."""
        message = _result_message_of(row.tool_call_id, result)
        error = result.get("error") if is_error and isinstance(result, dict) else None
        if audit is None:
            action = "executed" if to == ToolCallState.DONE else "failed"
            audit = Audit(action=action, detail=error and str(error)[:500])
        stored = {"result": result, "is_error": is_error}
        since = self._started.pop(row.tool_call_id, None)
        if decides_next:
            won, self._next_move = await self.runs.store_result_and_next_move(
                row, to, run=self.run, messages=[message], audit=audit, owner=self.deps.owner,
                holds_run=self._holds_run, since=since, **stored,
            )  # fmt: skip
        else:
            won = await self.runs.transition(
                row, to, messages=[message], run=self.run, audit=audit, since=since, **stored
            )
        if not won:
            log.warning("run %s: call %s was settled elsewhere; its result here is dropped", self.run.id, row.id)
            return []
        metrics.tool_run(row.tool_name, "error" if is_error else "ok")
        return [self._result_chunk(row)]

    async def _carry_out_decision(self, call: StoredToolCall, decision: WonDecision, policy: ToolPolicy) -> list[Chunk]:
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
        return await self._work_on([call], policy)

    # --- recovery ---------------------------------------------------------------------------
    async def prepare_recovery(self) -> list[StoredToolCall]:
        """Turn each call of the current step that started but never stored a result into an interrupted
        approval (it is never re-run on its own); return those calls. A supervisor's call whose sub-agent
        run exists is left to `recover`, which goes on with that run."""
        interrupted = []
        for call in await self.runs.step_calls(self.run.id, self.run.step):
            # a live question whose process stopped, answered or not, may have done part of its work
            held = call.held_by is not None and call.state in (ToolCallState.SUSPENDED, ToolCallState.APPROVED)
            if call.state != ToolCallState.RUNNING and not held:
                continue
            if call.child_run_id is not None and await self.runs.get_run(call.child_run_id) is not None:
                continue
            payload: dict[str, Any] = {"message": INTERRUPTED}
            if call.suspend_payload is not None:
                payload["suspended_with"] = _suspended_with(call)
            waits_again: CallColumns = {
                "held_by": None,
                "requires_approval": True,
                "suspend_payload": payload,
                "interrupted": True,
                "resume_schema": None,
                "decision": None,
                "decided_by": None,
                "decided_at": None,
                "reason": None,
                "child_run_id": None,
                "child_tool_call_id": None,
                "preview": None,
                "approvals": None,
                "approval_count": 0,
            }
            if held:  # a live question's answer belonged to the call that stopped: approving starts it anew
                waits_again["resume_data"] = None
            if await self.runs.transition(
                call,
                INTERRUPTED_WAITS_IN,
                allowed_from=INTERRUPTED_FROM,
                **waits_again,
                audit=Audit(action="interrupted", via="recovery", detail="the process stopped while the tool ran"),
            ):
                interrupted.append(call)
        return interrupted

    async def _continue_sub_agent(self, row: StoredToolCall, *, decides_next: bool) -> list[Chunk]:
        """Go on with the sub-agent run of a supervisor's call that was at work when its process stopped."""
        sub_agent = self._sub_agent_of(row)
        child_run = await self.runs.get_run(row.child_run_id) if row.child_run_id else None
        if child_run is None:
            raise RuntimeError(f"the sub-agent run of call {row.tool_call_id} is not stored")
        stream = await sub_agent.recover(child_run)
        return await self._after_child(row, await stream.result(), decides_next=decides_next)

    # --- sub-agents -------------------------------------------------------------------------
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

    # --- endings and chunks -----------------------------------------------------------------
    async def _finish(
        self,
        status: RunStatus,
        finish_reason: FinishReason,
        messages: Sequence[dict[str, Any]] = (),
        *,
        answers_step: bool = False,
    ) -> Chunk:
        """End the run; with `answers_step`, with the model's final answer to the step it asked at (the step
        before `run.step`), stored only if the run is still there (`RunStore.record_step`'s fence)."""
        won = await self.runs.move_run(
            self.run,
            status,
            only_from=[RunStatus.RUNNING],
            from_step=self.run.step - 1 if answers_step else None,
            messages=messages,
            step=self.run.step,
            finish_reason=finish_reason,
            owner=None,
        )
        if answers_step and not won:
            raise RunTakenOverError(
                f"run {self.run.id} went on in another process while this one was stalled: its answer is not stored"
            )
        self._holds_run = False
        self.deps.forget_request_rule(self.run.id)
        return Chunk.finish(self.run.id, finish_reason, self.usage)

    async def _fail(self, message: str) -> AsyncIterator[Chunk]:
        message = self.deps.redact(message)  # the full text is in the log already
        try:
            await self.runs.move_run(self.run, RunStatus.FAILED, finish_reason="error", error=message, owner=None)
        except Exception:
            log.exception("run %s: could not store the failure", self.run.id)
        self._holds_run = False
        self.deps.forget_request_rule(self.run.id)
        yield Chunk.error(self.run.id, message)
        yield Chunk.finish(self.run.id, "error", self.usage)

    async def _context(self, notes: list[str] | None) -> list[dict[str, Any]]:
        # one system message, first: some OpenAI-compatible servers accept no other place for it
        system = "\n\n".join(part for part in [self.deps.instructions, *(notes or [])] if part)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if self._new_messages is not None:  # the run's first step: what it was started with is all there is
            history, self._new_messages = self._new_messages, None
            if self.run.uses_memory and self.deps.memory is not None:
                history = self.deps.memory.window_of(history)
        elif self.run.uses_memory and self.deps.memory is not None and self.run.thread_id is not None:
            history = await self.deps.memory.window(self.run.thread_id)
        else:
            history = [m for group in pair_tool_results(await self.runs.run_messages(self.run.id)) for m in group]
        return messages + history

    def _result_chunk(self, row: StoredToolCall) -> Chunk:
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

    def _waiting_chunk(self, row: StoredToolCall) -> Chunk:
        payload = WaitingCallPayload(
            tool_call_id=row.tool_call_id,
            tool_name=row.displayed_tool_name,
            args=row.displayed_args,
            resume_schema=row.resume_schema,
            suspend_payload=shown_suspend_payload(row.suspend_payload, interrupted=row.interrupted),
            interrupted=row.interrupted,
            preview=row.preview,
        )
        return Chunk.waiting(
            self.run.id, requires_approval=row.state == ToolCallState.AWAITING_APPROVAL, payload=payload
        )


def disabled_error(tool_name: str) -> str:
    """The result of a call to a tool an admin's policy disabled: a fact, said so that the model may pass
    it on and a front end may show it as it is (no instruction to the model in it)."""
    return f"The tool {tool_name!r} is disabled by an admin's policy, so it was not run."


def expired_message(call: StoredToolCall, reason: str | None) -> dict[str, Any]:
    """The tool message the model reads when nobody decided a call before its policy's expiry."""
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


def _suspended_with(call: StoredToolCall) -> Any:
    """What the call's tool suspended with, also after an interruption wrapped it."""
    if call.interrupted and isinstance(call.suspend_payload, dict):
        return call.suspend_payload.get("suspended_with")
    return call.suspend_payload


def _cancelled_from_outside() -> bool:
    """Whether the running task was cancelled (a shutdown, a stream closed), as opposed to tool code that
    raised `CancelledError` by itself."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _tool_context_for(row: StoredToolCall, tool: Tool) -> AgentToolContext:
    """What the tool is handed of its call's wait: the resume data, what it suspended with when it was
    answered, and the answer's action (an MCP server's `accept`, `decline`, `cancel`)."""
    decided = DecisionKind.of_recorded(row.decision)
    answer_action = decided.answer_action if decided is not None and decided.answers else None
    answered = row.resume_data is not None or answer_action is not None
    return AgentToolContext(
        tool.suspend_schema,
        resume_data=row.resume_data,
        suspend_payload=_suspended_with(row) if answered else None,
        answer_action=answer_action,
    )


def internal_failure(run_id: str) -> str:
    """What a reader is told of a run that failed inside the bot: no internals, where to look."""
    return f"The bot hit an internal error and stopped this run; the details are in its log (run {run_id})."


def _failed(row: StoredToolCall, error: str) -> StoredToolCall:
    row.state = str(ToolCallState.FAILED)
    row.result = {"error": error}
    row.is_error = True
    return row


def _result_message_of(tool_call_id: str, result: Any) -> dict[str, Any]:
    content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}


def _result_message(row: StoredToolCall) -> dict[str, Any]:
    return _result_message_of(row.tool_call_id, row.result)


def _grant_payload(grant: Grant | None) -> GrantPayload | None:
    """What a front end shows of the standing grant a call runs under (None: it runs under none)."""
    if grant is None:
        return None
    return GrantPayload(
        grant_id=grant.id, granted_by=grant.granted_by, expires_at=grant.expires_at.isoformat(timespec="seconds")
    )
