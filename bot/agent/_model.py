"""Talking to the model: one streamed chat completion per step, and one structured-output request.

Every request passes the process's model gate: at most `limit_model_requests(n)` of them in flight at
once (a hosted model's rate limit is the scarce thing, not the turns that wait for it). A 429 is not
an error for the user: the request is sent again after the server's Retry-After (or a backoff), and
meanwhile the gate sends no new request either, until the call's own deadline. Waiting for the gate
and for the answer gives the turn's work slot up (`bot.concurrency.waiting`).

`openai` is imported by the functions that send a request, not with this module: importing the
client and its types costs about 0.6 s of CPU, which an admin command (`policy`, `audit`) that loads
an agent but never calls the model should not pay.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import os
import random
import ssl
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot import metrics, telemetry
from bot.concurrency import waiting
from bot.defaults import DEFAULT_MAX_MODEL_REQUESTS
from tools import clean_text, read_json

from .exceptions import ModelError

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _SharedClients] = weakref.WeakKeyDictionary()


@dataclass
class _SharedClients:
    http: Any = None
    """One connection pool (httpx) for every model client of this loop."""
    clients: dict[tuple[str, str], openai.AsyncOpenAI] = field(default_factory=dict)


def shared_client() -> openai.AsyncOpenAI:
    """The process's model client for its (base URL, key), shared by every agent that has none of its own.

    Building an `AsyncOpenAI` with its own connection pool costs tens of milliseconds (mostly the TLS
    context); agents built per request, or again after a restart, share one instead. The client reads
    OPENAI_BASE_URL and OPENAI_API_KEY itself as always. A connection pool belongs to one event loop,
    so the sharing is per running loop; a pool someone closed is replaced.
    """
    import openai  # see the module's docstring

    shared = _shared.setdefault(asyncio.get_running_loop(), _SharedClients())
    if shared.http is None or shared.http.is_closed:
        shared.http = openai.DefaultAsyncHttpxClient(verify=_tls_context())
        shared.clients.clear()
    key = (os.environ.get("OPENAI_BASE_URL", ""), os.environ.get("OPENAI_API_KEY", ""))
    client = shared.clients.get(key)
    if client is None:
        client = shared.clients[key] = openai.AsyncOpenAI(http_client=shared.http)  # cheap with a pool given
    return client


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The process's TLS settings for model servers (the system's trusted certificates, as the client's
    default): loading the certificates costs about 35 ms of CPU, paid once per process instead of once
    per event loop (each test, each `asyncio.run`)."""
    return ssl.create_default_context()


def model_name(model: str) -> str:
    """`openai/gpt-5-mini` -> `gpt-5-mini`; other providers' names go to the OpenAI-compatible server as they are."""
    provider, _, name = model.partition("/")
    return name if provider == "openai" and name else model


_max_model_requests = DEFAULT_MAX_MODEL_REQUESTS


def limit_model_requests(limit: int) -> None:
    """At most `limit` model requests of this process in flight at once (`BOT_MAX_MODEL_REQUESTS`);
    the others wait for their turn, without holding a work slot. Takes effect for gates made after it
    (each event loop has its own, made on its first request)."""
    global _max_model_requests
    if limit < 1:
        raise ValueError("limit_model_requests needs at least 1")
    _max_model_requests = limit
    _gates.clear()


BACKOFF_FIRST = 0.5
"""Seconds before a request rate-limited without a Retry-After is sent again, doubled each time."""
BACKOFF_MAX = 8.0


class _Gate:
    """The in-flight model requests of one event loop, and the pause that a 429 imposes on all of them."""

    def __init__(self, limit: int):
        self.limit = limit
        self.semaphore = asyncio.Semaphore(limit)
        self.paused_until = 0.0
        self.in_flight = 0

    async def enter(self) -> None:
        loop = asyncio.get_running_loop()
        while (pause := self.paused_until - loop.time()) > 0:
            await asyncio.sleep(pause)
        await self.semaphore.acquire()
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1
        self.semaphore.release()

    def back_off(self, exc: openai.RateLimitError, attempt: int, deadline: float) -> bool:
        """Pause the gate for the 429's Retry-After (or a backoff); False if the call's deadline comes first."""
        delay = _retry_after(exc)
        if delay is None:
            delay = min(BACKOFF_FIRST * 2**attempt, BACKOFF_MAX) * (1 - 0.25 * random.random())
        loop = asyncio.get_running_loop()
        if loop.time() + delay >= deadline:
            return False
        self.paused_until = max(self.paused_until, loop.time() + delay)
        return True


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = weakref.WeakKeyDictionary()


def _gate() -> _Gate:
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = _Gate(_max_model_requests)
    return gate


def _retry_after(exc: openai.RateLimitError) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            seconds = float(headers[header]) / divisor
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= seconds < 3600:
            return seconds
    return None


