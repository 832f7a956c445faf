"""Waiting approvals at scale: do the queries about them stay flat from 100 to 100,000 waiting calls?
(issue 19)

For each size N the script fills a fresh database with N runs of one agent, each parked on one call
that waits for approval (rows written directly, in bulk: spread over 1,000 threads and 100 users,
waiting for a minute), then times, as the median of `--repeat` tries:

- `list_suspended_runs()`: the unfiltered first page of 50 (with its `total`);
- `list_suspended_runs(thread_id=...)` and `(resource_id=...)`: a thread's and a user's page (one of
  the 1,000 threads and 100 users, whose waiting runs grow with N; and a thread and a user that have
  `PROBE` waiting runs at every size, so their page and total are the same and only the rest grows);
- a decision: `decline_tool_call` on one waiting call, until the decision is committed and the run's
  stream exists (the run then goes on with the scripted model, outside the timing);
- the expiry sweep: `expire_waiting_approvals()` with the tool's expiry at one hour (nothing is old
  enough: the sweep's query is what is timed).

The sizes are timed side by side (each round runs every query once on every size). Each is reported in
ms and as a ratio to the smallest size; issue 19's target is 1.2x at most. The verdict leaves out the
two pages whose result grows with N (1 run shown against 50, a total of 1 against 100 or 251): their
ratio measures the answer's size, not the scale; the probe's pages are the same query at a fixed size.

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

from sqlalchemy import event, insert  # noqa: E402

from bot.agent import Agent  # noqa: E402
from memory import Storage  # noqa: E402
from memory._policies import PolicyChange  # noqa: E402
from memory.tables import RunRow, ToolCallRow, utcnow  # noqa: E402
from tests.support.scripted_model import ScriptedModel, reply  # noqa: E402
from tools import create_tool  # noqa: E402

AGENT = "bench-agent"
TOOL = "delete-record"
PROBE = 60
"""Waiting runs of one thread and one user ("probe", "U-probe") at every size: their pages hold the same
runs whatever the size, so what grows is only what the database has to look past."""
GROWING_THREAD = "page (by thread: 1 or 100 waiting)"
GROWING_RESOURCE = "page (by resource: 1 or 1,000 waiting)"
"""The pages whose result grows with the size (left out of the verdict)."""


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
        thread, user = (f"thread-{index % 1000}", f"U{index % 100:04d}") if index >= PROBE else ("probe", "U-probe")
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


async def explain(storage: Storage, label: str, work) -> None:
    """Print the query plan of every SELECT that `work` runs (EXPLAIN QUERY PLAN / EXPLAIN)."""
    seen: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, _context, _many) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, parameters))

    event.listen(storage.engine.sync_engine, "before_cursor_execute", record)
    try:
        await work()
    finally:
        event.remove(storage.engine.sync_engine, "before_cursor_execute", record)
    prefix = "EXPLAIN QUERY PLAN " if storage.is_sqlite else "EXPLAIN "
    async with storage.read() as connection:
        for statement, parameters in seen:
            rows = await connection.exec_driver_sql(prefix + statement, parameters)
            plan = "\n    ".join(" ".join(str(c) for c in row[-1:]) for row in rows)
            print(f"  {label}: {' '.join(statement.split())[:160]}\n    {plan}")


class Size:
    """One database with `size` waiting calls, and the queries timed on it."""

    def __init__(self, url: str, size: int):
        self.url, self.size = url, size
        self.samples: dict[str, list[float]] = {}

    async def open(self, show_plans: bool) -> None:
        self.storage = Storage(self.url)
        await self.storage.migrate()
        self.ids = await fill(self.storage, self.size)
        self.agent = agent = build_agent(self.storage)
        await self.storage.policies.set(TOOL, PolicyChange(expires_after=3600))
        self.queries = {
            "page (unfiltered)": lambda: agent.list_suspended_runs(),
            GROWING_THREAD: lambda: agent.list_suspended_runs(thread_id="thread-107"),
            GROWING_RESOURCE: lambda: agent.list_suspended_runs(resource_id="U0007"),
            f"page (by thread, {PROBE} waiting at every size)": lambda: agent.list_suspended_runs(thread_id="probe"),
            f"page (by resource, {PROBE} waiting at every size)": lambda: agent.list_suspended_runs(
                resource_id="U-probe"
            ),
            "expiry sweep": agent.expire_waiting_approvals,
        }
        if show_plans:
            print(f"{self.size} waiting, query plans:")
            for label, work in self.queries.items():
                await explain(self.storage, label, work)
        for work in self.queries.values():
            await work()  # warm: statements compiled, connections open
        self.decided = self.size // 2

    async def time(self, query: str, model: ScriptedModel) -> None:
        if query == "decision":
            run_id, call_id = self.ids[self.decided]
            self.decided += 1
            model.chat.push(reply("Not deleted."))
            started = time.perf_counter()
            stream = await self.agent.decline_tool_call(run_id=run_id, tool_call_id=call_id, reason="bench")
            self.samples.setdefault(query, []).append((time.perf_counter() - started) * 1000)
            await stream.result()  # the run goes on with the scripted model, outside the timing
            return
        started = time.perf_counter()
        await self.queries[query]()
        self.samples.setdefault(query, []).append((time.perf_counter() - started) * 1000)

    def median(self, query: str) -> float:
        return statistics.median(self.samples[query])


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--explain", action="store_true", help="print the query plans of each size")
    args = parser.parse_args()
    sizes: list[Size] = []
    databases: list[str] = []
    admin = None
    with ScriptedModel() as model, tempfile.TemporaryDirectory(prefix="waiting-") as directory:
        os.environ["OPENAI_BASE_URL"] = model.base_url
        os.environ.setdefault("OPENAI_API_KEY", "bench")
        try:
            if args.database == "postgres":
                import asyncpg

                admin = await asyncpg.connect(host="127.0.0.1", user="postgres", database="postgres")
            for size in args.sizes:
                if admin is None:
                    url = f"sqlite+aiosqlite:///{directory}/waiting-{size}.db"
                else:
                    name = f"bot_waiting_{uuid.uuid4().hex[:10]}"
                    await admin.execute(f'CREATE DATABASE "{name}"')
                    databases.append(name)
                    url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
                sizes.append(Size(url, size))
                await sizes[-1].open(args.explain)
            queries = [*sizes[0].queries, "decision"]
            # Side by side: each round times every query once on every size, so the machine's load
            # (and the first-measured effect) weighs on all sizes alike.
            for _ in range(args.repeat):
                for query in queries:
                    for each in sizes:
                        await each.time(query, model)
        finally:
            for each in sizes:
                if hasattr(each, "storage"):
                    await each.storage.close()
            if admin is not None:
                for name in databases:
                    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                await admin.close()
    smallest = sizes[0]
    print(f"\n{args.database}, median of {args.repeat}, sizes interleaved; load {os.getloadavg()[0]:.1f}")
    print("| query | " + " | ".join(f"{each.size:,} waiting" for each in sizes) + " |")
    print("| --- |" + " --- |" * len(sizes))
    flat = True
    for query in queries:
        cells = []
        for each in sizes:
            ratio = each.median(query) / smallest.median(query)
            flat &= ratio <= 1.2 or query in (GROWING_THREAD, GROWING_RESOURCE)
            cells.append(f"{each.median(query):.2f} ms ({ratio:.2f}x)")
        print(f"| {query} | " + " | ".join(cells) + " |")
    print("every query whose result does not grow within 1.2x:", "yes" if flat else "NO")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
