"""Database round trips per Slack action, one replica, counted from outside (issue 42).

One replica, a real `python -m bot serve` process (the demo agent, its sweeps: recovery, expiry and
escalation, the Slack recovery pass, the queue's sweep), talks to the Slack Web API emulation and the
scripted OpenAI-compatible model of the tests, both in this process; this process sends Slack's signed
requests (mentions, thread replies, clicks, `app_home_opened`) and waits for what a person would see.

How statements are counted:

- **PostgreSQL**: a cluster of the benchmark's own (`tests/support/pg_cluster.py`'s, its own folder and
  port), with `log_min_duration_statement = 0`: the server logs every message of the extended protocol
  (`parse`, `bind`, `execute`) and every simple query (`statement: BEGIN`). A *statement* is an
  `execute` or a simple query; a *prepare* is a `parse` (asyncpg prepares before it executes, one round
  trip, unless the connection already prepared it); *round trips* are statements + prepares. The only
  client of the cluster during a measurement is the replica.
- **SQLite**: SQLAlchemy's `before_cursor_execute` and `commit` events, installed in the replica process
  (this script starts it with `--replica`): every statement the driver runs, `BEGIN IMMEDIATE` included,
  and every COMMIT. There are no network round trips on SQLite; the figures say how much work an action is.

A transaction is BEGIN ... COMMIT/ROLLBACK on one connection, or a statement outside one (autocommit);
it *writes* if an INSERT, UPDATE or DELETE ran in it. An action's window opens when the database has been
quiet for a moment, and closes when what a person sees is there (the answer streamed, the approval posted,
the Home published) and the database has been quiet again for `--quiet` seconds: it includes what the
replica does after the visible part (recording a posted message's ts, the Homes' refresh). The sweeps
run all along, so a window may catch one: each action runs `--repeats` times (after `--warmups`), and the
table gives the median and the range. The idle replica is counted over `--idle` seconds with nothing waiting,
`--idle-after` seconds after the last action.

The last column is the issue's hand-written minimal durable design (one round trip per transaction).

    python benchmarks/round_trips.py                        # PostgreSQL, then SQLite
    python benchmarks/round_trips.py --database postgres --repeats 5 --idle 60
    python benchmarks/round_trips.py --database sqlite --homes 100
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MINIMAL = {
    "plain mention answered": "4",
    "mention until the approval is posted": "6",
    "Approve until the tool ran and answered": "6",
    "Approve with two App Homes open": "8",
    "Decline until answered": "5",
    "question asked": "7",
    '"city=Paris" resumed and answered': "6",
    "App Home opened": "2-3",
    "an idle replica, per minute": "",
}
"""Round trips of the issue's hand-written minimal durable design, one per transaction."""

_WRITE = re.compile(r"^\s*(?:WITH\b.*?\b)?(INSERT|UPDATE|DELETE|MERGE)\b", re.IGNORECASE | re.DOTALL)
_BEGIN = re.compile(r"^\s*(BEGIN|START TRANSACTION)\b", re.IGNORECASE)
_END = re.compile(r"^\s*(COMMIT|ROLLBACK|END)\b", re.IGNORECASE)


# -- counting -------------------------------------------------------------------------------------


@dataclass
class Tally:
    statements: int = 0
    prepares: int = 0
    transactions: int = 0
    writing: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    @property
    def round_trips(self) -> int:
        return self.statements + self.prepares


