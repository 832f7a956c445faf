"""What an MCP tool adds to an approval cycle beside a native tool, and what each stdio server costs at start.

One approval cycle: the model proposes a call, the call waits for approval, it is approved, the tool
runs, the model answers (the scripted OpenAI-compatible server of tests/support, SQLite). The same cycle
runs, interleaved, with a native Python tool and with the example MCP server's `list_tickets` over stdio (a server
not trusted, so it asks for approval like the native one), CPU (this process) and wall clock, one run
of N cycles each after warm-ups. Then the example server is started K times at once: the wall time
until all have listed their tools, per server.

    python benchmarks/mcp_tools.py [--cycles 50] [--servers 1 2 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.agent import Agent  # noqa: E402
from bot.mcp import connect_mcp_servers, load_mcp_config  # noqa: E402
from memory import Storage  # noqa: E402
from tests.support.scripted_model import ScriptedModel, call, reply, tool_calls  # noqa: E402
from tools import create_tool  # noqa: E402

SERVER = ROOT / "examples" / "mcp" / "server.py"
TICKETS = [{"id": 1, "title": "Login page is slow", "priority": "high", "open": True}]


async def native_list(input, ctx):
    return TICKETS


def server_configs(count: int, directory: Path):
    servers = {f"tickets-{i}": {"command": sys.executable, "args": [str(SERVER)]} for i in range(count)}
    path = directory / f"servers-{count}.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return load_mcp_config(path, {})


async def cycles(agent: Agent, model: ScriptedModel, tool: str, count: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for n in range(count):
        model.chat.push(tool_calls(call(tool, {}, id=f"call_{n}")), reply("done"))
        stream = await agent.stream("list the tickets", thread_id=None, resource_id="bench")
        async for chunk in stream.full_stream:
            if chunk.type == "tool-call-approval":
                approved = await agent.approve_tool_call(
                    run_id=chunk.run_id, tool_call_id=chunk.payload["tool_call_id"]
                )
                output = await approved.result()
                assert output.text == "done", output
    return (time.process_time() - cpu) / count, (time.perf_counter() - wall) / count


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    with ScriptedModel() as model:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = model.base_url, "bench"
        servers = await connect_mcp_servers(server_configs(1, directory))
        storage = Storage(f"sqlite+aiosqlite:///{directory}/bench.db")
        await storage.migrate()
        native = create_tool(id="native-list", description="List tickets", execute=native_list, require_approval=True)
        agent = Agent(id="bench", model="openai/test-model", tools=[native, *servers.tools], storage=storage)
        try:
            names = ("native-list", "tickets-0__list_tickets")
            for name in names:
                await cycles(agent, model, name, 3)  # warm-up
            totals = {name: [0.0, 0.0] for name in names}
            for _ in range(options.cycles):  # interleaved, so both see the same machine and database
                for name in names:
                    cpu, wall = await cycles(agent, model, name, 1)
                    totals[name][0] += cpu / options.cycles
                    totals[name][1] += wall / options.cycles
            results = {name: tuple(pair) for name, pair in totals.items()}
        finally:
            await servers.aclose()
            await storage.close()
    base_cpu, base_wall = results["native-list"]
    print(f"approval cycle, {options.cycles} cycles each (per cycle):")
    print(f"{'tool':28} {'CPU ms':>8} {'wall ms':>8} {'CPU ratio':>10} {'wall ratio':>10}")
    for name, (cpu, wall) in results.items():
        print(f"{name:28} {cpu * 1000:8.1f} {wall * 1000:8.1f} {cpu / base_cpu:10.2f} {wall / base_wall:10.2f}")
    print("\nstartup of stdio servers (all at once, until each listed its tools):")
    print(f"{'servers':>8} {'wall s':>8} {'per server s':>13}")
    for count in options.servers:
        started = time.perf_counter()
        servers = await connect_mcp_servers(server_configs(count, directory))
        wall = time.perf_counter() - started
        assert not servers.unavailable, servers.unavailable
        await servers.aclose()
        print(f"{count:8d} {wall:8.2f} {wall / count:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