async def _send(
    kind: str,
    client: openai.AsyncOpenAI,
    body: dict[str, Any],
    deadline: float,
    stack: AsyncExitStack,
    *,
    options: dict[str, Any],
) -> Any:
    """POST `body` to the model's chat completions through the gate, sent again after each 429 until
    `deadline`; the gate's place is held until `stack` closes (a streamed reply holds it until it is read).

    The client's generic `post`, with the reply as plain JSON (`cast_to=object`): the request and its
    status codes, retries, 429s and streamed error events are the client's as with `chat.completions
    .create`, without its walk over the request's messages and tools against their typed parameters,
    nor the typed model it builds for every streamed chunk (`benchmarks/README.md`, 2026-12-04). The body
    is JSON already: the thread's stored history, the tools' schemas. A streamed reply (`"stream": true`
    in `body`) is the client's `AsyncStream` of dicts."""
    import openai  # see the module's docstring

    stream = bool(body.get("stream"))
    stream_cls = openai.AsyncStream[object] if stream else None
    gate = _gate()
    for attempt in itertools.count():
        async with waiting(), asyncio.timeout_at(deadline):
            await gate.enter()
        try:
            async with waiting(), asyncio.timeout_at(deadline):
                # options is the client's RequestOptions TypedDict, which the openai package does not export
                response = await client.post(  # type: ignore[call-overload]
                    "/chat/completions",
                    body=body,
                    cast_to=object,
                    options=options,
                    stream=stream,
                    stream_cls=stream_cls,
                )
        except openai.RateLimitError as exc:
            gate.leave()
            metrics.model_call_failed(kind, exc)
            if not gate.back_off(exc, attempt, deadline):
                raise
            log.info("the model is rate limited (429); %s request sent again after a pause", kind)
            continue
        except BaseException:
            gate.leave()
            raise
        stack.callback(gate.leave)
        return response
    raise AssertionError("unreachable")


@dataclass
class StepReply:
    """What the model answered in one step."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """In OpenAI form: {"id", "type": "function", "function": {"name", "arguments"}}."""
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


_WHOLE_REPLIES: ContextVar[bool] = ContextVar("whole_replies", default=False)


@contextmanager
def whole_replies() -> Iterator[None]:
    """Runs started within ask the model for each reply whole, not streamed: nobody reads their text as it
    comes (`generate`), and a streamed reply costs more to read. Their chunks are the same, the text in one."""
    token = _WHOLE_REPLIES.set(True)
    try:
        yield
    finally:
        _WHOLE_REPLIES.reset(token)


class StructuredOutputRefused(ModelError):
    """The server refused a `json_schema` response format (it may still take `json_object`)."""


async def stream_step(
    client: openai.AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    *,
    timeout: float = 60.0,
) -> AsyncIterator[str | StepReply]:
    """Yield text as it arrives, then the whole `StepReply`.

    `timeout` is one deadline for the whole call, the client's retries and the streaming included: a
    model that hangs fails the step with a `ModelError` instead of holding the run (and its thread).
    """
    import openai  # see the module's docstring

    deadline = asyncio.get_running_loop().time() + timeout
    request: dict[str, Any] = {"model": model_name(model), "messages": messages}
    if tools:
        request["tools"] = tools
    if _WHOLE_REPLIES.get():
        reply = await _whole_step(client, request, deadline, timeout)
        if reply.text:
            yield reply.text
        yield reply
        return
    request.update(stream=True, stream_options={"include_usage": True})
    reply = StepReply()
    calls: dict[int, dict[str, Any]] = {}
    stream = None
    started = metrics.clock()
    last: dict[str, Any] = {}
    with telemetry.model_call(request["model"], client) as traced:  # off: a no-op
        try:
            async with AsyncExitStack() as held:
                stream = await _send("step", client, request, deadline, held, options={"timeout": timeout})
                events = aiter(stream)
                while True:
                    async with waiting(), asyncio.timeout_at(deadline):
                        event = await anext(events, None)
                    if event is None:
                        break
                    last = event
                    text = _read_chunk(event, reply, calls)
                    if text:
                        yield text
        except (TimeoutError, openai.OpenAIError, ValueError) as exc:
            if stream is not None and isinstance(exc, (TimeoutError, openai.APITimeoutError)):
                await stream.close()  # let go of the hung connection
            raise _step_failed(exc, timeout) from exc
        traced.replied(
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            response_model=last.get("model"),
            response_id=last.get("id"),
        )
    metrics.model_call_done("step", started)
    reply.text = clean_text(reply.text)  # what is stored: the deltas were only shown
    reply.tool_calls = _complete_calls([calls[index] | {"index": index} for index in sorted(calls)])
    yield reply


def _read_chunk(event: Any, reply: StepReply, calls: dict[int, dict[str, Any]]) -> str:
    """Add one streamed chunk (JSON) to `reply` and `calls` (the tool calls so far, by index); its text.
    A chunk of another shape is a ValueError: the model answered something that is not a chat completion."""
    try:
        if event.get("usage"):
            reply.usage = _usage_of(event["usage"])
        text = ""
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text += delta["content"]
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(part.get("index") or 0, {"id": None, "name": "", "arguments": ""})
                if part.get("id"):
                    call["id"] = part["id"]
                for key, value in _name_and_arguments(part).items():
                    call[key] += value
            if choice.get("finish_reason"):
                reply.finish_reason = choice["finish_reason"]
    except (AttributeError, TypeError) as exc:
        raise ValueError(f"a streamed chunk that is not a chat completion chunk: {str(event)[:200]}") from exc
    reply.text += text
    return text


async def _whole_step(
    client: openai.AsyncOpenAI, request: dict[str, Any], deadline: float, timeout: float
) -> StepReply:
    """One step's reply, asked for whole (see `whole_replies`); the same deadline and errors as a streamed one."""
    import openai  # see the module's docstring

    started = metrics.clock()
    with telemetry.model_call(request["model"], client) as traced:  # off: a no-op
        try:
            async with AsyncExitStack() as held:
                completion = await _send("step", client, request, deadline, held, options={"timeout": timeout})
            choice = completion["choices"][0]
            message = choice["message"]
            reply = StepReply(text=clean_text(message.get("content") or ""), finish_reason=choice.get("finish_reason"))
            if completion.get("usage"):
                reply.usage = _usage_of(completion["usage"])
            calls = [
                {"index": index, "id": call.get("id"), **_name_and_arguments(call)}
                for index, call in enumerate(message.get("tool_calls") or [])
            ]
        except (TimeoutError, openai.OpenAIError, ValueError, LookupError, AttributeError, TypeError) as exc:
            raise _step_failed(exc, timeout) from exc
        traced.replied(
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            response_model=completion.get("model"),
            response_id=completion.get("id"),
        )
    metrics.model_call_done("step", started)
    reply.tool_calls = _complete_calls(calls)
    return reply


