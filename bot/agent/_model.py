"""Talking to the model: one streamed chat completion per step, and one structured-output request."""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import openai

from bot import metrics

from .exceptions import ModelError

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
    shared = _shared.setdefault(asyncio.get_running_loop(), _SharedClients())
    if shared.http is None or shared.http.is_closed:
        shared.http = openai.DefaultAsyncHttpxClient()
        shared.clients.clear()
    key = (os.environ.get("OPENAI_BASE_URL", ""), os.environ.get("OPENAI_API_KEY", ""))
    client = shared.clients.get(key)
    if client is None:
        client = shared.clients[key] = openai.AsyncOpenAI(http_client=shared.http)  # cheap with a pool given
    return client


def model_name(model: str) -> str:
    """`openai/gpt-5-mini` -> `gpt-5-mini`; other providers' names go to the OpenAI-compatible server as they are."""
    provider, _, name = model.partition("/")
    return name if provider == "openai" and name else model


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
    try:
        async with asyncio.timeout_at(deadline):
            stream = await client.chat.completions.create(**request, timeout=timeout)
        events = aiter(stream)
        while True:
            async with asyncio.timeout_at(deadline):
                event = await anext(events, None)
            if event is None:
                break
            if event.usage is not None:
                reply.usage = _usage_of(event.usage)
            for choice in event.choices or []:
                delta = choice.delta
                if delta is not None and delta.content:
                    reply.text += delta.content
                    yield delta.content
                for part in (delta.tool_calls if delta is not None else None) or []:
                    call = calls.setdefault(part.index, {"id": None, "name": "", "arguments": ""})
                    if part.id:
                        call["id"] = part.id
                    if part.function is not None:
                        call["name"] += part.function.name or ""
                        call["arguments"] += part.function.arguments or ""
                if choice.finish_reason:
                    reply.finish_reason = choice.finish_reason
    except (TimeoutError, openai.OpenAIError, ValueError) as exc:
        if stream is not None and isinstance(exc, (TimeoutError, openai.APITimeoutError)):
            await stream.close()  # let go of the hung connection
        raise _step_failed(exc, timeout) from exc
    metrics.model_call_done("step", started)
    reply.tool_calls = _complete_calls([calls[index] | {"index": index} for index in sorted(calls)])
    yield reply


async def _whole_step(
    client: openai.AsyncOpenAI, request: dict[str, Any], deadline: float, timeout: float
) -> StepReply:
    """One step's reply, asked for whole (see `whole_replies`); the same deadline and errors as a streamed one."""
    started = metrics.clock()
    try:
        async with asyncio.timeout_at(deadline):
            completion = await client.chat.completions.create(**request, timeout=timeout)
        choice = completion.choices[0]
        message = choice.message
        reply = StepReply(text=message.content or "", finish_reason=choice.finish_reason)
        if completion.usage is not None:
            reply.usage = _usage_of(completion.usage)
        calls = [
            {"index": index, "id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for index, call in enumerate(message.tool_calls or [])
        ]
    except (TimeoutError, openai.OpenAIError, ValueError, IndexError, AttributeError, TypeError) as exc:
        raise _step_failed(exc, timeout) from exc
    metrics.model_call_done("step", started)
    reply.tool_calls = _complete_calls(calls)
    return reply


def _step_failed(exc: BaseException, timeout: float) -> ModelError:
    """What a step's failure is called (timed out, refused, or not a chat completion), counted in the metrics."""
    metrics.model_call_failed("step", exc)
    if isinstance(exc, (TimeoutError, openai.APITimeoutError)):
        return ModelError(f"the model did not answer within {timeout:g} s")
    if isinstance(exc, openai.OpenAIError):
        return ModelError(f"the model request failed: {exc}")
    return ModelError(f"the model answered something that is not a chat completion: {exc}")


def _usage_of(usage: Any) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens or 0,
        "completion_tokens": usage.completion_tokens or 0,
        "total_tokens": usage.total_tokens or 0,
    }


def _complete_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of a reply in OpenAI form; a call without a name is not a call (ModelError)."""
    complete = []
    for call in calls:
        if not call["name"]:
            raise ModelError("the model sent a tool call without a name")
        complete.append(
            {
                "id": call["id"] or f"call_{call['index']}",
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
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
    response_format: dict[str, Any] = (
        {"type": "json_object"}
        if json_object
        else {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}
    )
    try:
        # one request, bounded by `timeout`: the client's own retries would multiply the wait
        completion = await client.with_options(max_retries=0).chat.completions.create(
            model=model_name(model),
            messages=messages,
            temperature=0,
            response_format=response_format,
            timeout=timeout,
        )
        content = completion.choices[0].message.content
        return json.loads(content or "")
    except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
        if not json_object and any(word in str(exc).lower() for word in ("json_schema", "response_format")):
            raise StructuredOutputRefused(f"the server refused json_schema: {exc}") from exc
        raise ModelError(f"the structured answer could not be read: {exc}") from exc
    except (openai.OpenAIError, ValueError, IndexError, AttributeError, TypeError) as exc:
        raise ModelError(f"the structured answer could not be read: {exc}") from exc
