"""The tool-calling loop of one run: ask the model, record its calls, run or park them, go on.

A `RunDriver` works on one stored run. It never holds a database transaction across a `yield`, so
whoever reads the stream may approve a call from inside its loop. Every call's fate is written to
storage before the chunk that announces it is yielded. While the driver works it keeps the run's
lease fresh (`runs.heartbeat_at`); the states it moves calls and runs through are in `memory.states`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from bot import metrics, telemetry
from memory import (
    Audit,
    CallColumns,
    RunStatus,
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
    NextMove,
    shown_suspend_payload,
)

from ._calls import CallRunner
from ._driving import (
    RequestOptions,
    RunDeps,
    Standing,
    WonDecision,
    grant_payload,
    internal_failure,
    result_message,
    suspended_with,
)
from ._model import stream_step
from ._proposals import Proposals
from .exceptions import AgentError, DatabaseAwayError, ModelError, RunTakenOverError
from .types import Chunk, FinishReason, WaitingCallPayload

log = logging.getLogger(__name__)

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


class RunDriver:
    """The loop of one stored run: it asks the model, hands the proposed calls to its `Proposals` and their
    work to its `CallRunner`, and makes the run's next move."""

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
        self.standing = Standing(holds_run=run.status == RunStatus.RUNNING)
        """Whether this driver is the run's worker, and the run's next move when it is known already."""
        self.proposals = Proposals(deps, run, options)
        """What becomes of the calls the model proposes, step by step."""
        self.calls = CallRunner(deps, run, options, self.standing)
        """Runs the calls and stores their outcomes."""

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
            self.standing.holds_run = False
            yield Chunk.error(self.run.id, TAKEN_OVER, taken_over=True)
            yield Chunk.finish(self.run.id, "error", self.usage)
        except DatabaseAwayError as exc:
            # not a failure of the run: storing one would fail too, and telling the reader so would be false.
            # The run's lease goes stale and recovery (any replica's) goes on from what was stored.
            log.warning("run %s: the database went away (%s); left to recovery", self.run.id, exc)
            self.standing.holds_run = False
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
                # the step ends once its answer is stored: a reader takes back the text of a step the fence
                # refused (RunTakenOverError), which is told before any step-finish
                finished = await self._finish(
                    RunStatus.COMPLETED, "stop", messages=[reply.message()], answers_step=True
                )
                yield Chunk.step_finish(self.run.id)
                yield finished
                return
            await self._make_call_ids_unique(reply.tool_calls)
            rows = [
                await self.proposals.record(position, tool_call) for position, tool_call in enumerate(reply.tool_calls)
            ]
            # the dry runs, before anything of the step is stored or shown: their results go with the approvals
            await self.proposals.previews([row for row in rows if row.state == ToolCallState.AWAITING_APPROVAL])
            failed = [result_message(r) for r in rows if r.state == ToolCallState.FAILED]
            pending = any(r.state == ToolCallState.PENDING for r in rows)
            waits = any(r.state in WAITING_STATES for r in rows)
            # with nothing to run here, what follows is known now: a waiting call parks the run with the step
            await self.runs.record_step(
                self.run,
                reply.message(),
                rows,
                results=failed,
                audits=self.proposals.requested(rows),
                suspend=waits and not pending,
            )
            if not pending:
                self.standing.next_move = NextMove.SUSPENDED if waits else NextMove.CONTINUE
            for row in rows:
                yield Chunk.tool_call(
                    self.run.id, tool_call_id=row.tool_call_id, tool_name=row.tool_name, args=row.args,
                    grant=grant_payload(self.proposals.granted.get(row.tool_call_id)),
                )  # fmt: skip
            for row in rows:
                if row.state == ToolCallState.FAILED:
                    yield self.calls.result_chunk(row)
            pending_rows = [row for row in rows if row.state == ToolCallState.PENDING]
            for chunk in await self.calls.work_on(pending_rows, self.proposals.policies):
                yield chunk
            waiting, move = await self._after_work(rows, self.proposals.policies)
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
        for chunk in await self.calls.carry_out_decision(call, decision, policy):
            yield chunk
        async for chunk in self._surface_waits_or_go_on(
            [call], {call.tool_call_id: policy}, settled_in_turn=decision.settled_in_turn
        ):
            yield chunk

    async def _recovered(self, interrupted: list[StoredToolCall]) -> AsyncIterator[Chunk]:
        calls = await self.runs.step_calls(self.run.id, self.run.step)
        if not calls and self.standing.holds_run:
            async for chunk in self._steps():  # it stopped during a model call: ask again
                yield chunk
            return
        work = [c for c in calls if c.state in IN_PROGRESS_STATES]
        for chunk in await self.calls.work_on(work):
            yield chunk
        async for chunk in self._surface_waits_or_go_on([*interrupted, *work]):
            yield chunk

    async def _surface_waits_or_go_on(
        self,
        touched: list[StoredToolCall],
        policies: Mapping[str, ToolPolicy] | None = None,
        *,
        settled_in_turn: bool = False,
    ) -> AsyncIterator[Chunk]:
        """After calls were carried out outside the loop: surface what waits, or go on with the run
        (`settled_in_turn`: a decision settled the call in the run's turn, see `WonDecision`). `policies`:
        tool call id -> its tool's policy, as this action read it (see `_after_work`)."""
        waiting, move = await self._after_work(touched, policies, settled_in_turn=settled_in_turn)
        for chunk in waiting:
            yield chunk
        if move != NextMove.CONTINUE:
            yield Chunk.finish(self.run.id, move.finish_reason, self.usage)
            return
        async for chunk in self._steps():
            yield chunk

    async def _after_work(
        self,
        touched: list[StoredToolCall],
        policies: Mapping[str, ToolPolicy] | None = None,
        *,
        settled_in_turn: bool = False,
    ) -> tuple[list[Chunk], NextMove]:
        """Make the run's `NextMove` after a step's work: `CONTINUE` (this driver asks the model next),
        `SUSPENDED` (a call waits), or `HANDED_OFF` (another process goes on); with the chunks of calls
        that now wait, each with its view when `policies` (tool call id -> its tool's policy, as this action
        read it) has its tool's (`_waiting_chunk`).

        Whoever settles the last call of a step continues the run (`RunStore.after_work`). When the
        transaction that recorded the step, or the result of the one call at work, already decided it,
        nothing more is read or written here.
        """
        move, self.standing.next_move = self.standing.next_move, None
        if move is None:
            move = await self.runs.after_work(
                self.run, self.deps.owner, holds_run=self.standing.holds_run, settled_in_turn=settled_in_turn
            )
        self.standing.holds_run = move == NextMove.CONTINUE
        policies = policies or {}
        waiting = [
            self._waiting_chunk(row, policies.get(row.tool_call_id)) for row in touched if row.state in WAITING_STATES
        ]
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

    # --- one step ---------------------------------------------------------------------------
    # --- running one call -------------------------------------------------------------------
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
                payload["suspended_with"] = suspended_with(call)
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

    # --- sub-agents -------------------------------------------------------------------------
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
        self.standing.holds_run = False
        self.deps.forget_request_rule(self.run.id)
        return Chunk.finish(self.run.id, finish_reason, self.usage)

    async def _fail(self, message: str) -> AsyncIterator[Chunk]:
        message = self.deps.redact(message)  # the full text is in the log already
        try:
            await self.runs.move_run(self.run, RunStatus.FAILED, finish_reason="error", error=message, owner=None)
        except Exception:
            log.exception("run %s: could not store the failure", self.run.id)
        self.standing.holds_run = False
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

    def _waiting_chunk(self, row: StoredToolCall, policy: ToolPolicy | None) -> Chunk:
        """The chunk of a call that waits now (its wait stored), with the call as people see it (`Chunk.view`)
        when this driver holds all it is built of: the run, the call as its last move stored it (the store
        updates the row it moves), and the policy of the tool a person decides about, as this action read it
        (when the call was proposed, or decided). A supervisor's call shows its inner call, whose policy is
        another tool's: its front end reads the view."""
        view = None
        make_view = self.deps.view_of
        if make_view is not None and policy is not None and row.child_run_id is None:
            if policy.tool_name == row.displayed_tool_name:
                view = make_view(self.run, row, policy)
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
            self.run.id, requires_approval=row.state == ToolCallState.AWAITING_APPROVAL, payload=payload, view=view
        )
