"""A soak: two `python -m bot serve` replicas on a PostgreSQL server of their own, behind a load balancer that
picks a replica at random, with people mentioning the bot, approving and declining through either replica,
while faults strike one after another (SIGKILL, SIGSTOP past the leases then SIGCONT, PostgreSQL restarts
`fast` and `immediate`, Slack failing `chat.postMessage`, redelivered events). Then a checker reads every
thread, every tool's effects, the database and the logs (`Findings`).

The agent is the crash agent (`tests/runtime/crash_agent.py`): `delete-record` asks for approval,
`list-records` runs at once and takes `slow_tool` seconds (so a kill lands mid-execution), and each
execution is written to the effects log. The model is the scripted one, answering from what it is sent
(a request names its tool and record; a tool's result gets "完了 <tool> <id>"), so any thread and any
replica can ask it anything in any order.

Used by `tests/soak/test_soak.py` (short, fixed seeds, in CI) and `benchmarks/soak.py` (minutes).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.slack_emulator import SlackEmulator

from .databases import migrate_every_package
from .pg_cluster import PostgresCluster, unused_port
from .processes import SECRET, bot_env, start_bot
from .scripted_model import ScriptedModel, call, reply, tool_calls
from .slack import SignedSender, slack_workspace

FAULTS = ("kill", "stop", "pg_fast", "pg_immediate", "slack_5xx", "redeliver")
EDIT_SHARE = 0.25
"""Of the approvals of `delete-record`, the share given through the edit form (Edit, then Submit)."""
STALE_AFTER = 3.0
"""The replicas' BOT_STALE_AFTER: a stopped replica's leases go stale this soon."""
FALSE_NOTICES = ("internal error", "Sorry, that failed")
SEND_AGAIN = "please send it again"
"""The notice of a turn a replica was stopped in: false once the answer came."""
DATABASE_AWAY = (
    "ConnectionRefusedError",
    "CannotConnectNowError",
    "connection is closed",
    "ConnectionDoesNotExistError",
    "DatabaseAwayError",
    "CommitOutcomeUnknownError",
    "another operation (2) is in progress",  # asyncpg still reading a server's goodbye (memory._reconnect)
    "AdminShutdownError",
    "the database system is",
    "connection was closed in the middle of operation",
    "terminating connection",
)
"""Traceback text that only says the database was away (forgiven by the checker)."""
_ASKS = re.compile(r"(delete record|list records) (\d+)")
_KEY = re.compile(r" key=(\S+)")
"""The idempotency key of an execution's line in the effects log."""
_RECORD = re.compile(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
"""Where a log record starts (its time stamp)."""


@dataclass(kw_only=True)
class SoakConfig:
    seconds: float = 30.0
    seed: int = 1
    people: int = 3
    faults: tuple[str, ...] = FAULTS
    slow_tool: float = 2.0
    """Seconds `list-records` takes."""
    fault_every: tuple[float, float] = (3.0, 6.0)
    """Seconds between two faults (drawn between the two)."""
    settle_for: float = 60.0
    """Seconds the soak waits, after the traffic and faults stop, for every request to be answered."""


@dataclass
class Request:
    person: str
    kind: str
    """`delete` (asks for approval) or `list` (runs at once, slowly)."""
    number: int
    ts: str = ""
    acked: bool = False
    decisions: list[str] = field(default_factory=list)
    """`tool_approve`/`tool_decline` for each approval message this person decided in the thread (an edit form
    submitted counts as `tool_approve`)."""
    refused_clicks: list[int] = field(default_factory=list)
    clicks: list[str] = field(default_factory=list)
    """Every click sent, answered or not (a stopped replica carries out a click whose answer timed out)."""
    """The HTTP status of each click that did not get a 200 (it is clicked again)."""
    kept_forms: int = 0
    """Edit forms answered with the modal kept open (not recorded: the database away); submitted again."""
    lost_clicks: list[str] = field(default_factory=list)
    """Approval messages whose click was acknowledged but which still showed live buttons 5 s later."""

    @property
    def tool(self) -> str:
        return "delete-record" if self.kind == "delete" else "list-records"

    @property
    def text(self) -> str:
        return f"{'delete record' if self.kind == 'delete' else 'list records'} {self.number}"


@dataclass
class Findings:
    seed: int
    requests: int = 0
    faults: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"seed {self.seed}: {self.requests} requests, faults {' '.join(self.faults) or 'none'}"]
        lines += [f"PROBLEM {p}" for p in self.problems] + [f"note {n}" for n in self.notes]
        return "\n".join(lines)


