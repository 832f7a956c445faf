"""An agent process that dies on purpose, for the recovery tests: `python -m tests.runtime.crash_agent COMMAND`.

Reads DATABASE_URL, OPENAI_BASE_URL/OPENAI_API_KEY and EFFECTS (a file every tool execution appends
to, with O_APPEND so lines from several processes never overwrite each other) from the environment.
`CRASH_AT` names the point where the process kills itself with SIGKILL, so nothing is cleaned up:

    suspended     as soon as the run's stream announces a call that waits (it is stored by then)
    before_tool   in the `before_tool_call` hook: the call was decided (or needs no decision), its tool
                  has not started
    in_tool       inside `execute` of the tool named by CRASH_TOOL (default delete-record), after it
                  wrote its "started" line: the tool may have taken effect, no result is stored

`PAUSE_BEFORE_TOOL=PATH` makes the `before_tool_call` hook (after the decision, before the started
mark) create `PATH.reached` and wait until `PATH` exists: the test does something in between.
`HOLD_LOOP_IN_TOOL=PATH` makes `list-records` create `PATH.reached` and then block its event loop (a
synchronous wait, as a tool that computes would) until `PATH` exists.

Commands (each prints one JSON line when it does not die first):

    start PROMPT           start a run (scripted by the test's model) and read it to its end
    approve RUN CALL       approve that call and read the run to its end
    recover STALE          recover_stale_runs(stale_after=STALE) and wait for the work it started
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

from tools import create_tool

RECORD = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def effect(line: str) -> None:
    fd = os.open(os.environ["EFFECTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def die_if(point: str, tool_name: str | None = None) -> None:
    if os.environ.get("CRASH_AT") != point:
        return
    if tool_name is not None and tool_name != os.environ.get("CRASH_TOOL", "delete-record"):
        return
    os.kill(os.getpid(), signal.SIGKILL)


def hold_loop_if(tool_name: str) -> None:
    gate = os.environ.get("HOLD_LOOP_IN_TOOL")
    if not gate or tool_name != "list-records":
        return
    open(gate + ".reached", "w").close()
    while not os.path.exists(gate):
        time.sleep(0.02)  # on purpose: nothing else on this loop runs meanwhile


def build_agent(storage, **options):
    from bot.agent import Agent

    def tool(name: str, *, require_approval: bool, seconds: float = 0.0):
        async def execute(input, ctx):
            effect(f"started {name} {input['id']} key={ctx.idempotency_key} pid={os.getpid()}")
            die_if("in_tool", name)
            hold_loop_if(name)
            await asyncio.sleep(seconds)
            effect(f"finished {name} {input['id']} pid={os.getpid()} key={ctx.idempotency_key}")
            return {"done": name, "id": input["id"]}

        return create_tool(
            id=name,
            description=f"{name} by ID",
            input_schema=RECORD,
            require_approval=require_approval,
            execute=execute,
        )

    async def before_tool_call(call):
        die_if("before_tool")
        gate = os.environ.get("PAUSE_BEFORE_TOOL")
        if gate:
            open(gate + ".reached", "w").close()
            while not os.path.exists(gate):
                await asyncio.sleep(0.02)

    return Agent(
        id="crash-agent",
        instructions="You act on records.",
        model="openai/test-model",
        tools=[
            tool("delete-record", require_approval=True),
            tool("list-records", require_approval=False, seconds=float(os.environ.get("LIST_SECONDS", "0"))),
        ],
        storage=storage,
        hooks={"before_tool_call": before_tool_call},
        default_options={"heartbeat_interval": 0.2, **options},
    )


async def read(stream) -> dict:
    chunks = []
    async for chunk in stream.full_stream:
        chunks.append(chunk)
        if chunk.type in ("tool-call-approval", "tool-call-suspended"):
            die_if("suspended")
    finish = [c.payload["finish_reason"] for c in chunks if c.type == "finish"]
    waiting = [c.payload["tool_call_id"] for c in chunks if c.type in ("tool-call-approval", "tool-call-suspended")]
    return {"run_id": stream.run_id, "finish_reason": finish[-1] if finish else None, "waiting": waiting}


async def main(argv: list[str]) -> dict:
    from memory import Storage
    from tests.support.clock import MovableClock

    # CLOCK_AHEAD: this process's clock runs that many seconds ahead (a lease looks that much older)
    storage = Storage(os.environ["DATABASE_URL"], clock=MovableClock(ahead=float(os.environ.get("CLOCK_AHEAD", "0"))))
    try:
        agent = build_agent(storage)
        command = argv[0]
        if command == "start":
            return await read(await agent.stream(argv[1], resource_id="u1"))
        if command == "approve":
            return await read(await agent.approve_tool_call(run_id=argv[1], tool_call_id=argv[2]))
        if command == "recover":
            streams = []
            agent.hooks["on_background_stream"] = streams.append
            recovered = await agent.recover_stale_runs(stale_after=float(argv[1]))
            outputs = [await read(stream) for stream in streams]
            return {"recovered": recovered, "outputs": outputs}
        raise SystemExit(f"unknown command {command!r}")
    finally:
        await storage.close()


def bot_agent():
    """For `python -m bot serve --agent tests.runtime.crash_agent:bot_agent`: the bot attaches its storage."""
    return build_agent(None)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1:]))), flush=True)
