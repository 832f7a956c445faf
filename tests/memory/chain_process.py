"""A supervisor chain in its own process: `python -m tests.memory.chain_process COMMAND`.

top (memory, auto-resume on) -> mid -> leaf, the leaf holding `delete-record` (needs approval) and
`get-weather` (asks "Which city?" with suspend()). Reads DATABASE_URL, OPENAI_BASE_URL/OPENAI_API_KEY
and SIDE_EFFECT_FILE; prints one JSON line. Commands:

    suspend-ask        start a run in thread "th-restart" whose leaf tool asks which city
    suspend-approval   start a run in that thread whose leaf tool waits for approval
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from tests.runtime.helpers import Calls
from tools import create_tool

MODEL = "openai/test-model"
THREAD, USER = "th-restart", "u-restart"
INSTRUCTIONS = {"top": "You are top.", "mid": "You are mid.", "leaf": "You are leaf."}
CITY_RESUME = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def _effect(side_effect_file: str | None, line: str) -> None:
    if side_effect_file:
        fd = os.open(side_effect_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{line} by pid {os.getpid()}\n".encode())
        finally:
            os.close(fd)


def leaf_tools(side_effect_file: str | None = None, calls: Calls | None = None) -> list:
    calls = calls if calls is not None else Calls()

    async def delete_record(input, ctx):
        calls.inputs.append(("delete-record", input))
        _effect(side_effect_file, f"deleted {input['id']}")
        return {"deleted": True, "id": input["id"]}

    async def get_weather(input, ctx):
        calls.inputs.append(("get-weather", ctx.agent.resume_data))
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which city?"})
        if ctx.agent.resume_data["city"] == "Atlantis":  # asks again
            return await ctx.agent.suspend({"question": "Atlantis is not on the map. Which city?"})
        _effect(side_effect_file, f"city {ctx.agent.resume_data['city']}")
        return {"city": ctx.agent.resume_data["city"], "forecast": "sunny"}

    return [
        create_tool(
            id="delete-record",
            description="Delete a record by ID",
            input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            require_approval=True,
            execute=delete_record,
        ),
        create_tool(
            id="get-weather",
            description="Weather for a city",
            input_schema={"type": "object", "properties": {"when": {"type": "string"}}},
            suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
            resume_schema=CITY_RESUME,
            execute=get_weather,
        ),
    ]


def build_chain(
    storage,
    *,
    depth: int = 3,
    side_effect_file: str | None = None,
    calls: Calls | None = None,
    auto_resume: bool = True,
    memory=None,
):
    """[top, (mid,) leaf]: `depth` agents, each the supervisor of the next. Only the top one is given
    storage (through memory); the sub-agents share it."""
    from bot.agent import Agent
    from memory import Memory

    leaf = Agent(
        id="leaf",
        name="Leaf",
        instructions=INSTRUCTIONS["leaf"],
        model=MODEL,
        tools=leaf_tools(side_effect_file, calls),
        description="Deletes records and tells the weather",
    )
    chain = [leaf]
    if depth >= 3:
        chain.insert(
            0,
            Agent(
                id="mid",
                name="Mid",
                instructions=INSTRUCTIONS["mid"],
                model=MODEL,
                agents=[leaf],
                description="Delegates to leaf",
            ),
        )
    top = Agent(
        id="top",
        name="Top",
        instructions=INSTRUCTIONS["top"],
        model=MODEL,
        agents=[chain[0]],
        memory=memory or Memory(storage),
        default_options={"auto_resume_suspended_tools": auto_resume},
    )
    return [top, *chain]


async def main(argv: list[str]) -> dict:
    from memory import Storage

    storage = Storage(os.environ["DATABASE_URL"])
    try:
        await storage.migrate()
        top = build_chain(storage, side_effect_file=os.environ["SIDE_EFFECT_FILE"])[0]
        command = argv[0]
        if command not in ("suspend-ask", "suspend-approval"):
            raise SystemExit(f"unknown command {command!r}")
        prompt = "Weather tomorrow?" if command == "suspend-ask" else "Delete record 7"
        stream = await top.stream(prompt, thread_id=THREAD, resource_id=USER)
        waiting = None
        async for chunk in stream.full_stream:
            if chunk.type in ("tool-call-approval", "tool-call-suspended"):
                waiting = {"type": chunk.type, **chunk.payload}
        output = await stream.result()
        return {"run_id": stream.run_id, "waiting": waiting, "finish_reason": output.finish_reason}
    finally:
        await storage.close()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:]))), flush=True)
