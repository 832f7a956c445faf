"""CPU of one plain Slack turn: this bot against hand-written Bolt apps doing the least (issue 19).

A plain turn: a user mentions the bot ("hello"), the bot asks the model once and writes the answer in
the thread. Every server runs as a process of its own (`python -m bot serve`, and the floors below)
against its own Slack Web API emulation and the same scripted OpenAI-compatible model, which run in
this process; the turns are sent one after the other (the next once the answer is in), and the server's
CPU (user + system of all its threads, from /proc) over the turns, divided by their number, is the CPU
per turn.

The floors are one slack-bolt `AsyncApp` served by aiohttp, each doing a little more of what this bot
does, so the ratios show where a turn's CPU goes:

- `bolt-floor`: acks a mention, calls the model once (the openai client, streamed) and posts the answer
  with `chat.postMessage`: no database, no status, no streaming API calls (issue 19's "Bolt floor");
- `bolt-stream`: the same turn shown as this bot shows it in Slack: `assistant.threads.setStatus`, then
  the answer through `chat.startStream` and `chat.stopStream`;
- `bolt-durable`: `bolt-stream` with the least durable work that keeps a turn from being lost, in plain
  SQL over one aiosqlite connection (WAL, as the bot's): the event recorded before the ack (a retry is
  dropped), the thread's turn taken with the run and the user's message in one commit, and the answer
  with the run's end, the event done and the thread let go in one more after it is shown. Three commits
  where the bot makes five (it also takes the turn and ends it in transactions of their own, keeps the
  conversation's record and the run's lease, and reads the thread's memory and waiting calls);
- `bolt-durable-sqlalchemy`: the same statements and commits through SQLAlchemy's async engine over
  aiosqlite (`text()` statements), the library this project's storage is built on, instead of bare
  aiosqlite: what the library costs by itself.

The machine is noisy (the same server's CPU per turn varies by half from one minute to the next), so
the servers run side by side and take turns: each round sends `--turns` turns to each in order, and a
ratio reported is the median of the rounds' ratios.

    python benchmarks/plain_turn.py                      # 5 rounds of 60 turns each, after 5 warm-ups, SQLite
    python benchmarks/plain_turn.py --turns 30 --only bolt-floor bot
    python benchmarks/plain_turn.py --profile /tmp/turn.prof   # the bot under cProfile (then pstats)
    python benchmarks/plain_turn.py --py-spy /tmp/turn.txt     # py-spy over the first round (.SYSTEM per server)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import signal
import socket
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

from bot.slack_emulator import BOT_USER_ID, GENERAL, TEAM_ID, SlackEmulator, Workspace, demo_people  # noqa: E402
from bot.slack_emulator.app_requests import event_body, post_signed  # noqa: E402
from tests.support.scripted_model import ScriptedModel, reply  # noqa: E402

SECRET = "plain-turn-benchmark-secret"

FLOORS = """
import asyncio, json, os, sqlite3, sys, time, uuid
import aiosqlite, openai
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request

SYSTEM = sys.argv[2]  # bolt-floor, bolt-stream, bolt-durable or bolt-durable-sqlalchemy
DURABLE = SYSTEM.startswith("bolt-durable")
app = AsyncApp(token=os.environ["SLACK_BOT_TOKEN"], signing_secret=os.environ["SLACK_SIGNING_SECRET"])
app.client.base_url = os.environ["SLACK_API_URL"]
model = openai.AsyncOpenAI()
db = None  # bolt-durable: one aiosqlite connection
engine = None  # bolt-durable-sqlalchemy: SQLAlchemy's async engine over aiosqlite
written = asyncio.Lock()  # one connection: one transaction at a time

