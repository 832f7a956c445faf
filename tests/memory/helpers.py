"""Tools and agents shared by the memory, auto-resume and supervisor tests."""

from __future__ import annotations

from memory import Memory
from tests.runtime.helpers import MODEL, Calls, content_text, record_tool
from tests.support.scripted_model import call, tool_calls
from tools import create_tool

CITY_RESUME = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
DATE_RESUME = {
    "type": "object",
    "properties": {"date": {"type": "string"}},
    "required": ["date"],
    "additionalProperties": False,
}
QUESTION = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}
WHEN = {"type": "object", "properties": {"when": {"type": "string"}}}
NOTE = "Still waiting in this conversation"
THREAD, USER = "slack:T1:C1:1700000000.000100", "U_ALICE"
OPTS = {"thread_id": THREAD, "resource_id": USER}


async def ask_which_city(model, agent, *, call_id="c_city", **opts):
    """Turn 1: the model calls get-weather, which asks "Which city?"."""
    model.chat.push(tool_calls(call("get-weather", {"when": "tomorrow"}, id=call_id)))
    output = await agent.generate("What's the weather tomorrow?", **{**OPTS, **opts})
    assert output.finish_reason == "suspended"
    assert output.suspend_payload.payload == {"question": "Which city?"}
    return output


async def state_of(agent, run_id, call_id="c_city") -> str:
    return (await agent.get_tool_call(run_id, call_id)).state


def weather_tool(calls: Calls | None = None, *, id: str = "get-weather"):
    """Asks "Which city?" with suspend(); once resumed, answers with a forecast for that city."""
    calls = calls if calls is not None else Calls()

    async def execute(input, ctx):
        calls.inputs.append({"input": input, "resume_data": ctx.agent.resume_data})
        calls.contexts.append(ctx)
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which city?"})
        return {"city": ctx.agent.resume_data["city"], "forecast": "sunny", "when": input.get("when")}

    tool = create_tool(
        id=id,
        description="Weather forecast for a city",
        input_schema=WHEN,
        suspend_schema=QUESTION,
        resume_schema=CITY_RESUME,
        execute=execute,
    )
    tool.calls = calls  # type: ignore[attr-defined]
    return tool


def date_tool(calls: Calls | None = None):
    """Asks "Which date?" with suspend(); once resumed, books for that date."""
    calls = calls if calls is not None else Calls()

    async def execute(input, ctx):
        calls.inputs.append({"input": input, "resume_data": ctx.agent.resume_data})
        calls.contexts.append(ctx)
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which date?"})
        return {"booked": ctx.agent.resume_data["date"]}

    tool = create_tool(
        id="book-table",
        description="Book a table",
        input_schema={"type": "object", "properties": {}},
        suspend_schema=QUESTION,
        resume_schema=DATE_RESUME,
        execute=execute,
    )
    tool.calls = calls  # type: ignore[attr-defined]
    return tool


def memory_agent(storage, tools, **kwargs):
    """An agent with thread memory on `storage`."""
    from bot.agent import Agent

    memory = kwargs.pop("memory", None) or Memory(storage)
    return Agent(
        id=kwargs.pop("id", "memory-agent"),
        name=kwargs.pop("name", "Memory Agent"),
        instructions=kwargs.pop("instructions", "You are a test agent."),
        model=kwargs.pop("model", MODEL),
        tools=tools,
        memory=memory,
        **kwargs,
    )


def auto_agent(storage, tools, **kwargs):
    """A memory agent with auto-resume on by default."""
    options = {"auto_resume_suspended_tools": True, **kwargs.pop("default_options", {})}
    return memory_agent(storage, tools, default_options=options, **kwargs)


def system_texts(body: dict) -> list[str]:
    return [content_text(m.get("content")) for m in body["messages"] if m.get("role") == "system"]


def has_waiting_note(body: dict, *words: str) -> bool:
    """Whether the request carries the "still waiting" system note naming all `words`."""
    return any(NOTE in text and all(w in text for w in words) for text in system_texts(body))


def extraction_prompt(body: dict) -> str:
    """The text of the extraction request's user message: the question, the reply, the fields asked for."""
    [user] = [m for m in body["messages"] if m["role"] == "user"]
    return content_text(user["content"])


def requests_of(model, instructions: str) -> list[dict]:
    """The chat requests an agent with these instructions made (its system message comes first)."""
    return [
        r
        for r in model.chat.requests
        if r["messages"]
        and r["messages"][0]["role"] == "system"
        and r["messages"][0]["content"].split("\n\n")[0] == instructions
    ]


def deploy_tool():
    """Asks "Deploy build 142 to production now?"; once resumed, deploys only on a yes."""
    runs: list = []

    async def execute(input, ctx):
        runs.append(ctx.agent.resume_data)
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Deploy build 142 to production now?"})
        return {"deployed": ctx.agent.resume_data["confirmed"]}

    tool = create_tool(
        id="deploy",
        description="Deploy a build to production",
        input_schema={"type": "object", "properties": {}},
        resume_schema={
            "type": "object",
            "properties": {"confirmed": {"type": "boolean"}},
            "required": ["confirmed"],
            "additionalProperties": False,
        },
        execute=execute,
    )
    tool.runs = runs  # type: ignore[attr-defined]
    return tool


async def ask_to_deploy(model, agent):
    model.chat.push(tool_calls(call("deploy", {}, id="c_deploy")))
    first = await agent.generate("Deploy build 142", **OPTS)
    assert first.finish_reason == "suspended"
    return first


__all__ = [
    "CITY_RESUME",
    "DATE_RESUME",
    "NOTE",
    "OPTS",
    "THREAD",
    "USER",
    "Calls",
    "ask_to_deploy",
    "ask_which_city",
    "auto_agent",
    "date_tool",
    "deploy_tool",
    "extraction_prompt",
    "has_waiting_note",
    "memory_agent",
    "record_tool",
    "requests_of",
    "state_of",
    "system_texts",
    "weather_tool",
]