class _Transactions:
    """Statements of several connections, in order: which transactions they make, and which write."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.open: dict[str, bool] = {}

    def statement(self, connection: str, sql: str) -> None:
        tally = self.tally
        if _END.match(sql) and connection not in self.open:
            return  # the pool's reset of a connection with no transaction: the driver sends nothing
        tally.statements += 1
        words = " ".join(sql.split())
        tally.lines.append(f"{connection}\t{words[:300]}")
        verb = words.split(" ", 1)[0].upper() if words else "?"
        table = re.search(r"\b(?:FROM|INTO|UPDATE)\s+\"?(\w+)", words, re.IGNORECASE)
        kind = f"{verb} {table.group(1)}" if table and verb not in ("BEGIN", "COMMIT", "ROLLBACK") else verb
        tally.kinds[kind] = tally.kinds.get(kind, 0) + 1
        if _BEGIN.match(sql):
            self.open[connection] = False
        elif _END.match(sql) or sql.strip().upper() == "COMMIT":
            if connection in self.open:
                tally.transactions += 1
                tally.writing += self.open.pop(connection)
        elif connection in self.open:
            self.open[connection] = self.open[connection] or bool(_WRITE.match(sql))
        else:  # autocommit: a transaction of its own
            tally.transactions += 1
            tally.writing += bool(_WRITE.match(sql))


class PostgresLog:
    """The statements of a cluster's server log (`log_min_duration_statement = 0`, prefix `%p|`)."""

    _LINE = re.compile(r"^(\d+)\|LOG:\s+duration: [\d.]+ ms\s+(parse|bind|execute|statement)\b[^:]*:\s?(.*)$")

    def __init__(self, path: Path):
        self.path = path

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def since(self, offset: int) -> Tally:
        with self.path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        entries: list[list[str]] = []
        for line in text.splitlines():
            if found := self._LINE.match(line):
                entries.append(list(found.groups()))
            elif entries and not re.match(r"^\d+\|", line):  # a statement's next line
                entries[-1][2] += " " + line.strip()
            else:
                entries.append(["", "other", ""])  # DETAIL, a notice: ends the statement before it
        counting = _Transactions()
        for pid, what, sql in entries:
            if what == "parse":
                counting.tally.prepares += 1
                counting.tally.lines.append(f"{pid}\tPARSE {' '.join(sql.split())[:120]}")
            elif what in ("execute", "statement"):
                counting.statement(pid, sql)
        return counting.tally


class DriverLog:
    """The statements the replica's SQLAlchemy events wrote (`--replica`): `connection<TAB>sql` a line."""

    def __init__(self, path: Path):
        self.path = path

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def since(self, offset: int) -> Tally:
        with self.path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        counting = _Transactions()
        for line in text.splitlines():
            connection, _, sql = line.partition("\t")
            counting.statement(connection, sql.replace("\\n", "\n"))
        return counting.tally


