"""CPU of one plain Slack turn: this bot against a hand-written Bolt app doing the least (issue 19).

A plain turn: a user mentions the bot ("hello"), the bot asks the model once and writes the answer in
the thread. Both servers run as processes of their own (`python -m bot serve`, and the "Bolt floor"
below) against the same Slack Web API emulation and the same scripted OpenAI-compatible model, which run
in this process; the turns are sent one after the other (the next once the answer is in), and the
server's CPU (user + system, from /proc) over the turns, divided by their number, is the CPU per turn.

The Bolt floor is a slack-bolt `AsyncApp` served by aiohttp that acks a mention, calls the model once
(the openai client, streamed) and posts the answer with `chat.postMessage`: no database, no thread
queue, no streaming API calls, no status. The ratio shows what this bot adds per turn (what it does
for it: the event recorded before the ack, the thread's turn and queue, the conversation's records,
the run's six-or-so writes, `setStatus` (once: the answer clears it), `startStream`/`stopStream`).

    python benchmarks/plain_turn.py                      # 60 turns each, after 5 warm-ups, SQLite
    python benchmarks/plain_turn.py --turns 30 --only bot
    python benchmarks/plain_turn.py --profile /tmp/turn.prof   # the bot under cProfile (then pstats)
    python benchmarks/plain_turn.py --only bot --py-spy /tmp/turn.txt   # py-spy over the measured turns only
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
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

BOLT_FLOOR = """
import os, sys
import openai
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request

app = AsyncApp(token=os.environ["SLACK_BOT_TOKEN"], signing_secret=os.environ["SLACK_SIGNING_SECRET"])
app.client.base_url = os.environ["SLACK_API_URL"]
model = openai.AsyncOpenAI()

@app.event("app_mention")
async def mention(event, say):
    stream = await model.chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": event["text"]}], stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    await say(text=text, thread_ts=event.get("thread_ts") or event["ts"])

async def events(request):
    return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

async def health(_request):
    return web.json_response({"ok": True})

web_app = web.Application()
web_app.router.add_post("/slack/events", events)
web_app.router.add_get("/health", health)
web.run_app(web_app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


async def measure(system: str, args: argparse.Namespace, workdir: Path) -> float:
    """CPU ms per turn of `system` ("bot" or "bolt-floor")."""
    total = args.warmups + args.turns
    with ScriptedModel() as model:
        model.chat.push(*[reply("Hello! How can I help you today?") for _ in range(total)])
        async with SlackEmulator(Workspace(demo_people())) as slack:
            port = free_port()
            env = {
                **os.environ,
                "SLACK_BOT_TOKEN": "xoxb-bench",
                "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": slack.api_url,
                "DATABASE_URL": f"sqlite+aiosqlite:///{workdir}/{system}.db",
                "BOT_MODEL": "openai/test-model",
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "bench",
            }
            if system == "bot":
                command = [sys.executable, "-m", "bot", "serve", "--port", str(port), "--host", "127.0.0.1"]
                if args.profile:
                    command[1:1] = ["-m", "cProfile", "-o", args.profile]
            else:
                command = [sys.executable, "-c", BOLT_FLOOR, str(port)]
            log = workdir / f"{system}.log"
            with log.open("ab") as log_file:
                process = await asyncio.create_subprocess_exec(
                    *command, env=env, cwd=str(ROOT), stdout=asyncio.subprocess.DEVNULL, stderr=log_file
                )
            try:
                await wait_healthy(port, process, log)
                url = f"http://127.0.0.1:{port}/slack/events"
                verifier = SignatureVerifier(SECRET)
                session = aiohttp.ClientSession()
                answered = "chat.stopStream" if system == "bot" else "chat.postMessage"
                started = 0.0
                spy = None
                for index in range(total):
                    if index == args.warmups:
                        started = cpu_seconds(process.pid)
                        if args.py_spy and system == "bot":
                            spy = await start_py_spy(process.pid, args.py_spy)
                    ts = f"{1_800_000_000 + index}.{uuid.uuid4().int % 1_000_000:06d}"
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
                        session, url, verifier, event_body(event), content_type="application/json"
                    )
                    assert answer.status == 200, answer
                    await slack.wait_for(answered, count=index + 1, timeout=60)
                used = cpu_seconds(process.pid) - started
                if spy:
                    spy.send_signal(signal.SIGINT)
                    await spy.wait()
                await session.close()
            finally:
                process.terminate()
                await process.wait()
    return used * 1000 / args.turns


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--warmups", type=int, default=5)
    parser.add_argument("--only", choices=["bot", "bolt-floor"])
    parser.add_argument("--profile", help="write the bot's cProfile stats to this file")
    parser.add_argument("--py-spy", help="sample the bot with py-spy over the measured turns into this file")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="plain-turn-") as directory:
        for system in ("bolt-floor", "bot"):
            if args.only and system != args.only:
                continue
            results[system] = await measure(system, args, Path(directory))
    print(f"{args.turns} plain turns one after the other, after {args.warmups} warm-ups; load {os.getloadavg()[0]:.1f}")
    print("| server | CPU ms per turn | vs the Bolt floor |")
    print("| --- | --- | --- |")
    floor = results.get("bolt-floor")
    for system, ms in results.items():
        print(f"| {system} | {ms:.1f} | {f'{ms / floor:.2f}x' if floor else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