def model_answer(body: dict[str, Any]) -> Any:
    """The scripted model's answer to any request of the soak: a tool call for a person's request, the
    result's acknowledgement after a tool message."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        calls = {c["id"]: c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []}
        asked = calls.get(last.get("tool_call_id"), {}).get("function", {})
        args = json.loads(asked.get("arguments") or "{}")
        outcome = "" if '"done"' in str(last.get("content")) else " (not run)"
        return reply(f"完了 {asked.get('name')} {args.get('id')}{outcome}")
    found = _ASKS.search(str(last.get("content")))
    if found is None:
        return reply("はい。")
    tool = "delete-record" if found.group(1) == "delete record" else "list-records"
    return tool_calls(call(tool, {"id": found.group(2)}))


class LoadBalancer:
    """Sends each request to a replica picked at random; one that refuses the connection (killed) is
    skipped for the other, as a load balancer's health check would; one that hangs (stopped) times out."""

    def __init__(self, ports: list[int], rng: random.Random):
        self.ports = ports
        self.rng = rng
        self.port = unused_port()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        ports = self.ports[:]
        self.rng.shuffle(ports)
        for port in ports:
            url = f"http://127.0.0.1:{port}{request.rel_url}"
            try:
                async with self._session.request(request.method, url, data=body, headers=headers) as answer:
                    return web.Response(status=answer.status, body=await answer.read(), headers={
                        k: v for k, v in answer.headers.items() if k.lower() in ("content-type",)
                    })  # fmt: skip
            except aiohttp.ClientConnectorError:
                continue
            except (TimeoutError, aiohttp.ClientError):
                return web.Response(status=504)
        return web.Response(status=502)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()


