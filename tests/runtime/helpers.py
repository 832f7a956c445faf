"""Small helpers for runtime tests: building agents and tools, reading streams and model requests.

Only the public names of the contract are used here, plus `Storage` facts the storage guarantees
need (`storage.runs.get_run`, `storage.runs.stored_bytes`, the `tool_calls` table).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from tools import create_tool

MODEL = "openai/test-model"

RECORD_INPUT = {
    "type": "object",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


WEATHER_SUSPEND = {
    "type": "object",
    "properties": {"question": {"type": "string"}},
    "required": ["question"],
}
WEATHER_RESUME = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}


def weather_tool(executions: list, *, suspend_with=None, require_approval=False):
    """Asks which city when none is given; answers with the forecast once resumed."""

    async def execute(input, ctx):
        executions.append(
            {
                "input": input,
                "resume_data": ctx.agent.resume_data,
                "suspend_payload": ctx.agent.suspend_payload,
                "run_id": ctx.run_id,
                "tool_call_id": ctx.tool_call_id,
                "thread_id": ctx.thread_id,
                "resource_id": ctx.resource_id,
                "request_context": ctx.request_context,
            }
        )
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend(suspend_with if suspend_with is not None else {"question": "Which city?"})
        return {"city": ctx.agent.resume_data["city"], "forecast": "sunny"}

    return create_tool(
        id="get-weather",
        description="Weather forecast",
        input_schema={"type": "object", "properties": {"when": {"type": "string"}}},
        suspend_schema=WEATHER_SUSPEND,
        resume_schema=WEATHER_RESUME,
        require_approval=require_approval,
        execute=execute,
    )


@dataclass
class Calls:
    """What a tool's execute saw, one entry per execution."""

    inputs: list[Any] = field(default_factory=list)
    contexts: list[Any] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.inputs)


def record_tool(
    id: str = "delete-record",
    *,
    require_approval: Any = True,
    calls: Calls | None = None,
    result: Any = None,
    raises: BaseException | None = None,
    input_schema: Any = RECORD_INPUT,
):
    """A tool taking {"id": str}; it records each execution in `calls` and returns `result`
    (default {"deleted": True, "id": <id>})."""
    calls = calls if calls is not None else Calls()

    async def execute(input, ctx):
        calls.inputs.append(input)
        calls.contexts.append(ctx)
        if raises is not None:
            raise raises
        if result is not None:
            return result
        record_id = input["id"] if isinstance(input, dict) else getattr(input, "id", None)
        return {"deleted": True, "id": record_id}

    tool = create_tool(
        id=id,
        description=f"{id}: act on a record by ID",
        input_schema=input_schema,
        output_schema=None,
        require_approval=require_approval,
        execute=execute,
    )
    tool.calls = calls  # type: ignore[attr-defined]  # a test handle, not part of the contract
    return tool


def make_agent(tools, *, storage=None, memory=None, **kwargs):
    from bot.agent import Agent

    options = dict(
        id=kwargs.pop("id", "test-agent"),
        name=kwargs.pop("name", "Test Agent"),
        instructions=kwargs.pop("instructions", "You are a test agent."),
        model=kwargs.pop("model", MODEL),
        tools=tools,
    )
    if storage is not None:
        options["storage"] = storage
    if memory is not None:
        options["memory"] = memory
    options.update(kwargs)
    return Agent(**options)


async def collect(stream, timeout: float = 30) -> list:
    """Every chunk of `stream.full_stream`."""

    async def drain():
        return [chunk async for chunk in stream.full_stream]

    return await asyncio.wait_for(drain(), timeout)


def of_type(chunks, type_: str) -> list:
    return [c for c in chunks if c.type == type_]


def one(chunks, type_: str):
    found = of_type(chunks, type_)
    assert len(found) == 1, f"expected one {type_!r} chunk, got {len(found)}: {types(chunks)}"
    return found[0]


def types(chunks) -> list[str]:
    return [c.type for c in chunks]


def finish_reason(chunks) -> str:
    finishes = of_type(chunks, "finish")
    assert finishes, f"no finish chunk in {types(chunks)}"
    assert len(finishes) == 1, f"several finish chunks in {types(chunks)}"
    assert chunks[-1].type == "finish", f"finish is not the last chunk: {types(chunks)}"
    return finishes[0].payload["finish_reason"]


def text_of(chunks) -> str:
    return "".join(c.payload["text"] for c in of_type(chunks, "text-delta"))


async def decide(coro_or_stream_factory, timeout: float = 30) -> list:
    """Await an approve/decline/resume call and drain its stream: the chunks. Errors the runtime
    raises, either when the call is awaited or while its stream is read, propagate."""
    stream = await asyncio.wait_for(coro_or_stream_factory, timeout)
    return await collect(stream, timeout)


# -- what the model was sent --------------------------------------------------------------------


def tool_messages(body: dict) -> dict[str, str]:
    """tool_call_id -> content of every tool message in a chat-completions request body."""
    return {m["tool_call_id"]: content_text(m.get("content")) for m in body["messages"] if m.get("role") == "tool"}


def content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return json.dumps(content)


def assert_every_tool_call_answered(body: dict) -> None:
    """Each assistant tool call in the request is followed by exactly one tool message for it,
    before the next assistant or user message (what the OpenAI API itself requires)."""
    messages = body["messages"]
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        wanted = [tc["id"] for tc in message["tool_calls"]]
        answered = []
        for following in messages[index + 1 :]:
            if following.get("role") != "tool":
                break
            answered.append(following["tool_call_id"])
        assert sorted(answered) == sorted(wanted), (
            f"assistant tool calls {wanted} answered by tool messages {answered} in {json.dumps(messages)[:2000]}"
        )


def user_texts(body: dict) -> list[str]:
    return [content_text(m.get("content")) for m in body["messages"] if m.get("role") == "user"]


# -- storage (for the storage guarantees only) ------------------------------------------------------

_tool_calls = sa.table(
    "tool_calls",
    sa.column("run_id", sa.String),
    sa.column("tool_call_id", sa.String),
    sa.column("args", sa.JSON),
)


async def tamper_args(storage, run_id: str, tool_call_id: str, args: dict) -> int:
    """Overwrite the stored arguments of one call, as an attacker with database access would."""
    async with storage.engine.begin() as connection:
        result = await connection.execute(
            sa.update(_tool_calls)
            .where(_tool_calls.c.run_id == run_id, _tool_calls.c.tool_call_id == tool_call_id)
            .values(args=args)
        )
        return result.rowcount


async def run_status(storage, run_id: str) -> str | None:
    run = await storage.runs.get_run(run_id)
    return None if run is None else run.status


FINISHED = ("completed", "failed")


def says_not_approved(text: str) -> bool:
    """The tool result of a declined call tells the model it was not approved (wording is free)."""
    lowered = text.lower()
    return any(phrase in lowered for phrase in ("not approved", "did not approve", "declined", "denied", "rejected"))


async def database_bytes(storage) -> int:
    """Roughly how much every table of the database holds: the length of each row's text. An
    independent check on `storage.runs.stored_bytes`, which only counts rows it knows belong to a run."""

    def table_names(connection) -> list[str]:
        return [name for name in sa.inspect(connection).get_table_names() if name != "alembic_version"]

    total = 0
    async with storage.engine.connect() as connection:
        for name in await connection.run_sync(table_names):
            rows = await connection.execute(sa.text(f'SELECT * FROM "{name}"'))
            total += sum(len(repr(tuple(row))) for row in rows)
    return total