def _replica(events: str, argv: list[str]) -> int:
    """The replica process: the bot's command line, every statement and COMMIT written to `events`."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    sink = open(events, "a", buffering=1)  # noqa: SIM115 - open for the life of the process

    def on_statement(connection, _cursor, statement, *_rest) -> None:
        sink.write(f"{id(connection.connection.dbapi_connection)}\t{statement.replace(chr(10), ' ')}\n")

    def on_commit(connection) -> None:
        sink.write(f"{id(connection.connection.dbapi_connection)}\tCOMMIT\n")

    def on_rollback(connection) -> None:
        sink.write(f"{id(connection.connection.dbapi_connection)}\tROLLBACK\n")

    event.listen(Engine, "before_cursor_execute", on_statement)
    event.listen(Engine, "commit", on_commit)
    event.listen(Engine, "rollback", on_rollback)
    from bot.cli import main

    return main(argv)


# -- the replica and its world --------------------------------------------------------------------


class Bench:
    def __init__(self, slack, model, sender, source, quiet: float):
        self.slack = slack
        self.model = model
        self.sender = sender
        self.source = source
        self.quiet = quiet

    async def quiet_mark(self) -> int:
        """The log's end once nothing has been written to it for `quiet` seconds."""
        size, since = self.source.size(), time.monotonic()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            now = self.source.size()
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= self.quiet:
                return size
        return size

    async def measure(self, action: Callable[..., Awaitable[Any]], *args: Any) -> tuple[Tally, Any]:
        """What `action(*args)` costs, from a quiet database to a quiet database; and what it returned."""
        await self.slack.settle(quiet=0.2)
        start = await self.quiet_mark()
        result = await action(*args)
        await self.slack.settle(quiet=0.2)
        await self.quiet_mark()
        return self.source.since(start), result

    # what a person does, and waits to see
    async def plain_mention(self) -> None:
        from tests.support.scripted_model import reply

        stops = len(self.slack.calls_of("chat.stopStream"))
        self.model.chat.push(reply("Hello! 你好"))
        await self.sender.event(self.sender.mention("hello"))
        await self.slack.wait_for("chat.stopStream", count=stops + 1, timeout=30)

    async def mention_until_approval(self, record: int = 3) -> Any:
        from tests.support.scripted_model import call, reply, tool_calls

        posted = self._approvals()
        self.model.chat.push(tool_calls(call("delete-record", {"id": record})), reply(f"Deleted record {record}."))
        await self.sender.event(self.sender.mention(f"delete record {record}"))
        calls = await self.slack.wait_for(
            "chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")), count=posted + 1, timeout=30
        )
        return self.slack.posted_by(calls[posted])

    def _approvals(self) -> int:
        return sum("tool_approve" in str(c.params.get("blocks")) for c in self.slack.calls_of("chat.postMessage"))

    async def decide(self, message: Any, action_id: str = "tool_approve") -> None:
        stops = len(self.slack.calls_of("chat.stopStream"))
        await self.sender.click(message, action_id, user="U2")
        await self.slack.wait_for("chat.stopStream", count=stops + 1, timeout=30)

    async def decide_paced(self, message: Any) -> None:
        """Approve, and wait until the Homes' publishes are done (a replica may pace them to Slack's limit)."""
        await self.decide(message)
        await self.slack.settle(quiet=2.0, timeout=180)

    async def question_asked(self) -> str:
        from tests.support.scripted_model import call, tool_calls

        asked = len(
            [c for c in self.slack.calls_of("chat.postMessage") if "tool_answer" in str(c.params.get("blocks"))]
        )
        self.model.chat.push(tool_calls(call("get-weather", {})))
        event = self.sender.mention("what's the weather?")
        await self.sender.event(event)
        await self.slack.wait_for(
            "chat.postMessage", lambda c: "tool_answer" in str(c.params.get("blocks")), count=asked + 1, timeout=30
        )
        return str(event["ts"])

    async def paris(self, thread_ts: str) -> None:
        from tests.support.scripted_model import reply, structured

        stops = len(self.slack.calls_of("chat.stopStream"))
        self.model.structured.push(structured({"city": "Paris"}))
        self.model.chat.push(reply("Paris: sunny."))
        await self.sender.event(self.sender.message("Paris", thread_ts=thread_ts))
        await self.slack.wait_for("chat.stopStream", count=stops + 1, timeout=30)

    async def open_home(self, user: str) -> None:
        from bot.slack_emulator.app_requests import app_home_opened_event

        before = len([c for c in self.slack.calls_of("views.publish") if c.params.get("user_id") == user])
        await self.sender.event(app_home_opened_event(user))
        await self.slack.wait_for(
            "views.publish", lambda c: c.params.get("user_id") == user, count=before + 1, timeout=30
        )


def _workspace(homes: int):
    from bot.slack_emulator import Person
    from tests.support.slack import slack_workspace

    workspace = slack_workspace()
    for n in range(homes + 20):
        person = Person(id=f"UH{n:03d}", name=f"h{n}", real_name=f"Home {n}", locale="en-US")
        workspace.people[person.id] = person
    return workspace