class Soak:
    def __init__(self, config: SoakConfig, folder: Path):
        self.config = config
        self.rng = random.Random(config.seed)
        self.fault_rng = random.Random(f"{config.seed}-faults")
        """The faults' own draws: a seed strikes the same faults at the same times whatever the traffic did."""
        self.folder = folder
        self.effects = folder / "effects.log"
        self.requests: list[Request] = []
        self.findings = Findings(seed=config.seed)
        self.replicas: list[asyncio.subprocess.Process | None] = [None, None]
        self.ports = [unused_port(), unused_port()]
        self._numbers = iter(range(1, 1_000_000))
        self._stopping = False

    # --- the run ----------------------------------------------------------------------------
    async def run(self) -> Findings:
        cluster = PostgresCluster(Path(tempfile.mkdtemp(prefix="bot-soak-pg-")))
        cluster.init()
        cluster.start()
        self.cluster = cluster
        model = ScriptedModel().start()
        model.chat.push(*([model_answer] * 20_000))
        try:
            await migrate_every_package(cluster.url)
            async with SlackEmulator(slack_workspace()) as slack:
                self.slack = slack
                self.env = bot_env(
                    cluster.url,
                    slack,
                    OPENAI_BASE_URL=model.base_url,
                    OPENAI_API_KEY="soak",
                    EFFECTS=str(self.effects),
                    LIST_SECONDS=str(self.config.slow_tool),
                    BOT_STALE_AFTER=str(STALE_AFTER),
                    BOT_RECOVERY_INTERVAL="1",
                )
                for index in range(2):
                    await self._start(index)
                self.balancer = LoadBalancer(self.ports, self.rng)
                await self.balancer.start()
                self.sender = SignedSender(self.balancer.url, SECRET, slack=slack)
                try:
                    await self._traffic_under_faults()
                    await self._check()
                finally:
                    await self.balancer.close()
                    await self._stop_all()
        finally:
            model.stop()
            cluster.stop("immediate")
            import shutil

            shutil.rmtree(cluster.folder, ignore_errors=True)
        return self.findings

    async def _start(self, index: int) -> None:
        log = self.folder / f"replica{index}.log"
        self.replicas[index] = await start_bot(
            self.ports[index], self.env, log, "--agent", "tests.runtime.crash_agent:bot_agent"
        )

    async def _stop_all(self) -> None:
        for process in self.replicas:
            if process is None or process.returncode is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGCONT)
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 20)
            except TimeoutError:
                process.kill()
                await process.wait()

    async def _traffic_under_faults(self) -> None:
        deadline = time.monotonic() + self.config.seconds
        people = [f"U{n}" for n in (1, 2, 3, 7, 9)][: self.config.people]
        faults = asyncio.create_task(self._faults(deadline))
        try:
            await asyncio.gather(*(self._person(person, people, deadline) for person in people))
        finally:
            self._stopping = True
            await faults
        await self._settle()

    # --- people -----------------------------------------------------------------------------
    async def _person(self, person: str, people: list[str], deadline: float) -> None:
        rng = random.Random(f"{self.config.seed}-{person}")
        while time.monotonic() < deadline:
            request = Request(person=person, kind=rng.choice(["delete", "list", "delete"]), number=next(self._numbers))
            self.requests.append(request)
            event = self.sender.mention(request.text, user=person)
            request.ts = event["ts"]
            request.acked = await self._deliver(event)
            if request.acked:
                await self._decide_until_answered(request, [p for p in people if p != person], rng, deadline + 20)
            await asyncio.sleep(rng.uniform(0.2, 1.0))

    async def _deliver(self, event: dict[str, Any]) -> bool:
        """An event delivered as Slack does: retried (same event id) on a non-2xx or no answer in 3 s;
        sometimes delivered again after a 200 (the `redeliver` fault)."""
        event_id = "Ev" + os.urandom(8).hex().upper()
        acked = False
        for attempt in range(4):
            try:
                status, _ = await asyncio.wait_for(
                    self.sender.event(event, event_id=event_id, retry_num=attempt or None), 3
                )
                acked = status == 200
            except (TimeoutError, aiohttp.ClientError):
                acked = False
            if acked:
                break
            await asyncio.sleep(2**attempt * 0.5)
        if acked and "redeliver" in self.config.faults and self.rng.random() < 0.2:
            self.findings.faults.append("redeliver")
            with contextlib.suppress(TimeoutError, aiohttp.ClientError):
                await asyncio.wait_for(self.sender.event(event, event_id=event_id, retry_num=1), 3)
        return acked

    async def _decide_until_answered(self, request: Request, deciders: list[str], rng: random.Random, until: float):
        """Watch the request's thread until its answer comes, deciding each live approval that shows up."""
        clicked: dict[str, float] = {}
        while time.monotonic() < until:
            if self._answers(request):
                return
            for message in self.slack.thread("C1", request.ts):
                if "tool_approve" in message.action_ids():
                    if message.ts in clicked and time.monotonic() - clicked[message.ts] < 5:
                        continue  # the click is being carried out
                    if message.ts in clicked:
                        request.lost_clicks.append(message.ts)
                    choice = "tool_approve" if request.kind == "list" or rng.random() < 0.6 else "tool_decline"
                    decider = rng.choice(deciders)
                    if choice == "tool_approve" and request.kind == "delete" and rng.random() < EDIT_SHARE:
                        status = await self._edit(request, message, decider)
                    else:
                        request.clicks.append(choice)  # sent: it may decide even if its answer never comes back
                        status = None
                        with contextlib.suppress(TimeoutError, aiohttp.ClientError, AssertionError):
                            status, _ = await asyncio.wait_for(self.sender.click(message, choice, user=decider), 5)
                    if status == 200:
                        request.decisions.append(choice)
                        clicked[message.ts] = time.monotonic()
                    elif status is not None:
                        request.refused_clicks.append(status)
            await asyncio.sleep(0.5)

    async def _edit(self, request: Request, message: Any, decider: str) -> int | None:
        """Approve through the edit form (the same record): click Edit, find the modal it opened, submit it.
        The submission's status (200 once the modal closed), or None when no modal opened or no answer came
        (it is tried again, like a click)."""
        trigger = self.slack.workspace.new_trigger(decider)
        with contextlib.suppress(TimeoutError, aiohttp.ClientError, AssertionError):
            await asyncio.wait_for(self.sender.click(message, "tool_edit_args", user=decider, trigger_id=trigger), 5)
        deadline = time.monotonic() + 3
        opened = []
        while not opened and time.monotonic() < deadline:
            opened = [c for c in self.slack.calls_of("views.open") if c.params.get("trigger_id") == trigger]
            await asyncio.sleep(0.1)
        if not opened:
            return None
        view = opened[0].params["view"]
        view = json.loads(view) if isinstance(view, str) else view
        values = {"field:id": {"value": {"type": "plain_text_input", "value": str(request.number)}}}
        request.clicks.append("tool_approve")  # submitted: it may decide even if its answer never comes back
        try:
            status, body = await asyncio.wait_for(self.sender.submit(view, values, user=decider), 5)
        except (TimeoutError, aiohttp.ClientError):
            return None
        if status == 200 and body:  # the modal stayed open (the form was not recorded): submitted again later
            request.kept_forms += 1
            return None
        return status

    def _answers(self, request: Request) -> list[str]:
        wanted = f"完了 {request.tool} {request.number}"
        return [m.all_text for m in self.slack.thread("C1", request.ts) if wanted in m.all_text] if request.ts else []

    # --- faults -----------------------------------------------------------------------------
    async def _faults(self, deadline: float) -> None:
        kinds = [kind for kind in self.config.faults if kind != "redeliver"]
        bag: list[str] = []
        while kinds and time.monotonic() < deadline:
            await asyncio.sleep(self.fault_rng.uniform(*self.config.fault_every))
            if time.monotonic() >= deadline:
                break
            if not bag:  # every kind strikes once, in a drawn order, before any strikes again
                bag = self.fault_rng.sample(kinds, len(kinds))
            kind = bag.pop()
            index = self.fault_rng.randrange(2)
            self.findings.faults.append(kind)
            if kind == "kill":
                process = self.replicas[index]
                if process is not None and process.returncode is None:
                    process.send_signal(signal.SIGKILL)
                    await process.wait()
                await asyncio.sleep(self.fault_rng.uniform(0.5, 2.0))
                await self._start(index)
            elif kind == "stop":
                process = self.replicas[index]
                if process is not None and process.returncode is None:
                    process.send_signal(signal.SIGSTOP)
                    await asyncio.sleep(STALE_AFTER + self.fault_rng.uniform(1.0, 3.0))
                    process.send_signal(signal.SIGCONT)
            elif kind in ("pg_fast", "pg_immediate"):
                mode = kind.removeprefix("pg_")
                await asyncio.to_thread(self.cluster.stop, mode)
                await asyncio.sleep(self.fault_rng.uniform(0.0, 3.0))
                await asyncio.to_thread(self.cluster.start)
            elif kind == "slack_5xx":
                self.slack.fail("chat.postMessage", status=self.fault_rng.choice([500, 503, 429]))

    # --- the checker ------------------------------------------------------------------------
    async def _settle(self) -> None:
        """Wait until every acknowledged request has its answer, or `settle_for` seconds."""
        deadline = time.monotonic() + self.config.settle_for
        while time.monotonic() < deadline:
            if all(self._answers(r) for r in self.requests if r.acked):
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(2 * STALE_AFTER)  # anything late (a woken replica's post) has time to land

    async def _check(self) -> None:
        findings = self.findings
        findings.requests = len(self.requests)
        effects = self.effects.read_text().splitlines() if self.effects.exists() else []
        for request in self.requests:
            where = f"{request.text} by {request.person} (thread {request.ts})"
            if not request.acked:
                findings.notes.append(f"{where}: never acknowledged in four deliveries")
                continue
            texts = [m.all_text for m in self.slack.thread("C1", request.ts)]
            answers = self._answers(request)
            if len(answers) != 1:
                findings.problems.append(f"{where}: answered {len(answers)} times: {texts}")
            false = [t for t in texts if any(notice in t for notice in FALSE_NOTICES)]
            if false:
                findings.problems.append(f"{where}: a false error: {false}")
            if any(not t.strip() for t in texts):
                findings.problems.append(f"{where}: an empty message: {texts}")
            messages = self.slack.thread("C1", request.ts)
            answered_at = min((float(m.ts) for m in messages if m.all_text in answers), default=None)
            late = [m.all_text for m in messages if SEND_AGAIN in m.all_text]
            if (
                late
                and answered_at is not None
                and any(float(m.ts) > answered_at for m in messages if SEND_AGAIN in m.all_text)
            ):
                findings.problems.append(f"{where}: told to send it again after the answer: {texts}")
            elif late:
                findings.notes.append(f"{where}: told to send it again (before its answer)")
            if request.kept_forms:
                findings.notes.append(f"{where}: {request.kept_forms} edit form(s) kept open, not recorded")
            if request.refused_clicks:
                findings.notes.append(f"{where}: clicks answered {request.refused_clicks} (clicked again)")
            for ts in request.lost_clicks:
                findings.notes.append(f"{where}: a click on {ts} answered 200 but the call still waited 5 s later")
            finished = [e for e in effects if e.startswith(f"finished {request.tool} {request.number} ")]
            # An execution that a SIGSTOP cut off mid-way finishes when its process wakes, however late, even after
            # the call was interrupted, approved again and run elsewhere (nothing stops a woken process's next
            # instruction); what the runtime promises then is one idempotency key for both, so a system that
            # honours it (as the tools' contract asks) applies the effect once, and that one result is stored.
            applied = {key.group(1) for key in map(_KEY.search, finished) if key}
            approved = "tool_approve" in request.clicks
            if request.kind == "delete" and not approved and finished:
                findings.problems.append(f"{where}: ran without an approval ({request.decisions})")
            if answers and "(not run)" not in answers[0] and len(applied) != 1:
                findings.problems.append(f"{where}: the tool took effect {len(applied)} times, answered as run")
            if len(applied) > 1:
                findings.problems.append(f"{where}: the tool took effect {len(applied)} times (keys {applied})")
            if len(finished) > len(applied):
                findings.notes.append(f"{where}: executed {len(finished)} times under one idempotency key")
            for message in self.slack.thread("C1", request.ts):
                if "tool_approve" in message.action_ids():
                    findings.problems.append(f"{where}: live buttons left on {message.ts}: {message.all_text[:200]}")
        await self._check_database()
        self._check_logs()

    async def _check_database(self) -> None:
        import asyncpg

        connection = await asyncpg.connect(host="127.0.0.1", port=self.cluster.port, user="postgres")
        try:
            stranded = await connection.fetch(
                "SELECT id, status, step FROM runs WHERE status IN ('running', 'suspended')"
            )
        finally:
            await connection.close()
        for run in stranded:
            self.findings.problems.append(f"run {run['id']} left {run['status']} at step {run['step']}")

    def _check_logs(self) -> None:
        """Every log record with a traceback, unless it only says the database was away."""
        for log in sorted(self.folder.glob("replica*.log")):
            for record in _RECORD.split(log.read_text(errors="replace")):
                if "Traceback (most recent call last)" in record and not any(m in record for m in DATABASE_AWAY):
                    last = [line for line in record.splitlines() if line and not line.startswith(" ")]
                    self.findings.problems.append(f"traceback in {log.name}: {last[0][:200]} ... {last[-1][:200]}")


async def soak(config: SoakConfig, folder: Path) -> Findings:
    """One soak run in `folder` (its logs stay there); what the checker found."""
    folder.mkdir(parents=True, exist_ok=True)
    return await Soak(config, folder).run()
