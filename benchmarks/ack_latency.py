"""How fast does the bot acknowledge Slack's events under a burst, and how long until every thread is
answered? (issue 9)

It starts `python -m bot serve` (a real process) on a fresh database, with the Slack Web API stub
and the scripted OpenAI-compatible server of the tests, the model answering every request after
`--model-seconds` (1 s). After one warm-up mention, it sends N mentions at once (each in its own
thread, default 300), each as Slack delivers a mention in a channel: two signed deliveries of the same
message, an `app_mention` event and a `message` event, each with an event id of its own. It measures:

- ack: the time from sending each delivery until the bot's HTTP 200 (Slack retries after 3 s), measured
  by a sender in a process of its own (`--burst`), as Slack's senders are: the Web API emulation and
  the scripted model, which answer the bot's calls meanwhile, run in this process and would otherwise
  hold the sender up;
- answered: the time from the burst until every thread has its answer (`chat.stopStream`).

Reported: ack p50 / p99 / max, acks over 1 s and over 3 s, the time until all are answered, and
whether all were answered. On SQLite and on PostgreSQL (a fresh database on 127.0.0.1:5432).

With `--compare` the same run also measures, from the same sender, a bare aiohttp server that reads
the body and answers 200 (the floor of the ack), and the same burst with a model that answers at once
(the CPU-bound time of the burst), and checks issue 19's targets: every thread answered within 1.2x
the instant-model time plus 2 s, ack p99 <= 1.5x the bare server's, none over 1 s.

    python benchmarks/ack_latency.py --compare                # both databases, 300 mentions, the targets
    python benchmarks/ack_latency.py --compare --repeat 3     # the same, each three times: targets on the medians
    python benchmarks/ack_latency.py --mentions 100 --only sqlite
    python benchmarks/ack_latency.py --bot-source /path/to/other/checkout   # the same load on other code
    python benchmarks/ack_latency.py --compare --before /path/to/old/checkout  # each round on both codes
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

from bot.slack_emulator import BOT_USER_ID, Channel, Person, SlackEmulator, Workspace  # noqa: E402
from tests.support.scripted_model import ScriptedModel, failure, reply  # noqa: E402

SECRET = "ack-latency-benchmark-secret"
TEAM = "T0BENCH"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def bench_workspace(mentions: int) -> Workspace:
    """A person and a channel for each mention (the emulation, like Slack, refuses channels it does not know)."""
    people = [Person(id=f"U{i:05d}", name=f"u{i}", real_name=f"User {i}") for i in range(mentions + 1)]
    channels = [Channel(id=f"C{i:05d}", name=f"bench-{i}") for i in range(mentions + 1)]
    return Workspace(people, bot_name="Bench Bot", channels=channels)


def mention_bodies(index: int) -> list[str]:
    """Slack's two deliveries of one mention in a channel: `app_mention`, and `message` (the channel's
    `message.channels` subscription) for the very same message, each with an `event_id` of its own."""
    ts = f"{1_800_000_000 + index}.{uuid.uuid4().int % 1_000_000:06d}"
    message = {
        "user": f"U{index:05d}",
        "text": f"<@{BOT_USER_ID}> hello number {index}",
        "ts": ts,
        "channel": f"C{index:05d}",
        "event_ts": ts,
        "team": TEAM,
    }
    return [
        delivery({"type": "app_mention", **message}),
        delivery({"type": "message", **message, "channel_type": "channel"}),
    ]


def delivery(event: dict) -> str:
    body = {
        "token": "unused",
        "team_id": TEAM,
        "api_app_id": "A0APP",
        "event": event,
        "type": "event_callback",
        "event_id": "Ev" + uuid.uuid4().hex[:12].upper(),
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM, "user_id": BOT_USER_ID, "is_bot": True}],
    }
    return json.dumps(body)


async def post(session: aiohttp.ClientSession, url: str, body: str, verifier: SignatureVerifier) -> float:
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": verifier.generate_signature(timestamp=timestamp, body=body),
    }
    started = time.perf_counter()
    async with session.post(url, data=body.encode(), headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"the bot answered {response.status}")
    return time.perf_counter() - started


async def start_bot(port: int, env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    with log.open("ab") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log_file,
            cwd=env.get("PYTHONPATH") or str(ROOT),
        )
    deadline = time.monotonic() + 60
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise RuntimeError(f"the bot exited: {log.read_text()[-2000:]}")
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return process
            except aiohttp.ClientError:
                await asyncio.sleep(0.2)
    raise RuntimeError("the bot did not start")


async def create_postgres_database() -> tuple[str, str]:
    import asyncpg

    name = f"bot_bench_{uuid.uuid4().hex[:12]}"
    connection = await asyncpg.connect(host="127.0.0.1", port=5432, user="postgres", database="postgres")
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    return name, f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"


async def drop_postgres_database(name: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(host="127.0.0.1", port=5432, user="postgres", database="postgres")
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


async def run_once(
    database_url: str, args: argparse.Namespace, workdir: Path, model_seconds: float, source: str | None
) -> dict:
    model = ScriptedModel().start()
    slow = failure("timeout", seconds=model_seconds, then=reply("Done.")) if model_seconds > 0 else reply("Done.")
    model.chat.push(*([slow] * (args.mentions + 1)))
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "SLACK_SIGNING_SECRET": SECRET,
        "DATABASE_URL": database_url,
        "BOT_MODEL": "openai/test-model",
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "bench",
    }
    if args.max_concurrent_turns:
        env["BOT_MAX_CONCURRENT_TURNS"] = str(args.max_concurrent_turns)
    if source:
        env["PYTHONPATH"] = str(Path(source).resolve())
    port = free_port()
    url = f"http://127.0.0.1:{port}/slack/events"
    verifier = SignatureVerifier(SECRET)
    try:
        async with SlackEmulator(bench_workspace(args.mentions)) as slack:
            env["SLACK_API_URL"] = slack.api_url
            bot = await start_bot(port, env, workdir / "bot.log")
            try:
                connector = aiohttp.TCPConnector(limit=0)
                async with aiohttp.ClientSession(connector=connector) as session:
                    for body in mention_bodies(0):  # warm-up: auth.test, schema, first turn
                        await post(session, url, body, verifier)
                    try:
                        await slack.wait_for("chat.stopStream", timeout=60)
                    except AssertionError as exc:
                        raise RuntimeError(
                            f"the warm-up mention got no answer: {(workdir / 'bot.log').read_text()[-3000:]}"
                        ) from exc
                    started = time.perf_counter()
                    acks = await send_burst(url, args.mentions)
                    try:
                        await slack.wait_for("chat.stopStream", count=args.mentions + 1, timeout=args.timeout)
                        all_answered = True
                    except AssertionError:
                        all_answered = False
                    answered_s = time.perf_counter() - started
                    answered = len(slack.calls_of("chat.stopStream")) - 1
            finally:
                bot.terminate()
                await bot.wait()
    finally:
        model.stop()
    return {
        **ack_summary(acks),
        "mentions": args.mentions,
        "answered": answered,
        "all_answered": all_answered,
        "all_answered_s": answered_s,
    }


async def send_burst(url: str, mentions: int) -> list[float]:
    """The seconds of each ack of `mentions` mentions (two deliveries each) sent at once by a sender process
    of its own."""
    sender = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--burst", url, str(mentions),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert sender.stdout is not None and sender.stdin is not None
    await sender.stdout.readline()  # ready: its bodies are built and signed
    sender.stdin.close()  # go
    acks = json.loads((await sender.stdout.read()).decode())
    if await sender.wait() != 0:
        raise RuntimeError("the burst sender failed")
    return acks


def ack_summary(acks: list[float]) -> dict:
    ms = [a * 1000 for a in acks]
    return {
        "deliveries": len(acks),
        "ack_p50_ms": statistics.median(ms),
        "ack_p99_ms": percentile(ms, 0.99),
        "ack_max_ms": max(ms),
        "acks_over_1s": sum(1 for a in ms if a > 1000),
        "acks_over_3s": sum(1 for a in ms if a > 3000),
    }


BARE_SERVER = """
import sys
from aiohttp import web

