"""What does one approval cycle cost, here and in other agent frameworks? (issue 9)

One cycle, the same for every system, against the same scripted OpenAI-compatible server (the one the
tests use, run in its own process so its CPU is not counted):

1. a user message ("delete record 3"); the model calls `delete_record`, which needs approval;
2. the run's state is stored in SQLite;
3. new objects are built, as after a restart (agent, storage/checkpointer, model wrapper);
4. the call is approved; the tool runs (checked: exactly once, every cycle); the model answers.

Systems:
- LangGraph (`langchain.agents.create_agent` + `HumanInTheLoopMiddleware` + `AsyncSqliteSaver`);
- the OpenAI Agents SDK (`needs_approval=True`, `RunState` JSON stored in one SQLite row);
- a hand-written floor: the openai client, two calls, one row per run (aiosqlite);
- a hand-written durable floor: the same loop with the six commits this project makes (the run and the
  message; the step with the call, parked, audited; the decision, audited, with the run's lease; the
  started mark; the result, its message, audited, the run claimed back; the answer and the end), in
  plain SQL on aiosqlite: what the design costs, so the ratio to it is what the implementation adds;
- this project (`Agent.generate` -> `approve_tool_call_generate` on new `Agent` and `Storage`);
- this project, process restart: step 1 here, steps 3-4 in a new Python process each cycle.

Per cycle: wall ms (median), CPU ms (this process; for the restart variant the child's CPU too),
stored bytes (the length of every value in every row the cycle wrote, audit rows included), and for
this project the SQLite transactions (COMMIT) and statements (counted in one more cycle after the
measured ones: the listeners that count them cost CPU). Ratios are to this project, measured in
one run, the systems taking turns cycle by cycle. As DECISIONS.md allows, a process-wide model
client and schema check are shared across the new objects (LangChain caches its client likewise).

    pip install -e '.[bench]'
    python benchmarks/approval_cycle.py                 # 40 cycles each after 5 warm-ups
    python benchmarks/approval_cycle.py --cycles 100 --only project floor
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODEL = "test-model"
PROMPT = "delete record 3"
ANSWER = "Deleted record 3."
TOOL_DESCRIPTION = "Delete a record by ID"
FLOOR_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "delete_record",
            "description": TOOL_DESCRIPTION,
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        },
    }
]
"""The tool as the hand-written floors offer it to the model (the plain and the durable one)."""


# --- the scripted model, in its own process ---------------------------------------------------
def serve_model() -> None:
    """`--serve-model`: the scripted server answering every cycle: a tool call, then the answer."""
    from tests.support.scripted_model import ScriptedModel, call, reply, tool_calls

    def answer(body: dict) -> Any:
        last = body["messages"][-1]
        if last.get("role") == "tool":
            return reply(ANSWER)
        return tool_calls(call("delete_record", {"id": 3}))

    with ScriptedModel() as model:
        model.chat.push(*([answer] * 1_000_000))
        print(model.base_url, flush=True)
        sys.stdin.read()  # until the benchmark closes our stdin


class Executions:
    """How many times the tool ran, per cycle (a cycle's records are named by its id)."""

    def __init__(self) -> None:
        self.count = 0

    def ran(self) -> None:
        self.count += 1


def stored_bytes(path: Path) -> int:
    """The length of every value of every row in the SQLite database at `path`."""
    connection = sqlite3.connect(path)
    try:
        total = 0
        tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            columns = [r[1] for r in connection.execute(f'PRAGMA table_info("{table}")')]
            if not columns:
                continue
            expression = " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in columns)
            total += connection.execute(f'SELECT coalesce(sum({expression}), 0) FROM "{table}"').fetchone()[0]
        return total
    finally:
        connection.close()


# --- the systems ---------------------------------------------------------------------------
class System:
    name = ""

    def __init__(self, workdir: Path, base_url: str):
        self.workdir = workdir
        self.base_url = base_url
        self.path = workdir / f"{self.name}.db"

    async def setup(self) -> None: ...

    async def cycle(self, executions: Executions) -> str:
        """One cycle; returns the model's final answer."""
        raise NotImplementedError

    def child_cpu(self) -> float:
        return 0.0


class LangGraph(System):
    name = "langgraph"

    async def cycle(self, executions: Executions) -> str:
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langchain_core.tools import tool
        from langchain_openai import ChatOpenAI
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        from langgraph.types import Command

        @tool
        def delete_record(id: int) -> dict:
            """Delete a record by ID"""
            executions.ran()
            return {"deleted": True}

        def build(saver: Any) -> Any:
            model = ChatOpenAI(model=MODEL, base_url=self.base_url, api_key="bench")
            return create_agent(
                model,
                tools=[delete_record],
                middleware=[HumanInTheLoopMiddleware(interrupt_on={"delete_record": True})],
                checkpointer=saver,
            )

        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        async with AsyncSqliteSaver.from_conn_string(str(self.path)) as saver:
            first = await build(saver).ainvoke({"messages": [{"role": "user", "content": PROMPT}]}, config)
            assert first.get("__interrupt__"), "LangGraph did not stop for approval"
        async with AsyncSqliteSaver.from_conn_string(str(self.path)) as saver:  # as after a restart
            result = await build(saver).ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
        return result["messages"][-1].content


class AgentsSDK(System):
    name = "openai-agents"

    async def setup(self) -> None:
        import agents
        import openai

        agents.set_tracing_disabled(True)
        agents.set_default_openai_api("chat_completions")
        agents.set_default_openai_client(openai.AsyncOpenAI(base_url=self.base_url, api_key="bench"), False)
        with sqlite3.connect(self.path) as connection:
            connection.execute("CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, state TEXT NOT NULL)")

    async def cycle(self, executions: Executions) -> str:
        import aiosqlite
        from agents import Agent, Runner, RunState, function_tool

        def build() -> Any:
            @function_tool(needs_approval=True)
            def delete_record(id: int) -> dict:
                """Delete a record by ID"""
                executions.ran()
                return {"deleted": True}

            return Agent(name="bench", instructions="You are a helpful assistant", model=MODEL, tools=[delete_record])

        run_id = uuid.uuid4().hex
        result = await Runner.run(build(), PROMPT)
        assert result.interruptions, "the Agents SDK did not stop for approval"
        async with aiosqlite.connect(self.path) as db:
            await db.execute("INSERT INTO runs VALUES (?, ?)", (run_id, result.to_state().to_string()))
            await db.commit()
        agent = build()  # as after a restart
        async with aiosqlite.connect(self.path) as db:
            async with db.execute("SELECT state FROM runs WHERE id = ?", (run_id,)) as cursor:
                (text,) = await cursor.fetchone()
        state = await RunState.from_string(agent, text)
        for interruption in state.get_interruptions():
            state.approve(interruption)
        result = await Runner.run(agent, state)
        async with aiosqlite.connect(self.path) as db:
            await db.execute("UPDATE runs SET state = ? WHERE id = ?", (result.to_state().to_string(), run_id))
            await db.commit()
        return str(result.final_output)


class Floor(System):
    """What an approval cycle needs at the least: two model calls and one row per run."""

    name = "floor"

    async def setup(self) -> None:
        import openai

        self.client = openai.AsyncOpenAI(base_url=self.base_url, api_key="bench")
        with sqlite3.connect(self.path) as connection:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, status TEXT NOT NULL, messages TEXT NOT NULL)"
            )

    async def cycle(self, executions: Executions) -> str:
        import aiosqlite

        run_id = uuid.uuid4().hex
        messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
        completion = await self.client.chat.completions.create(model=MODEL, messages=messages, tools=FLOOR_TOOLS)
        messages.append(completion.choices[0].message.model_dump(exclude_none=True))
        async with aiosqlite.connect(self.path) as db:
            await db.execute("INSERT INTO runs VALUES (?, 'waiting', ?)", (run_id, json.dumps(messages)))
            await db.commit()
        async with aiosqlite.connect(self.path) as db:  # as after a restart: approve
            cursor = await db.execute(
                "UPDATE runs SET status = 'approved' WHERE id = ? AND status = 'waiting' RETURNING messages", (run_id,)
            )
            (text,) = await cursor.fetchone()
            await db.commit()
        messages = json.loads(text)
        call = messages[-1]["tool_calls"][0]
        executions.ran()
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"deleted": True})})
        completion = await self.client.chat.completions.create(model=MODEL, messages=messages, tools=FLOOR_TOOLS)
        messages.append(completion.choices[0].message.model_dump(exclude_none=True))
        async with aiosqlite.connect(self.path) as db:
            await db.execute(
                "UPDATE runs SET status = 'done', messages = ? WHERE id = ?", (json.dumps(messages), run_id)
            )
            await db.commit()
        return completion.choices[0].message.content or ""


