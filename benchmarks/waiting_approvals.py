"""Waiting approvals at scale: do the queries about them stay flat from 100 to 100,000 waiting calls?
(issue 19)

For each size N the script fills a fresh database with N runs of one agent, each parked on one call
that waits for approval (rows written directly, in bulk: spread over 1,000 threads and 100 users,
waiting for a minute), then times, as the median of `--repeat` tries:

- `list_suspended_runs()`: the unfiltered first page of 50 (with its `total`);
- `list_suspended_runs(thread_id=...)` and `(resource_id=...)`: a thread's and a user's page;
- a decision: `decline_tool_call` on one waiting call, until the decision is committed and the run's
  stream exists (the run then goes on with the scripted model, outside the timing);
- the expiry sweep: `expire_waiting_approvals()` with the tool's expiry at one hour (nothing is old
  enough: the sweep's query is what is timed).

Each is reported in ms and as a ratio to the smallest size; issue 19's target is 1.2x at most.

    python benchmarks/waiting_approvals.py                            # SQLite, 100 / 1,000 / 10,000 / 100,000
    python benchmarks/waiting_approvals.py --database postgres --sizes 100 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert  # noqa: E402

from bot.agent import Agent  # noqa: E402
from memory import Storage  # noqa: E402
from memory._policies import PolicyChange  # noqa: E402
from memory.tables import RunRow, ToolCallRow, utcnow  # noqa: E402
from tests.support.scripted_model import ScriptedModel, reply  # noqa: E402
from tools import create_tool  # noqa: E402

AGENT = "bench-agent"
TOOL = "delete-record"


def build_agent(storage: Storage) -> Agent:
    async def delete_record(input: dict, ctx: object) -> dict:
        return {"deleted": input["id"]}

    tool = create_tool(
        id=TOOL,
        description="Delete a record by ID",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        execute=delete_record,
        require_approval=True,
    )
    return Agent(id=AGENT, name="bench", instructions="bench", model="openai/test-model", tools={TOOL: tool}).attach(
        storage=storage
    )


async def fill(storage: Storage, size: int) -> list[tuple[str, str]]:
    """`size` runs parked on one waiting approval each; their (run id, call id)."""
    now = utcnow()
    runs, calls, ids = [], [], []
    for index in range(size):
        run_id = uuid.uuid4().hex
        since = now - timedelta(seconds=60, milliseconds=index)  # none old enough for the expiry
        thread, user = f"thread-{index % 1000}", f"U{index % 100:04d}"
        runs.append(
            dict(
                id=run_id, agent_id=AGENT, thread_id=thread, resource_id=user, uses_memory=False,
                parent_run_id=None, status="suspended", owner=None, heartbeat_at=None, step=1, max_steps=10,
                require_tool_approval=None, request_context={}, created_at=since, updated_at=since,
                suspended_at=since,
            )
        )  # fmt: skip
        calls.append(
            dict(
                run_id=run_id, tool_call_id=f"call_{index}", agent_id=AGENT, thread_id=thread, resource_id=user,
                step=0, position=0, tool_name=TOOL, args={"id": index}, state="awaiting_approval",
                requires_approval=True, created_at=since, updated_at=since, suspended_at=since,
            )
        )  # fmt: skip
        ids.append((run_id, f"call_{index}"))
    async with storage.transaction() as connection:
        for start in range(0, size, 5000):
            await connection.execute(insert(RunRow.__table__), runs[start : start + 5000])
            await connection.execute(insert(ToolCallRow.__table__), calls[start : start + 5000])
    async with storage.read() as connection:  # the statistics a database has once its autovacuum ran
        await connection.exec_driver_sql("ANALYZE")
    return ids


async def timed(work, repeat: int) -> float:
    samples = []
    await work()  # warm: statements compiled, connections open
    for _ in range(repeat):
        started = time.perf_counter()
        await work()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def measure(url: str, size: int, repeat: int, model: ScriptedModel) -> dict[str, float]:
    storage = Storage(url)
    await storage.migrate()
    try:
        ids = await fill(storage, size)
        agent = build_agent(storage)
        await storage.policies.set(TOOL, PolicyChange(expires_after=3600))
        results = {
            "page (unfiltered)": await timed(lambda: agent.list_suspended_runs(), repeat),
            "page (by thread)": await timed(lambda: agent.list_suspended_runs(thread_id="thread-7"), repeat),
            "page (by resource)": await timed(lambda: agent.list_suspended_runs(resource_id="U0007"), repeat),
            "expiry sweep": await timed(agent.expire_waiting_approvals, repeat),
        }
        decisions = []
        for run_id, call_id in ids[size // 2 : size // 2 + repeat]:
            model.chat.push(reply("Not deleted."))
            started = time.perf_counter()
            stream = await agent.decline_tool_call(run_id=run_id, tool_call_id=call_id, reason="bench")
            decisions.append((time.perf_counter() - started) * 1000)
            await stream.result()
        results["decision"] = statistics.median(decisions)
        return results
    finally:
        await storage.close()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    table: dict[int, dict[str, float]] = {}
    with ScriptedModel() as model, tempfile.TemporaryDirectory(prefix="waiting-") as directory:
        os.environ["OPENAI_BASE_URL"] = model.base_url
        os.environ.setdefault("OPENAI_API_KEY", "bench")
        for size in args.sizes:
            if args.database == "sqlite":
                url = f"sqlite+aiosqlite:///{directory}/waiting-{size}.db"
                table[size] = await measure(url, size, args.repeat, model)
            else:
                import asyncpg

                name = f"bot_waiting_{uuid.uuid4().hex[:10]}"
                admin = await asyncpg.connect(host="127.0.0.1", user="postgres", database="postgres")
                await admin.execute(f'CREATE DATABASE "{name}"')
                try:
                    table[size] = await measure(
                        f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}", size, args.repeat, model
                    )
                finally:
                    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                    await admin.close()
            print(f"{size} waiting: " + ", ".join(f"{k} {v:.2f} ms" for k, v in table[size].items()), flush=True)
    smallest = table[args.sizes[0]]
    print(f"\n{args.database}, median of {args.repeat}; load {os.getloadavg()[0]:.1f}")
    print("| query | " + " | ".join(f"{size:,} waiting" for size in args.sizes) + " |")
    print("| --- |" + " --- |" * len(args.sizes))
    flat = True
    for query in smallest:
        cells = []
        for size in args.sizes:
            ratio = table[size][query] / smallest[query]
            flat &= ratio <= 1.2
            cells.append(f"{table[size][query]:.2f} ms ({ratio:.2f}x)")
        print(f"| {query} | " + " | ".join(cells) + " |")
    print("every query within 1.2x:", "yes" if flat else "NO")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
