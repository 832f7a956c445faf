"""`AgentStream`: a run's chunks, read as they come by any number of readers, and its output at the end."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

from bot import telemetry
from tools import PROGRESS

from .types import (
    AgentOutput,
    Chunk,
    ErrorPayload,
    FinishPayload,
    SuspendPayload,
    TextDeltaPayload,
    WaitingCallPayload,
)

log = logging.getLogger(__name__)

PROGRESS_LINES = 1000
"""The most progress lines (`ctx.progress`) of one call a stream keeps."""


class AgentStream:
    """The chunks of one run, and its output at the end.

    The run goes on in a task of its own from the moment the stream exists, whether or not anyone
    reads it: a decision taken in storage is always carried out. Chunks are kept, so `full_stream`,
    `text_stream` and `result()` can each read all of them, and a reader may approve a call from
    inside its `async for`.
    """

    def __init__(self, run_id: str, source: AsyncIterator[Chunk]):
        self.run_id = run_id
        self._chunks: list[Chunk] = []
        self._progress_lines: dict[str, int] = {}  # tool call id -> the progress lines kept of it
        self._done = False
        self._arrived = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._pump(source), name=f"run {run_id}")
        _LIVE_RUNS.add(self._task)
        self._task.add_done_callback(_LIVE_RUNS.discard)

    @property
    def full_stream(self) -> AsyncIterator[Chunk]:
        return self._read()

    @property
    def text_stream(self) -> AsyncIterator[str]:
        return self._text()

    async def result(self) -> AgentOutput:
        """Wait for the run to finish or park, and sum its chunks up."""
        async for _ in self._read():
            pass
        return output_of(self.run_id, self._chunks)

    async def _pump(self, source: AsyncIterator[Chunk]) -> None:
        PROGRESS.set(self._progress)  # this task's: the tools the run starts from here report to this stream
        with telemetry.turn(self.run_id) as turn:  # off: a no-op
            try:
                async for chunk in source:
                    turn.saw(chunk)
                    self._chunks.append(chunk)
                    self._wake()
            except Exception:  # the driver stores and reports its own failures; this is a last resort
                log.exception("run %s: the stream broke", self.run_id)
                self._chunks.append(Chunk.error(self.run_id, "the run broke"))
                self._chunks.append(Chunk.finish(self.run_id, "error"))
            finally:
                self._done = True
                self._wake()

    def _progress(self, tool_call_id: str, tool_name: str, message: str) -> None:
        """A running tool's progress line (`ctx.progress`), between the chunks the run itself yields; at most
        `PROGRESS_LINES` of one call are kept (the stream keeps its chunks for every reader, and a tool that
        reports in a tight loop must not fill the process's memory with them)."""
        said = self._progress_lines.get(tool_call_id, 0)
        if self._done or said >= PROGRESS_LINES:
            if said == PROGRESS_LINES:
                log.warning("run %s: %s reported more than %d progress lines; the rest are left out",
                            self.run_id, tool_name, PROGRESS_LINES)  # fmt: skip
                self._progress_lines[tool_call_id] = said + 1
            return
        self._progress_lines[tool_call_id] = said + 1
        self._chunks.append(Chunk.tool_progress(self.run_id, tool_call_id=tool_call_id, tool_name=tool_name,
                                                message=message))  # fmt: skip
        self._wake()

    def _wake(self) -> None:
        arrived, self._arrived = self._arrived, asyncio.Event()
        arrived.set()

    async def _read(self) -> AsyncIterator[Chunk]:
        index = 0
        while True:
            arrived = self._arrived
            if index < len(self._chunks):
                yield self._chunks[index]
                index += 1
            elif self._done:
                return
            else:
                await arrived.wait()

    async def _text(self) -> AsyncIterator[str]:
        async for chunk in self._read():
            if chunk.type == "text-delta":
                yield cast(TextDeltaPayload, chunk.payload)["text"]


_LIVE_RUNS: set[asyncio.Task[Any]] = set()  # strong references, so a run nobody reads is not collected midway


async def wait_for_running_runs(timeout: float) -> int:
    """Wait up to `timeout` seconds for the runs this process is working on; how many still run then.

    Used at shutdown: what is left is taken over by the recovery of the next process (leases go stale).
    """
    running = set(_LIVE_RUNS)
    if running and timeout > 0:
        await asyncio.wait(running, timeout=timeout)
    return sum(1 for task in running if not task.done())


def output_of(run_id: str, chunks: list[Chunk]) -> AgentOutput:
    output = AgentOutput(text="", finish_reason="stop", run_id=run_id)
    texts: list[str] = []
    for chunk in chunks:
        # each constructor of `Chunk` gives a type its payload's TypedDict: the casts say which
        if chunk.type == "text-delta":
            texts.append(cast(TextDeltaPayload, chunk.payload)["text"])
        elif chunk.type == "tool-call":
            output.tool_calls.append(dict(chunk.payload))
        elif chunk.type == "tool-result":
            output.tool_results.append(dict(chunk.payload))
        elif chunk.type in ("tool-call-approval", "tool-call-suspended"):
            waiting = cast(WaitingCallPayload, chunk.payload)
            # the last one surfaced is the one approve/decline/resume pick when no tool_call_id is given
            output.suspend_payload = SuspendPayload(
                tool_call_id=waiting["tool_call_id"],
                tool_name=waiting["tool_name"],
                args=waiting["args"],
                requires_approval=chunk.type == "tool-call-approval",
                payload=waiting.get("suspend_payload"),
            )
        elif chunk.type == "error":
            output.error = cast(ErrorPayload, chunk.payload).get("message")
        elif chunk.type == "finish":
            finish = cast(FinishPayload, chunk.payload)
            output.finish_reason = finish["finish_reason"]
            output.usage = finish.get("usage") or {}
    output.text = "".join(texts)
    return output
