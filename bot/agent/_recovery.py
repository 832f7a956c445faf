"""Recovery: take over this agent's runs whose process stopped (their lease went stale) and go on with
them. `Agent.recover_stale_runs` delegates here; a supervisor goes on with a sub-agent's run through
`Recovery.recover_run`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any, Protocol

from memory import RunStatus, Storage, StoredRun
from memory.states import FINISHED_RUN_STATUSES

from ._background import in_background
from ._run import RunDriver
from ._stream import AgentStream
from .types import Chunk, FinishReason

log = logging.getLogger(__name__)


class RecoveringAgent(Protocol):
    """What recovery needs of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def owner(self) -> str: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def hooks(self) -> Mapping[str, Any]: ...

    def _works_on(self, run_id: str) -> bool: ...

    def _driver_for(self, run: StoredRun) -> RunDriver: ...


class Recovery:
    """Takes over one agent's stale runs."""

    def __init__(self, agent: RecoveringAgent) -> None:
        self._agent = agent

    async def recover_stale_runs(self, stale_after: float) -> list[str]:
        """Take over this agent's runs whose lease is older than `stale_after` seconds and go on with them
        in the background; returns the ids of the runs taken over."""
        storage = self._agent.storage
        stale_before = storage.clock.now() - timedelta(seconds=stale_after)
        recovered = []
        for run_id in await storage.runs.stale_runs(self._agent.id, stale_before=stale_before):
            if self._agent._works_on(run_id):
                continue  # this process works on it: a late beat, not a stopped process
            run = await storage.runs.take_over(run_id, stale_before=stale_before, owner=self._agent.owner)
            if run is None:
                continue  # another process took it
            log.info("recovering run %s (%s, step %s)", run.id, run.status, run.step)
            in_background(self._agent.hooks, await self.recover_run(run))
            recovered.append(run.id)
        return recovered

    async def recover_run(self, run: StoredRun) -> AgentStream:
        """Go on with a run this process took over: interrupted calls are turned into approvals first."""
        if run.status in FINISHED_RUN_STATUSES:
            return AgentStream(run.id, self._finished_output(run))
        driver = self._agent._driver_for(run)
        interrupted = await driver.prepare_recovery()
        return AgentStream(run.id, driver.recover(interrupted))

    async def _finished_output(self, run: StoredRun) -> AsyncIterator[Chunk]:
        """The chunks of a run that finished before its supervisor heard of it: its last answer, or its error."""
        messages = await self._agent.storage.runs.run_messages(run.id)
        answer = next((m["content"] for m in reversed(messages) if m["role"] == "assistant" and m["content"]), "")
        if run.status == RunStatus.FAILED:
            yield Chunk.error(run.id, run.error or "the run failed")
        elif answer:
            yield Chunk.text_delta(run.id, answer)
        yield Chunk.finish(run.id, finish_reason_of(run.finish_reason))


_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "suspended": "suspended",
    "length": "length",
    "error": "error",
}


def finish_reason_of(stored: str | None) -> FinishReason:
    """A run's stored finish reason as the contract's word ("stop" when none is stored)."""
    return _FINISH_REASONS.get(stored or "", "stop")