def _step_failed(exc: BaseException, timeout: float) -> ModelError:
    """What a step's failure is called (timed out, refused, or not a chat completion), counted in the metrics."""
    import openai  # see the module's docstring

    metrics.model_call_failed("step", exc)
    if isinstance(exc, (TimeoutError, openai.APITimeoutError)):
        return ModelError(f"the model did not answer within {timeout:g} s")
    if isinstance(exc, openai.OpenAIError):
        return ModelError(f"the model request failed: {exc}")
    return ModelError(f"the model answered something that is not a chat completion: {exc}")


def _name_and_arguments(call: dict[str, Any]) -> dict[str, Any]:
    """The name and arguments of a tool call (or of a streamed part of one), "" where it has none."""
    function = call.get("function") or {}
    return {"name": function.get("name") or "", "arguments": function.get("arguments") or ""}


def _usage_of(usage: dict[str, Any]) -> dict[str, int]:
    """The token counts of a reply's `usage` (JSON)."""
    return {key: int(usage.get(key) or 0) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}


def _complete_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of a reply in OpenAI form; a call without a name is not a call (ModelError)."""
    complete = []
    for call in calls:
        if not call["name"]:
            raise ModelError("the model sent a tool call without a name")
        complete.append(
            {
                "id": clean_text(call["id"] or f"call_{call['index']}"),
                "type": "function",
                "function": {"name": clean_text(call["name"]), "arguments": call["arguments"] or "{}"},
            }
        )
    return complete


async def structured(
    client: openai.AsyncOpenAI,
    model: str,
    messages: list[dict[str, Any]],
    schema: dict[str, Any],
    *,
    name: str,
    strict: bool,
    timeout: float,
    json_object: bool = False,
) -> Any:
    """One deterministic (temperature 0) request for JSON fitting `schema`; the parsed JSON, or ModelError.

    `json_object`: ask for `{"type": "json_object"}` instead (the caller puts the schema in the prompt).
    A server that rejects `json_schema` as such raises StructuredOutputRefused."""
    import openai  # see the module's docstring

    response_format: dict[str, Any] = (
        {"type": "json_object"}
        if json_object
        else {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}
    )
    request: dict[str, Any] = dict(
        model=model_name(model), messages=messages, temperature=0, response_format=response_format
    )
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        # one request at a time, bounded by `timeout`: the client's own retries would multiply the wait
        with telemetry.model_call(request["model"], client, kind="structured") as traced:  # off: a no-op
            async with AsyncExitStack() as held:
                options = {"timeout": timeout, "max_retries": 0}
                completion = await _send("structured", client, request, deadline, held, options=options)
            choice = completion["choices"][0]
            traced.replied(finish_reason=choice.get("finish_reason"), response_model=completion.get("model"))
            if completion.get("usage"):
                traced.replied(usage=_usage_of(completion["usage"]))
        content = choice["message"].get("content")
        return read_json(content or "")
    except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
        if not json_object and any(word in str(exc).lower() for word in ("json_schema", "response_format")):
            raise StructuredOutputRefused(f"the server refused json_schema: {exc}") from exc
        raise ModelError(f"the structured answer could not be read: {exc}") from exc
    except (TimeoutError, openai.OpenAIError, ValueError, LookupError, AttributeError, TypeError) as exc:
        raise ModelError(f"the structured answer could not be read: {exc}") from exc