async def _run(database: str, args: argparse.Namespace) -> dict[str, list[Tally]]:
    from bot.slack_emulator import SlackEmulator
    from tests.support.pg_cluster import unused_port
    from tests.support.processes import SECRET, bot_env
    from tests.support.scripted_model import ScriptedModel
    from tests.support.slack import SignedSender

    folder = Path(tempfile.mkdtemp(prefix=f"round-trips-{database}-"))
    cluster = None
    results: dict[str, list[Tally]] = {}
    process = None
    try:
        if database == "postgres":
            from tests.support.pg_cluster import PostgresCluster

            cluster = PostgresCluster(Path(tempfile.mkdtemp(prefix="round-trips-pg-")))  # its owner: postgres
            cluster.init()
            with (cluster.data / "postgresql.conf").open("a") as conf:
                conf.write("log_min_duration_statement = 0\nlog_line_prefix = '%p|'\nlog_statement = 'none'\n")
            cluster.start()
            url, source = cluster.url, PostgresLog(cluster.log)
            replica = ["-m", "bot"]
        else:
            url = f"sqlite+aiosqlite:///{folder}/bot.db"
            source = DriverLog(folder / "statements.log")
            replica = [str(Path(__file__).resolve()), "--replica", str(source.path)]
        with ScriptedModel() as model:
            async with SlackEmulator(_workspace(args.homes)) as slack:
                env = bot_env(
                    url, slack, OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="bench", BOT_LOG_LEVEL="WARNING"
                )
                port = unused_port()  # from the kernel's range: two runs at once never share one
                with (folder / "bot.log").open("ab") as log_file:
                    process = await asyncio.create_subprocess_exec(
                        sys.executable, *replica, "serve", "--port", str(port), "--host", "127.0.0.1",
                        cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=log_file,
                    )  # fmt: skip
                await _healthy(port, process, folder / "bot.log")
                sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
                bench = Bench(slack, model, sender, source, args.quiet)
                await _actions(bench, args, results)
                if model.unexpected:
                    raise AssertionError(f"the scripted model ran out of answers: {len(model.unexpected)}")
                process.terminate()
                await asyncio.wait_for(process.wait(), 20)
    finally:
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()
        if cluster is not None:
            cluster.stop("immediate")
            if args.keep:
                print(f"kept {cluster.folder}", file=sys.stderr)
            else:
                shutil.rmtree(cluster.folder, ignore_errors=True)
        if args.keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return results


async def _healthy(port: int, process: Any, log: Path) -> None:
    import aiohttp

    deadline = time.monotonic() + 90
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise AssertionError(log.read_text())
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
    raise AssertionError("the replica did not start")


async def _actions(bench: Bench, args: argparse.Namespace, results: dict[str, list[Tally]]) -> None:
    def keep(name: str, tally: Tally, counted: bool) -> None:
        if counted:
            results.setdefault(name, []).append(tally)

    rounds = args.warmups + args.repeats
    for repeat in range(rounds):
        counted = repeat >= args.warmups
        keep("plain mention answered", (await bench.measure(bench.plain_mention))[0], counted)
        tally, message = await bench.measure(bench.mention_until_approval)
        keep("mention until the approval is posted", tally, counted)
        keep("Approve until the tool ran and answered", (await bench.measure(bench.decide, message))[0], counted)
        message = await bench.mention_until_approval()
        keep("Decline until answered", (await bench.measure(bench.decide, message, "tool_decline"))[0], counted)
        tally, thread_ts = await bench.measure(bench.question_asked)
        keep("question asked", tally, counted)
        keep('"city=Paris" resumed and answered', (await bench.measure(bench.paris, thread_ts))[0], counted)
    # a Home once opened is refreshed by every later change: the rows with Homes come after the ones without
    for user in ("U2", "U3"):
        await bench.open_home(user)
    for repeat in range(rounds):
        message = await bench.mention_until_approval()
        tally = (await bench.measure(bench.decide, message))[0]
        keep("Approve with two App Homes open", tally, repeat >= args.warmups)
    for repeat in range(rounds):
        tally = (await bench.measure(bench.open_home, f"UH{args.homes + repeat:03d}"))[0]
        keep("App Home opened", tally, repeat >= args.warmups)
    if args.homes:
        for n in range(args.homes):
            await bench.open_home(f"UH{n:03d}")
        await bench.slack.settle(quiet=2.0, timeout=180)
        for _ in range(2):
            publishes = len(bench.slack.calls_of("views.publish"))
            message = await bench.mention_until_approval()
            await bench.slack.settle(quiet=2.0, timeout=180)
            posted = len(bench.slack.calls_of("views.publish")) - publishes
            tally = (await bench.measure(bench.decide_paced, message))[0]
            tally.kinds["views.publish (approval posted)"] = posted
            tally.kinds["views.publish (decision)"] = len(bench.slack.calls_of("views.publish")) - publishes - posted
            keep(f"Approve with {args.homes + 2 + rounds} App Homes open", tally, True)
    if args.idle:
        await asyncio.sleep(args.idle_after)
        start = await bench.quiet_mark()
        await asyncio.sleep(args.idle)
        tally = bench.source.since(start)
        scale = 60 / args.idle
        minute = Tally(
            round(tally.statements * scale), round(tally.prepares * scale), round(tally.transactions * scale),
            round(tally.writing * scale), {kind: round(count * scale) for kind, count in tally.kinds.items()},
        )  # fmt: skip
        keep("an idle replica, per minute", minute, True)


