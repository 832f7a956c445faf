"""`AgentStream`: a run's chunks, read as they come by any number of readers, and its output at the end."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

from .types import AgentOutput, Chunk, SuspendPayload


class AgentStream:
    """The chunks of one run, produced on demand and kept, so `full_stream`, `text_stream` and
    `result()` can each read all of them. Nothing is held open while a reader handles a chunk, so a
    reader may approve a call from inside its `async for`."""

    def __init__(self, run_id: str, source: AsyncIterator[Chunk]):
        self.run_id = run_id
        self._source = source
        self._chunks: list[Chunk] = []
        self._done = False
        self._lock = asyncio.Lock()

    @property
    def full_stream(self) -> AsyncIterator[Chunk]:
        return self._read()

    @property
    def text_stream(self) -> AsyncIterator[str]:
        return self._text()

    async def result(self) -> AgentOutput:
        """Read the stream to its end (if nobody has) and sum it up."""
        async for _ in self._read():
            pass
        return output_of(self.run_id, self._chunks)

    async def _read(self) -> AsyncIterator[Chunk]:
        index = 0
        while True:
            if index < len(self._chunks):
                yield self._chunks[index]
                index += 1
                continue
            if self._done:
                return
            async with self._lock:
                if index < len(self._chunks) or self._done:
                    continue
                try:
                    self._chunks.append(await anext(self._source))
                except StopAsyncIteration:
                    self._done = True

    async def _text(self) -> AsyncIterator[str]:
        async for chunk in self._read():
            if chunk.type == "text-delta":
                yield chunk.payload["text"]


def output_of(run_id: str, chunks: list[Chunk]) -> AgentOutput:
    output = AgentOutput(text="", finish_reason="stop", run_id=run_id)
    texts: list[str] = []
    for chunk in chunks:
        payload = chunk.payload
        if chunk.type == "text-delta":
            texts.append(payload["text"])
        elif chunk.type == "tool-call":
            output.tool_calls.append(payload)
        elif chunk.type == "tool-result":
            output.tool_results.append(payload)
        elif chunk.type in ("tool-call-approval", "tool-call-suspended"):
            # the last one surfaced is the one approve/decline/resume pick when no tool_call_id is given
            output.suspend_payload = SuspendPayload(
                tool_call_id=payload["tool_call_id"],
                tool_name=payload["tool_name"],
                args=payload["args"],
                requires_approval=chunk.type == "tool-call-approval",
                payload=payload.get("suspend_payload"),
            )
        elif chunk.type == "error":
            output.error = payload.get("message")
        elif chunk.type == "finish":
            output.finish_reason = payload["finish_reason"]
            output.usage = payload.get("usage") or {}
    output.text = "".join(texts)
    return output