async def handle(request):
    await request.read()
    return web.Response(status=200)

app = web.Application()
app.router.add_post("/slack/events", handle)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


async def bare_server(mentions: int) -> dict:
    """The acks of a bare aiohttp server (reads the body, answers 200) for the same burst, same sender."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(sys.executable, "-c", BARE_SERVER, str(port))
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(100):
                try:
                    async with session.post(f"http://127.0.0.1:{port}/slack/events", data=b"{}") as response:
                        await response.read()
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
        return ack_summary(await send_burst(f"http://127.0.0.1:{port}/slack/events", mentions))
    finally:
        server.terminate()
        await server.wait()


async def burst(url: str, mentions: int) -> None:
    """`--burst URL N`: send N signed mentions (two deliveries each) at once (after a line on stdin closes),
    print each ack's seconds."""
    verifier = SignatureVerifier(SECRET)
    bodies = [body for i in range(1, mentions + 1) for body in mention_bodies(i)]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        acks = await asyncio.gather(*(post(session, url, body, verifier) for body in bodies))
    print(json.dumps(acks), flush=True)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mentions", type=int, default=300)
    parser.add_argument("--model-seconds", type=float, default=1.0)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--max-concurrent-turns", type=int, help="BOT_MAX_CONCURRENT_TURNS (default: the bot's)")
    parser.add_argument("--bot-source", help="run the bot from this checkout instead (for a before/after)")
    parser.add_argument("--before", help="in each round, also run the bot from this checkout (labelled before)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for every answer")
    parser.add_argument("--compare", action="store_true", help="also a bare server and an instant model (targets)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of each measurement; the targets are checked on their medians"
    )
    args = parser.parse_args()
    print(
        f"{args.mentions} simultaneous mentions, two deliveries each"
        f"{', BOT_MAX_CONCURRENT_TURNS=' + str(args.max_concurrent_turns) if args.max_concurrent_turns else ''}"
    )
    print(
        "| server | database | model s | ack p50 ms | ack p99 ms | ack max ms | acks > 1 s | acks > 3 s | answered | all answered after s |"
    )  # noqa: E501
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    ok = True
    codes = {"bot": args.bot_source, **({"before": args.before} if args.before else {})}
    for backend in ("sqlite", "postgres"):
        if args.only and backend != args.only:
            continue
        rounds = []
        for _ in range(args.repeat):
            runs: dict = {}
            if args.compare:
                runs["bare"] = await bare_server(args.mentions)
                print_row("bare aiohttp", "-", "-", runs["bare"])
            for code, source in codes.items():
                for seconds in ([0.0] if args.compare else []) + [args.model_seconds]:
                    runs[code, seconds] = await measured(backend, args, seconds, source)
                    print_row(code, backend, f"{seconds:g}", runs[code, seconds])
            slow = runs["bot", args.model_seconds]
            ok &= slow["acks_over_1s"] == 0 and slow["all_answered"]
            rounds.append(runs)
        if args.compare:
            for code in codes:
                ok &= report_targets(backend, code, rounds, args) or code != "bot"
    print(
        "targets (none over 1 s, all answered" + (", issue 19's ratios" if args.compare else "") + "):",
        "met" if ok else "NOT met",
    )
    return 0 if ok else 1


async def measured(backend: str, args: argparse.Namespace, seconds: float, source: str | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="ack-bench-") as directory:
        workdir = Path(directory)
        if backend == "sqlite":
            return await run_once(f"sqlite+aiosqlite:///{workdir}/bot.db", args, workdir, seconds, source)
        name, url = await create_postgres_database()
        try:
            return await run_once(url, args, workdir, seconds, source)
        finally:
            await drop_postgres_database(name)


def report_targets(backend: str, code: str, rounds: list[dict], args: argparse.Namespace) -> bool:
    # each round's bare server and bot ran minutes apart at most: its ratio is read within the round
    instant = statistics.median(r[code, 0.0]["all_answered_s"] for r in rounds)
    answered = statistics.median(r[code, args.model_seconds]["all_answered_s"] for r in rounds)
    ratio = statistics.median(r[code, args.model_seconds]["ack_p99_ms"] / r["bare"]["ack_p99_ms"] for r in rounds)
    bound = 1.2 * instant + 2
    met = answered <= bound and ratio <= 1.5
    of = f" (medians of {len(rounds)} rounds)" if len(rounds) > 1 else ""
    print(
        f"  {code}, {backend}{of}: all answered after {answered:.1f} s with a {args.model_seconds:g} s model "
        f"(target <= 1.2 x {instant:.1f} + 2 = {bound:.1f} s); ack p99 {ratio:.2f}x "
        f"the bare server's (target <= 1.5x): {'met' if met else 'NOT met'}"
    )
    return met


def print_row(server: str, backend: str, seconds: str, r: dict) -> None:
    answered = f"{r['answered']}/{r['mentions']}" if "answered" in r else "-"
    after = f"{r['all_answered_s']:.1f}" if "all_answered_s" in r else "-"
    print(
        f"| {server} | {backend} | {seconds} | {r['ack_p50_ms']:.0f} | {r['ack_p99_ms']:.0f} | {r['ack_max_ms']:.0f} | "
        f"{r['acks_over_1s']} | {r['acks_over_3s']} | {answered} | {after} |",
        flush=True,
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--burst"]:
        asyncio.run(burst(sys.argv[2], int(sys.argv[3])))
    else:
        sys.exit(asyncio.run(main()))