DURABLE_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, status TEXT NOT NULL, step INTEGER NOT NULL,
    owner TEXT, heartbeat_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id),
    message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (run_id TEXT NOT NULL REFERENCES runs(id), id TEXT NOT NULL, name TEXT NOT NULL,
    args TEXT NOT NULL, state TEXT NOT NULL, result TEXT, decided_by TEXT, PRIMARY KEY (run_id, id));
CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, call_id TEXT NOT NULL,
    action TEXT NOT NULL, actor TEXT, at TEXT NOT NULL);
"""


class DurableFloor(Floor):
    """The floor's loop with this project's six commits, leases and audit lines, in plain SQL."""

    name = "durable-floor"

    async def setup(self) -> None:
        import openai

        self.client = openai.AsyncOpenAI(base_url=self.base_url, api_key="bench")
        with sqlite3.connect(self.path) as connection:
            connection.executescript(DURABLE_SCHEMA)
            connection.execute("PRAGMA journal_mode=WAL")

    @staticmethod
    async def _connect(path: Path) -> Any:
        import aiosqlite

        db = await aiosqlite.connect(path, isolation_level=None)
        await db.execute("PRAGMA foreign_keys=ON")
        return db

    async def cycle(self, executions: Executions) -> str:
        from datetime import UTC, datetime

        def now() -> str:
            return datetime.now(UTC).isoformat()

        run_id, owner = uuid.uuid4().hex, "bench:1"
        user = {"role": "user", "content": PROMPT}
        db = await self._connect(self.path)
        try:
            await db.execute("BEGIN IMMEDIATE")  # 1: the run and the user's message
            await db.execute(
                "INSERT INTO runs VALUES (?, 'running', 0, ?, ?, ?, ?)", (run_id, owner, now(), now(), now())
            )
            await db.execute("INSERT INTO messages (run_id, message) VALUES (?, ?)", (run_id, json.dumps(user)))
            await db.execute("COMMIT")
            completion = await self.client.chat.completions.create(model=MODEL, messages=[user], tools=FLOOR_TOOLS)
            assistant = completion.choices[0].message.model_dump(exclude_none=True)
            call = assistant["tool_calls"][0]
            await db.execute("BEGIN IMMEDIATE")  # 2: the step, the call waiting, the run parked, audited
            await db.execute("INSERT INTO messages (run_id, message) VALUES (?, ?)", (run_id, json.dumps(assistant)))
            await db.execute(
                "UPDATE runs SET status = 'suspended', step = 1, owner = NULL, updated_at = ? WHERE id = ?",
                (now(), run_id),
            )
            await db.execute(
                "INSERT INTO calls VALUES (?, ?, ?, ?, 'awaiting_approval', NULL, NULL)",
                (run_id, call["id"], call["function"]["name"], call["function"]["arguments"]),
            )
            await db.execute(
                "INSERT INTO audit (run_id, call_id, action, actor, at) VALUES (?, ?, 'requested', NULL, ?)",
                (run_id, call["id"], now()),
            )
            await db.execute("COMMIT")
        finally:
            await db.close()
        db = await self._connect(self.path)  # as after a restart: approve
        try:
            cursor = await db.execute("SELECT id, name, args FROM calls WHERE run_id = ?", (run_id,))
            call_id, _name, _args = await cursor.fetchone()
            await db.execute("BEGIN IMMEDIATE")  # 3: the decision, audited, with the run's lease
            cursor = await db.execute(
                "UPDATE calls SET state = 'approved', decided_by = 'U1' WHERE run_id = ? AND id = ? "
                "AND state = 'awaiting_approval'",
                (run_id, call_id),
            )
            assert cursor.rowcount == 1
            await db.execute(
                "INSERT INTO audit (run_id, call_id, action, actor, at) VALUES (?, ?, 'approved', 'U1', ?)",
                (run_id, call_id, now()),
            )
            await db.execute(
                "UPDATE runs SET status = 'running', owner = ?, heartbeat_at = ? WHERE id = ?", (owner, now(), run_id)
            )
            await db.execute("COMMIT")
            await db.execute("BEGIN IMMEDIATE")  # 4: the started mark
            cursor = await db.execute(
                "UPDATE calls SET state = 'running' WHERE run_id = ? AND id = ? AND state = 'approved'",
                (run_id, call_id),
            )
            assert cursor.rowcount == 1
            await db.execute("COMMIT")
            executions.ran()
            result = {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"deleted": True})}
            await db.execute("BEGIN IMMEDIATE")  # 5: the result, its message, audited, the run claimed back
            await db.execute(
                "UPDATE calls SET state = 'done', result = ? WHERE run_id = ? AND id = ? AND state = 'running'",
                (result["content"], run_id, call_id),
            )
            await db.execute("INSERT INTO messages (run_id, message) VALUES (?, ?)", (run_id, json.dumps(result)))
            await db.execute(
                "INSERT INTO audit (run_id, call_id, action, actor, at) VALUES (?, ?, 'executed', NULL, ?)",
                (run_id, call_id, now()),
            )
            await db.execute("UPDATE runs SET owner = ?, heartbeat_at = ? WHERE id = ?", (owner, now(), run_id))
            await db.execute("COMMIT")
            cursor = await db.execute("SELECT message FROM messages WHERE run_id = ? ORDER BY id", (run_id,))
            messages = [json.loads(text) for (text,) in await cursor.fetchall()]
            completion = await self.client.chat.completions.create(model=MODEL, messages=messages, tools=FLOOR_TOOLS)
            answer = completion.choices[0].message.model_dump(exclude_none=True)
            await db.execute("BEGIN IMMEDIATE")  # 6: the answer and the end of the run
            await db.execute(
                "UPDATE runs SET status = 'completed', step = 2, owner = NULL, updated_at = ? WHERE id = ?",
                (now(), run_id),
            )
            await db.execute("INSERT INTO messages (run_id, message) VALUES (?, ?)", (run_id, json.dumps(answer)))
            await db.execute("COMMIT")
        finally:
            await db.close()
        return completion.choices[0].message.content or ""


def project_agent(storage: Any, executions: Executions | None) -> Any:
    from bot.agent import Agent
    from tools import create_tool

    async def delete_record(input: dict, ctx: Any) -> dict:
        if executions is not None:
            executions.ran()
        return {"deleted": True}

    tool = create_tool(
        id="delete_record",
        description=TOOL_DESCRIPTION,
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        require_approval=True,
        execute=delete_record,
    )
    return Agent(
        id="bench", instructions="You are a helpful assistant", model=f"openai/{MODEL}", tools=[tool], storage=storage
    )


class Project(System):
    name = "project"

    def __init__(self, workdir: Path, base_url: str):
        super().__init__(workdir, base_url)
        self.url = f"sqlite+aiosqlite:///{self.path}"
        self.commits = 0
        self.transactions = 0
        self.statements = 0
        self.counting = False
        """Count the statements of the cycle: set for one cycle after the measured ones (`measure`), as the
        listeners that count cost CPU the other systems do not pay."""
        self._counted: list[Any] = []

    def count(self, storage: Any) -> None:
        """Count the transactions that wrote (commits), all transactions, and the statements, once per engine
        (new `Storage` objects of one URL share an engine in one event loop)."""
        from sqlalchemy import event

        engine = storage.engine.sync_engine
        if not self.counting or engine in self._counted:
            return
        self._counted.append(engine)
        wrote: dict[int, bool] = {}

        def on_begin(connection: Any) -> None:
            wrote[id(connection)] = False

        def on_statement(connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            self.statements += 1
            if statement.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}:
                wrote[id(connection)] = True

        def on_commit(connection: Any) -> None:
            self.transactions += 1
            self.commits += wrote.pop(id(connection), False)

        event.listen(engine, "begin", on_begin)
        event.listen(engine, "before_cursor_execute", on_statement)
        event.listen(engine, "commit", on_commit)

    async def setup(self) -> None:
        from memory import Storage

        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = self.base_url, "bench"
        storage = Storage(self.url)
        await storage.migrate()
        await storage.close()

    async def cycle(self, executions: Executions) -> str:
        from memory import Storage

        storage = Storage(self.url)
        self.count(storage)
        try:
            output = await project_agent(storage, executions).generate(PROMPT)
            assert output.finish_reason == "suspended", output
        finally:
            await storage.close()
        storage = Storage(self.url)  # as after a restart
        self.count(storage)
        try:
            output = await project_agent(storage, executions).approve_tool_call_generate(run_id=output.run_id)
        finally:
            await storage.close()
        return output.text


class ProjectRestart(Project):
    """This project with a real process restart: the approval runs in a new Python process."""

    name = "project-restart"

    def __init__(self, workdir: Path, base_url: str):
        super().__init__(workdir, base_url)
        self.child_cpu_ms: list[float] = []
        self.child_work_cpu_ms: list[float] = []

    async def cycle(self, executions: Executions) -> str:
        from memory import Storage

        storage = Storage(self.url)
        try:
            output = await project_agent(storage, executions).generate(PROMPT)
            assert output.finish_reason == "suspended", output
        finally:
            await storage.close()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--approve-in-child",
            self.url,
            output.run_id,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        stdout, _ = await process.communicate()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.child_cpu_ms.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        answer = json.loads(stdout)
        self.child_work_cpu_ms.append(answer["work_cpu_ms"])
        executions.count += answer["executions"]
        return answer["text"]

    def child_cpu(self) -> float:
        return self.child_cpu_ms[-1] / 1000 if self.child_cpu_ms else 0.0


async def approve_in_child(url: str, run_id: str) -> None:
    """`--approve-in-child URL RUN_ID`: the second half of a cycle in a fresh process."""
    import bot.agent  # noqa: F401 - imported before the CPU mark, like the Storage: "without imports"
    import tools  # noqa: F401
    from memory import Storage

    cpu = time.process_time()
    executions = Executions()
    storage = Storage(url)
    try:
        output = await project_agent(storage, executions).approve_tool_call_generate(run_id=run_id)
    finally:
        await storage.close()
    work_cpu_ms = (time.process_time() - cpu) * 1000
    print(json.dumps({"text": output.text, "executions": executions.count, "work_cpu_ms": work_cpu_ms}))


SYSTEMS: dict[str, type[System]] = {
    "langgraph": LangGraph,
    "openai-agents": AgentsSDK,
    "floor": Floor,
    "durable-floor": DurableFloor,
    "project": Project,
    "project-restart": ProjectRestart,
}


async def measure(systems: list[System], cycles: int, warmups: int) -> dict[str, dict[str, Any]]:
    samples: dict[str, dict[str, list[float]]] = {s.name: {"wall": [], "cpu": []} for s in systems}
    for system in systems:
        await system.setup()
    sizes: dict[str, int] = {}
    for index in range(warmups + cycles):
        if index == warmups:  # what the measured cycles write from here on
            sizes = {s.name: stored_bytes(s.path) for s in systems}
        for system in systems:
            executions = Executions()
            cpu, wall = time.process_time(), time.perf_counter()
            text = await system.cycle(executions)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu + system.child_cpu()
            if executions.count != 1:
                raise AssertionError(f"{system.name}: the tool ran {executions.count} times in one cycle")
            if ANSWER not in text:
                raise AssertionError(f"{system.name}: unexpected answer {text!r}")
            if index >= warmups:
                samples[system.name]["wall"].append(wall * 1000)
                samples[system.name]["cpu"].append(cpu * 1000)
    results: dict[str, dict[str, Any]] = {}
    for system in systems:
        results[system.name] = {
            "wall_ms": statistics.median(samples[system.name]["wall"]),
            "cpu_ms": statistics.mean(samples[system.name]["cpu"]),
            "bytes": (stored_bytes(system.path) - sizes[system.name]) / cycles,
        }
        if isinstance(system, ProjectRestart):
            results[system.name]["child_work_cpu_ms"] = statistics.mean(system.child_work_cpu_ms[warmups:])
        elif isinstance(system, Project):  # one more cycle, its statements counted (the restart's are not)
            system.counting = True
            await system.cycle(Executions())
            system.counting = False
            results[system.name]["commits"] = system.commits
            results[system.name]["transactions"] = system.transactions
            results[system.name]["statements"] = system.statements
    return results


def report(results: dict[str, dict[str, Any]], cycles: int) -> None:
    base = results.get("project")
    print(f"{cycles} approval cycles per system (median wall, mean CPU; this process, plus the child's for a restart)")
    header = "| system | wall ms (median) | CPU ms per cycle | stored bytes per cycle |"
    if base:
        header += " CPU vs project | wall vs project |"
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    for name, r in results.items():
        line = f"| {name} | {r['wall_ms']:.1f} | {r['cpu_ms']:.1f} | {r['bytes']:.0f} |"
        if base:
            line += f" {r['cpu_ms'] / base['cpu_ms']:.2f}x | {r['wall_ms'] / base['wall_ms']:.2f}x |"
        print(line)
    for name in ("project", "project-restart"):
        if name in results and "commits" in results[name]:
            r = results[name]
            print(
                f"{name}: {r['commits']:.1f} commits (transactions that wrote), {r['transactions']:.1f} transactions "
                f"and {r['statements']:.1f} statements per cycle (in this process)"
            )
    if "project-restart" in results:
        print(
            "project-restart: the child's CPU for the approval half without interpreter start and imports: "
            f"{results['project-restart']['child_work_cpu_ms']:.1f} ms"
        )
    if base:
        targets = {"langgraph": 0.6, "openai-agents": 0.75, "durable-floor": 1.3}  # issue 42
        for name, limit in targets.items():
            if name in results:
                ratio = base["cpu_ms"] / results[name]["cpu_ms"]
                print(f"target CPU project <= {limit}x {name}: {ratio:.2f}x ({'met' if ratio <= limit else 'NOT met'})")
        stored = base["bytes"]
        print(f"target stored bytes per cycle <= 2048: {stored:.0f} ({'met' if stored <= 2048 else 'NOT met'})")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--warmups", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=list(SYSTEMS), help="the systems to run (default: all)")
    args = parser.parse_args()
    names = args.only or list(SYSTEMS)
    model = subprocess.Popen(
        [sys.executable, __file__, "--serve-model"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        base_url = model.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="approval-cycle-") as directory:
            systems = [SYSTEMS[name](Path(directory), base_url) for name in names]
            results = await measure(systems, args.cycles, args.warmups)
    finally:
        model.stdin.close()
        model.wait(timeout=10)
    report(results, args.cycles)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-model"]:
        serve_model()
    elif sys.argv[1:2] == ["--approve-in-child"]:
        asyncio.run(approve_in_child(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(asyncio.run(main()))
