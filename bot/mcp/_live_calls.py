"""MCP calls that wait for a human's answer to their server's question (`elicitation/create`).

The question arrives in the middle of `tools/call`, and the server keeps the call open until it gets
an answer, so the call cannot be parked and re-run like a tool that `suspend()`s: its `execute` parks
the agent's call as a live suspension (`suspend(live=True)`: a `tool-call-suspended` chunk with the
server's `message` and `requested_schema`, whose `resume_schema` is that schema) and returns, while the
MCP call stays open here, in the process that holds it. The runtime keeps that process's lease on the
call, hands it an answer stored through any process, and bounds the wait (the tool policy's expiry,
else `MCP_ELICITATION_WAIT`). When the call is answered (in the thread, the form, `resume_*`, the HTTP
API, or Decline / Cancel), `execute` runs again here: it finds its live call, gives the server `accept`
with the content, `decline` or `cancel`, and waits for what follows (the result, or the next question).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from tools import InvalidSchemaError, check_schema

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Question:
    """The server asked something; the call waits for `LiveCall.answer`."""

    params: types.ElicitRequestParams


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The call ended: its result, or the error it ended with."""

    result: types.CallToolResult | None = None
    error: BaseException | None = None


class LiveCall:
    """One `tools/call` at work, and the questions its server asks on the way."""

    def __init__(self, start: Callable[[Callable[[types.ElicitRequestParams], Awaitable[Any]]], Awaitable[Any]]):
        self._events: asyncio.Queue[Question | Outcome] = asyncio.Queue()
        self._answer: asyncio.Future[types.ElicitResult] | None = None
        self._task = asyncio.get_running_loop().create_task(self._run(start))

    async def _run(self, start: Callable[..., Awaitable[Any]]) -> None:
        try:
            result = await start(self._ask)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the outcome
            self._events.put_nowait(Outcome(error=exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        self._events.put_nowait(Outcome(result=result))

    async def _ask(self, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        refusal = _refusal(params)
        if refusal is not None:  # never parked: no answer could be checked against its schema
            log.warning("MCP question refused: %s", refusal.message)
            return refusal
        self._answer = asyncio.get_running_loop().create_future()
        self._events.put_nowait(Question(params=params))
        try:  # the runtime bounds the wait: it answers `cancel` when nobody answered in time
            return await asyncio.shield(self._answer)
        finally:
            self._answer = None

    async def next(self) -> Question | Outcome:
        """What happens next: a question for a human, or the end of the call."""
        return await self._events.get()

    def answer(self, result: types.ElicitResult) -> bool:
        """Give the waiting question its answer; False when no question waits."""
        if self._answer is None or self._answer.done():
            return False
        self._answer.set_result(result)
        return True

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task


def _refusal(params: types.ElicitRequestParams) -> types.ErrorData | None:
    """The error a question gets when its `requestedSchema` is not a schema the bot can check answers
    against (tools.check_schema); None for a question a human may answer."""
    schema = getattr(params, "requested_schema", None)
    if schema is None:
        return None
    try:
        check_schema(schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True))
    except InvalidSchemaError as exc:
        return types.ErrorData(code=types.INVALID_PARAMS, message=f"the requestedSchema is refused: {exc}")
    return None


LiveCalls = dict[tuple[str, str], LiveCall]
"""(run id, tool call id) -> a live MCP call that waits for an answer; each server connection keeps its own."""


def answer_of(resume_data: Any, action: str | None = "accept") -> types.ElicitResult:
    """What the server gets: `accept` with the data a call was resumed with (validated against its
    `requested_schema`), or `decline` / `cancel` without content."""
    if action == "decline":
        return types.ElicitResult(action="decline")
    if action == "cancel":
        return types.ElicitResult(action="cancel")
    return types.ElicitResult(action="accept", content=resume_data if isinstance(resume_data, dict) else None)
