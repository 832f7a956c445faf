"""How long an answer to an MCP server's question takes to reach the server when it is given through
another replica than the one that holds the call, beside an answer given through the holder itself.

Two agents on one database in one process, each with its own connection to the example MCP server over
stdio (as two replicas would have), the scripted OpenAI-compatible server of tests/support as the
model. Each round: the holder starts `open_ticket`, it is approved, the server asks its question; the
answer is stored through the other replica (which returns at once) or through the holder; the time is
measured until the call's result is stored. SQLite (the holder polls, at most every second) and
PostgreSQL (`LISTEN/NOTIFY`, when a server is reachable at 127.0.0.1:5432), rounds interleaved.

    python benchmarks/mcp_handover.py [--rounds 10] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.agent import Agent  # noqa: E402
from bot.mcp import connect_mcp_servers, load_mcp_config  # noqa: E402
from memory import Storage  # noqa: E402
from tests.support.scripted_model import ScriptedModel, call, reply, tool_calls  # noqa: E402

SERVER = ROOT / "examples" / "mcp" / "server.py"
ANSWER = {"priority": "low", "confirm": True}


async def one_round(holder: Agent, answerer: Agent, model: ScriptedModel, n: int) -> float:
    model.chat.push(tool_calls(call("tickets__open_ticket", {"title": f"bench {n}"}, id=f"call_{n}")), reply("done"))
    approval = await holder.generate("open a ticket")
    question = await holder.approve_tool_call_generate(run_id=approval.run_id)
    assert question.finish_reason == "suspended", question
    call_id = question.suspend_payload.tool_call_id
    started = time.perf_counter()
    stream = await answerer.resume_stream(ANSWER, run_id=question.run_id, tool_call_id=call_id)
    await stream.result()
    while (await holder.get_tool_call(question.run_id, call_id)).state != "done":
        await asyncio.sleep(0.005)
    return time.perf_counter() - started


async def postgres_url() -> str | None:
    try:
        import asyncpg

        connection = await asyncpg.connect(host="127.0.0.1", port=5432, user="postgres", database="postgres")
    except (OSError, ImportError, Exception):  # noqa: BLE001 - no server: SQLite only
        return None
    name = f"bench_{uuid.uuid4().hex[:12]}"
    await connection.execute(f'CREATE DATABASE "{name}"')
    await connection.close()
    return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--no-postgres", action="store_true")
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="mcp-handover-"))
    config = directory / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"tickets": {"command": sys.executable, "args": [str(SERVER)]}}}))
    urls = {"sqlite": f"sqlite+aiosqlite:///{directory}/bench.db"}
    if not options.no_postgres and (url := await postgres_url()):
        urls["postgresql"] = url
    results: dict[str, list[float]] = {}
    with ScriptedModel() as model:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = model.base_url, "bench"
        for database, url in urls.items():
            storage = Storage(url)
            await storage.migrate()
            first = await connect_mcp_servers(load_mcp_config(config, {}))
            second = await connect_mcp_servers(load_mcp_config(config, {}))
            holder = Agent(id="bench", model="openai/test-model", tools=first.tools, storage=storage)
            other = Agent(id="bench", model="openai/test-model", tools=second.tools, storage=storage)
            try:
                await one_round(holder, holder, model, -1)  # warm-up
                for n in range(options.rounds):  # interleaved
                    for label, answerer in (("holder", holder), ("other replica", other)):
                        key = f"{database}, answered through the {label}"
                        results.setdefault(key, []).append(await one_round(holder, answerer, model, n))
            finally:
                await first.aclose()
                await second.aclose()
                await storage.close()
    if "postgresql" in urls:
        import asyncpg

        connection = await asyncpg.connect(host="127.0.0.1", port=5432, user="postgres", database="postgres")
        await connection.execute(f'DROP DATABASE IF EXISTS "{urls["postgresql"].rsplit("/", 1)[1]}" WITH (FORCE)')
        await connection.close()
    print(f"answer stored -> the call's result stored, {options.rounds} rounds each (ms):")
    print(f"{'':48} {'median':>8} {'max':>8}")
    for key, times in results.items():
        print(f"{key:48} {statistics.median(times) * 1000:8.1f} {max(times) * 1000:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
