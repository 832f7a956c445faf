"""An agent process for the multi-process tests: `python -m tests.runtime.process_agent COMMAND`.

Reads DATABASE_URL, OPENAI_BASE_URL/OPENAI_API_KEY, SIDE_EFFECT_FILE and TOOL_SECONDS (how long
delete-record takes, default 0) from the environment and
prints one JSON line with what happened. Commands:

    suspend-approval             start a run that waits for approval of delete-record {"id": "42"}
    suspend-ask                  start a run whose ask-city tool suspends
    approve RUN CALL [BARRIER N] approve that call (after N processes reached the barrier directory)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from tools import create_tool

DELETE_INPUT = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def build_tools(side_effect_file: str) -> list:
    async def delete_record(input, ctx):
        # A slow tool keeps the winner of a race busy while the loser tries to claim the call.
        await asyncio.sleep(float(os.environ.get("TOOL_SECONDS", "0")))
        # O_APPEND: lines from several processes never overwrite each other.
        fd = os.open(side_effect_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"deleted {input['id']} by pid {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return {"deleted": True, "id": input["id"]}

    async def ask_city(input, ctx):
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which city?"})
        fd = os.open(side_effect_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"city {ctx.agent.resume_data['city']} by pid {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return {"city": ctx.agent.resume_data["city"], "asked": ctx.agent.suspend_payload}

    return [
        create_tool(
            id="delete-record",
            description="Delete a record by ID",
            input_schema=DELETE_INPUT,
            require_approval=True,
            execute=delete_record,
        ),
        create_tool(
            id="ask-city",
            description="Ask the user for a city",
            suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
            resume_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            execute=ask_city,
        ),
    ]


def build_agent(storage, side_effect_file: str):
    from bot.agent import Agent

    return Agent(
        id="process-agent",
        name="Process Agent",
        instructions="You delete records.",
        model="openai/test-model",
        tools=build_tools(side_effect_file),
        storage=storage,
    )


def wait_at_barrier(directory: str, parties: int, timeout: float = 60) -> None:
    Path(directory, f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + timeout
    while len(list(Path(directory).glob("ready-*"))) < parties:
        if time.monotonic() > deadline:
            raise TimeoutError("barrier")
        time.sleep(0.001)


async def main(argv: list[str]) -> dict:
    from bot.agent import ToolCallNotSuspendedError
    from memory import Storage

    storage = Storage(os.environ["DATABASE_URL"])
    try:
        await storage.migrate()
        agent = build_agent(storage, os.environ["SIDE_EFFECT_FILE"])
        command = argv[0]
        if command in ("suspend-approval", "suspend-ask"):
            prompt = "Delete record 42" if command == "suspend-approval" else "What is the weather?"
            stream = await agent.stream(prompt, resource_id="u1")
            waiting = None
            async for chunk in stream.full_stream:
                if chunk.type in ("tool-call-approval", "tool-call-suspended"):
                    waiting = chunk.payload["tool_call_id"]
            output = await stream.result()
            return {"run_id": stream.run_id, "tool_call_id": waiting, "finish_reason": output.finish_reason}
        if command == "approve":
            run_id, tool_call_id = argv[1], argv[2]
            if len(argv) > 3:
                wait_at_barrier(argv[3], int(argv[4]))
            try:
                stream = await agent.approve_tool_call(run_id=run_id, tool_call_id=tool_call_id)
                chunks = [chunk async for chunk in stream.full_stream]
            except ToolCallNotSuspendedError as exc:
                return {"outcome": "not_suspended", "message": str(exc)}
            finish = [c.payload["finish_reason"] for c in chunks if c.type == "finish"]
            return {"outcome": "approved", "finish_reason": finish[-1] if finish else None}
        raise SystemExit(f"unknown command {command!r}")
    finally:
        await storage.close()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:]))), flush=True)