SCHEMA = \"""
CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, done INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS thread_turns (thread TEXT PRIMARY KEY, owner TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, thread TEXT NOT NULL, status TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, message TEXT NOT NULL);
\"""

async def write(*statements):  # one transaction; the rows the last statement changed
    if engine is not None:
        async with engine.begin() as connection:
            for sql, params in statements:
                result = await connection.execute(text(sql), params)
        return result.rowcount
    async with written:
        await db.execute("BEGIN IMMEDIATE")
        for sql, params in statements:
            cursor = await db.execute(sql, params)
        await db.execute("COMMIT")
    return cursor.rowcount

async def ask_model(text):
    stream = await model.chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": text}], stream=True
    )
    return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

@app.event("app_mention")
async def mention(event, say, client, body):
    thread_ts = event.get("thread_ts") or event["ts"]
    if SYSTEM == "bolt-floor":
        await say(text=await ask_model(event["text"]), thread_ts=thread_ts)
        return
    thread, run_id = f"{event['channel']}:{thread_ts}", uuid.uuid4().hex
    if DURABLE:  # the thread's turn, the run and the user's message: one commit
        user = json.dumps({"role": "user", "content": event["text"]})
        await write(
            ("INSERT INTO thread_turns VALUES (:thread, 'floor', :at)", {"thread": thread, "at": time.time()}),
            (
                "INSERT INTO runs VALUES (:id, :thread, 'running', :at)",
                {"id": run_id, "thread": thread, "at": time.time()},
            ),
            ("INSERT INTO messages (run_id, message) VALUES (:id, :message)", {"id": run_id, "message": user}),
        )
    await client.assistant_threads_setStatus(channel_id=event["channel"], thread_ts=thread_ts, status="is thinking…")
    answer_text = await ask_model(event["text"])
    started = await client.chat_startStream(
        channel=event["channel"], thread_ts=thread_ts, recipient_team_id=event["team"],
        recipient_user_id=event["user"], markdown_text=answer_text,
    )
    await client.chat_stopStream(channel=event["channel"], ts=started["ts"])
    if DURABLE:  # the answer, the run's end, the event done, the thread let go: one commit
        answer = json.dumps({"role": "assistant", "content": answer_text})
        await write(
            ("INSERT INTO messages (run_id, message) VALUES (:id, :message)", {"id": run_id, "message": answer}),
            ("UPDATE runs SET status = 'completed', at = :at WHERE id = :id", {"id": run_id, "at": time.time()}),
            ("UPDATE events SET done = 1 WHERE event_id = :id", {"id": body["event_id"]}),
            ("DELETE FROM thread_turns WHERE thread = :thread", {"thread": thread}),
        )

async def events(request):
    bolt_request = await to_bolt_request(request)
    # The event recorded before the ack (a retry is answered and dropped); before Bolt checks the signature,
    # which a real app would not do, but the check costs the same in the dispatch either way.
    if DURABLE:
        event_id = json.loads(bolt_request.raw_body).get("event_id")
        if event_id is not None:
            if not await write(("INSERT OR IGNORE INTO events (event_id) VALUES (:id)", {"id": event_id})):
                return web.Response(status=200)
    return await to_aiohttp_response(await app.async_dispatch(bolt_request))

async def health(_request):
    return web.json_response({"ok": True})

async def open_database(_app):
    global db, engine
    if not DURABLE:
        return
    path = os.environ["FLOOR_DATABASE"]
    with sqlite3.connect(path) as connection:
        connection.executescript(SCHEMA)
        connection.execute("PRAGMA journal_mode=WAL")  # kept by the file
    if SYSTEM == "bolt-durable":
        db = await aiosqlite.connect(path, isolation_level=None)
    else:
        engine = create_async_engine(f"sqlite+aiosqlite:///{path}")

async def close_database(_app):
    if db is not None:
        await db.close()  # its thread would keep the process from exiting
    if engine is not None:
        await engine.dispose()

web_app = web.Application()
web_app.on_startup.append(open_database)
web_app.on_cleanup.append(close_database)
web_app.router.add_post("/slack/events", events)
web_app.router.add_get("/health", health)
web.run_app(web_app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


SYSTEMS = ("bolt-floor", "bolt-stream", "bolt-durable", "bolt-durable-sqlalchemy", "bot")
"""The servers measured, from the least work to this bot (see the module's docstring)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """The CPU time of every thread of `pid` so far, in nanoseconds from the scheduler (`/proc/.../schedstat`:
    the clock ticks of `/proc/PID/stat` are 10 ms, too coarse for a short round)."""
    tasks = Path(f"/proc/{pid}/task")
    total = 0
    for task in tasks.iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total / 1e9


async def wait_healthy(port: int, process: asyncio.subprocess.Process, log: Path) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            if process.returncode is not None:
                raise RuntimeError(f"the server exited: {log.read_text()[-2000:]}")
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError("the server did not start")


async def start_py_spy(pid: int, output: str) -> asyncio.subprocess.Process:
    """py-spy sampling `pid` into `output` (raw collapsed stacks) until it gets SIGINT."""
    spy = await asyncio.create_subprocess_exec(
        "py-spy",
        "record",
        "--pid",
        str(pid),
        "--rate",
        "500",
        "--format",
        "raw",
        "--output",
        output,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await asyncio.sleep(1)  # attached before the first measured turn
    return spy


class Server:
    """One system (the bot or one of the floors) as a process of its own, with its own Slack emulation."""

    def __init__(self, system: str, model: ScriptedModel, args: argparse.Namespace, workdir: Path):
        self.system, self.model, self.args, self.workdir = system, model, args, workdir
        self.answered = "chat.postMessage" if system == "bolt-floor" else "chat.stopStream"
        self.turns = 0
        self.measured = 0
        self.web_api_calls: collections.Counter[str] = collections.Counter()
        """The Slack Web API calls of the measured turns, by method."""

    async def __aenter__(self) -> Server:
        self.slack = await SlackEmulator(Workspace(demo_people())).start()
        port = free_port()
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": "xoxb-bench",
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": self.slack.api_url,
            "DATABASE_URL": f"sqlite+aiosqlite:///{self.workdir}/{self.system}.db",
            "BOT_MODEL": "openai/test-model",
            "OPENAI_BASE_URL": self.model.base_url,
            "OPENAI_API_KEY": "bench",
        }
        if self.system == "bot":
            command = [sys.executable, "-m", "bot", "serve", "--port", str(port), "--host", "127.0.0.1"]
            if self.args.profile:
                command[1:1] = ["-m", "cProfile", "-o", self.args.profile]
        else:
            command = [sys.executable, "-c", FLOORS, str(port), self.system]
            env["FLOOR_DATABASE"] = str(self.workdir / f"{self.system}.db")
        log = self.workdir / f"{self.system}.log"
        with log.open("ab") as log_file:
            self.process = await asyncio.create_subprocess_exec(
                *command, env=env, cwd=str(ROOT), stdout=asyncio.subprocess.DEVNULL, stderr=log_file
            )
        await wait_healthy(port, self.process, log)
        self.url = f"http://127.0.0.1:{port}/slack/events"
        self.verifier = SignatureVerifier(SECRET)
        self.session = aiohttp.ClientSession()
        await self.send(self.args.warmups)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.session.close()
        self.process.terminate()
        await self.process.wait()
        await self.slack.stop()

    async def send(self, turns: int) -> None:
        """`turns` mentions, each once the answer to the one before is in."""
        self.model.chat.push(*[reply("Hello! How can I help you today?") for _ in range(turns)])
        for _ in range(turns):
            ts = f"{1_800_000_000 + self.turns}.{uuid.uuid4().int % 1_000_000:06d}"
            self.turns += 1
            event = {
                "type": "app_mention",
                "user": "UALICE",
                "text": f"<@{BOT_USER_ID}> hello",
                "ts": ts,
                "channel": GENERAL,
                "event_ts": ts,
                "team": TEAM_ID,
            }
            answer = await post_signed(
                self.session, self.url, self.verifier, event_body(event), content_type="application/json"
            )
            assert answer.status == 200, answer
            await self.slack.wait_for(self.answered, count=self.turns, timeout=60)

    async def measure(self, turns: int, py_spy: str | None = None) -> float:
        """CPU ms per turn over `turns` turns (sampled by py-spy into `py_spy` if given)."""
        spy = await start_py_spy(self.process.pid, py_spy) if py_spy else None
        started, calls = cpu_seconds(self.process.pid), len(self.slack.calls)
        await self.send(turns)
        used = cpu_seconds(self.process.pid) - started
        self.web_api_calls.update(call.method for call in self.slack.calls[calls:])
        self.measured += turns
        if spy:
            spy.send_signal(signal.SIGINT)
            await spy.wait()
        return used * 1000 / turns


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=60, help="measured turns per round and system")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, the systems taking turns in each")
    parser.add_argument("--warmups", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=SYSTEMS, help="these systems only (default: all)")
    parser.add_argument("--profile", help="write the bot's cProfile stats to this file")
    parser.add_argument("--py-spy", help="sample the servers with py-spy over one round into this file (.SYSTEM)")
    args = parser.parse_args()
    systems = [system for system in SYSTEMS if not args.only or system in args.only]
    rounds: dict[str, list[float]] = {system: [] for system in systems}
    with tempfile.TemporaryDirectory(prefix="plain-turn-") as directory, ScriptedModel() as model:
        async with contextlib.AsyncExitStack() as stack:
            servers = [await stack.enter_async_context(Server(s, model, args, Path(directory))) for s in systems]
            for index in range(args.rounds):
                for server in servers:
                    py_spy = None
                    if args.py_spy and index == 0:
                        py_spy = f"{args.py_spy}.{server.system}"
                    rounds[server.system].append(await server.measure(args.turns, py_spy))
    print(
        f"{args.rounds} rounds of {args.turns} plain turns one after the other per server, the servers taking"
        f" turns, after {args.warmups} warm-ups; load {os.getloadavg()[0]:.1f}"
    )
    floors = [system for system in ("bolt-floor", "bolt-durable") if system in rounds]
    print(
        "| server | CPU ms per turn (median of rounds) | rounds | "
        + "".join(f"vs {floor} (median of rounds) | " for floor in floors)
        + "Web API calls per turn |"
    )
    print("| --- | --- | --- | " + "--- | " * len(floors) + "--- |")
    for server in servers:
        values = rounds[server.system]
        ratios = "".join(
            f"{statistics.median(v / f for v, f in zip(values, rounds[floor], strict=True)):.2f}x | "
            for floor in floors
        )
        shown = " ".join(f"{v:.1f}" for v in values)
        calls = ", ".join(f"`{m}` {n / server.measured:g}" for m, n in sorted(server.web_api_calls.items()))
        print(f"| {server.system} | {statistics.median(values):.1f} | {shown} | {ratios}{calls} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
