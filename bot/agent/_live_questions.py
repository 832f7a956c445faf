"""The live questions this process holds (an MCP server's question, asked while its call stays open here):
`LiveQuestions` keeps their runs' leases fresh, goes on with an answer stored through any process (told at
once by PostgreSQL's `NOTIFY` on `LIVE_QUESTIONS_CHANNEL`, else by a poll), and cancels a question nobody
answered in time. `Agent` holds one and hands it every live question its runs park."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Protocol

from bot.defaults import LIVE_QUESTION_POLL, LIVE_QUESTION_POLL_NOTIFIED, MCP_ELICITATION_WAIT
from memory import Storage, StoredRun, StoredToolCall, ToolCallState
from memory.states import DecisionKind

from ._background import in_background
from ._driving import WonDecision
from ._run import RunDriver
from ._stream import AgentStream
from .exceptions import SnapshotNotFoundError, ToolCallNotSuspendedError
from .types import CancelQuestion, Decision, DeclineQuestion, Resume

log = logging.getLogger(__name__)

LIVE_QUESTIONS_CHANNEL = "bot_live_questions"
"""The PostgreSQL `NOTIFY` channel on which a decision about a live question wakes the process holding it."""


class HoldingAgent(Protocol):
    """What the keeper of live questions needs of `Agent` (a protocol, so this module does not import
    `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def owner(self) -> str: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def hooks(self) -> Mapping[str, Any]: ...

    @property
    def default_options(self) -> Mapping[str, Any]: ...

    async def decide(
        self,
        run_id: str,
        tool_call_id: str | None,
        decision: Decision,
        *,
        decided_by: str | None = None,
        via: str = "runtime",
        user_messages: Sequence[dict[str, Any]] = (),
    ) -> AgentStream: ...

    def _driver_for(self, run: StoredRun) -> RunDriver: ...


class LiveQuestions:
    """The live questions of one agent that this process holds, and the task that watches over them."""

    def __init__(self, agent: HoldingAgent) -> None:
        self._agent = agent
        self._held: dict[tuple[str, str], None] = {}
        """(run id, tool call id) of the live questions this process holds (see `_keep_held`)."""
        self._keeper: asyncio.Task[None] | None = None
        self._heard: asyncio.Event | None = None
        """Set when a live question may have been answered (a `NOTIFY`)."""

    def hold(self, row: StoredToolCall) -> None:
        self.hold_key((row.run_id, row.tool_call_id))

    def hold_key(self, key: tuple[str, str]) -> None:
        """Watch over a live question of this process: keep its run's lease fresh, go on with the answer
        when one is stored through any process, cancel it when it waited too long."""
        self._held[key] = None
        if self._keeper is None or self._keeper.done():
            self._heard = asyncio.Event()
            self._keeper = asyncio.get_running_loop().create_task(
                self._keep_held(), name=f"live questions {self._agent.id}"
            )

    def let_go(self, key: tuple[str, str]) -> bool:
        """Stop watching over a question (its decider goes on with it, not the keeper); whether it was held."""
        return self._held.pop(key, False) is None

    def holds_run(self, run_id: str) -> bool:
        """Whether this process holds a live question of the run."""
        return any(held == run_id for held, _ in self._held)

    async def _keep_held(self) -> None:
        """While this process holds live questions: look for their answers (told at once by PostgreSQL's
        `NOTIFY`, else every `LIVE_QUESTION_POLL` seconds), refresh their runs' leases, expire them."""
        loop = asyncio.get_running_loop()
        heard = self._heard
        assert heard is not None
        storage = self._agent.storage
        async with storage.listen(LIVE_QUESTIONS_CHANNEL, lambda _payload: heard.set()) as told:
            poll = LIVE_QUESTION_POLL_NOTIFIED if told else LIVE_QUESTION_POLL
            beat_at = loop.time()
            while self._held:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(poll):
                        await heard.wait()
                heard.clear()
                try:
                    await self._look_at_held()
                    if loop.time() - beat_at >= float(self._agent.default_options["heartbeat_interval"]):
                        beat_at = loop.time()
                        for run_id in {run_id for run_id, _ in self._held}:
                            await storage.runs.heartbeat(run_id, self._agent.owner)
                except Exception:  # noqa: BLE001 - looked at again at the next poll
                    log.warning("could not look at the live questions of this process", exc_info=True)

    async def _look_at_held(self) -> None:
        storage = self._agent.storage
        rows = await storage.runs.held_calls(self._agent.owner, list(self._held))
        now = storage.clock.now()
        for key in list(self._held):
            row = rows.get(key)
            if row is None or row.state not in (ToolCallState.SUSPENDED, ToolCallState.APPROVED):
                self._held.pop(key, None)  # carried on, or no longer this process's
            elif row.state == ToolCallState.APPROVED and self._held.pop(key, False) is None:
                in_background(self._agent.hooks, await self._carry_on(row))  # answered through another process
            elif row.state == ToolCallState.SUSPENDED:
                policy = await storage.policies.get(row.displayed_tool_name)
                wait = policy.expires_after or MCP_ELICITATION_WAIT
                if row.suspended_at is not None and now - row.suspended_at >= timedelta(seconds=wait):
                    decision = CancelQuestion(reason=f"nobody answered within {wait:g} s")
                    try:
                        stream = await self._agent.decide(key[0], key[1], decision, via="expiry")
                    except ToolCallNotSuspendedError:
                        continue  # answered meanwhile
                    log.info("the question of %s/%s waited %gs: cancelled", key[0], key[1], wait)
                    in_background(self._agent.hooks, stream)

    async def _carry_on(self, row: StoredToolCall) -> AgentStream:
        """Go on, in this process that holds it, with a live question answered through another process."""
        storage = self._agent.storage
        run = await storage.runs.get_run(row.run_id)
        if run is None:
            raise SnapshotNotFoundError(row.run_id, storage_configured=True)
        kind = DecisionKind.of_recorded(row.decision)
        decision: Decision
        if kind == DecisionKind.DECLINE_QUESTION:
            decision = DeclineQuestion(reason=row.reason)
        elif kind == DecisionKind.CANCEL_QUESTION:
            decision = CancelQuestion(reason=row.reason)
        else:
            decision = Resume(row.resume_data)
        won = WonDecision(decision=decision, decided_by=row.decided_by)
        policy = await storage.policies.get(row.displayed_tool_name)
        driver = self._agent._driver_for(run)
        return AgentStream(run.id, driver.after_decision(row, won, policy))