# -- the table ------------------------------------------------------------------------------------


def _span(values: list[int]) -> str:
    middle = statistics.median(values)
    middle_text = f"{middle:g}"
    low, high = min(values), max(values)
    return middle_text if low == high else f"{middle_text} ({low}-{high})"


def table(database: str, results: dict[str, list[Tally]]) -> str:
    lines = [
        f"{database}: median (range) of the measured repeats",
        "",
        "| action | statements | transactions (writing) | prepares | round trips | minimal round trips |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, tallies in results.items():
        transactions = f"{_span([t.transactions for t in tallies])} ({_span([t.writing for t in tallies])})"
        prepares = _span([t.prepares for t in tallies]) if database == "postgres" else "-"
        trips = _span([t.round_trips for t in tallies]) if database == "postgres" else "-"
        lines.append(
            f"| {name} | {_span([t.statements for t in tallies])} | {transactions} | {prepares} | {trips} "
            f"| {MINIMAL.get(name, '')} |"
        )
    return "\n".join(lines)


def kinds(results: dict[str, list[Tally]]) -> str:
    lines = []
    for name, tallies in results.items():
        last = tallies[-1]
        parts = ", ".join(f"{kind} {count}" for kind, count in sorted(last.kinds.items(), key=lambda kv: -kv[1]))
        lines.append(f"- {name}: {parts}")
    return "\n".join(lines)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--homes", type=int, default=0, help="also Approve with this many more App Homes open")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds the idle replica is counted (0: not)")
    parser.add_argument(
        "--idle-after", type=float, default=40.0, help="seconds after the last action before the idle count starts"
    )
    parser.add_argument("--quiet", type=float, default=0.4, help="seconds without a statement that end a window")
    parser.add_argument("--kinds", action="store_true", help="also list each action's statements by verb and table")
    parser.add_argument("--statements", type=Path, help="write each action's statements (its last repeat) to this file")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's log and the replica's log")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    for database in ("postgres", "sqlite") if args.database == "both" else (args.database,):
        results = await _run(database, args)
        print(table(database, results))
        if args.kinds:
            print(kinds(results))
        if args.statements:
            with args.statements.open("a") as out:
                for name, tallies in results.items():
                    out.write(f"## {database}: {name}\n" + "\n".join(tallies[-1].lines) + "\n\n")
        print(f"load average: {os.getloadavg()[0]:.1f}\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--replica":
        sys.exit(_replica(sys.argv[2], sys.argv[3:]))
    sys.exit(asyncio.run(main()))
