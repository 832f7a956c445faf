"""`python -m bot serve` end to end, in real processes: the demo agent answers over HTTP, and a pending
approval is decided by a second process after the first one was stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from bot.slack_emulator import SlackEmulator
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender, slack_workspace

SECRET = "cli-test-signing-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start_bot(port: int, env: dict[str, str], log: Path, *args: str) -> asyncio.subprocess.Process:
    """`python -m bot serve [args]` on `port`, its log appended to `log` (a file, so a full pipe never blocks it)."""
    with log.open("ab") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            *args,
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log_file,
        )
    deadline = time.monotonic() + 30
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise AssertionError(log.read_text())
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return process
            except aiohttp.ClientError:
                await asyncio.sleep(0.2)
    raise AssertionError("the bot did not start")


async def stop_bot(process: asyncio.subprocess.Process) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), 15)
    except TimeoutError:
        process.kill()
        await process.wait()
    assert process.returncode == 0, f"the bot did not stop cleanly (exit {process.returncode})"


@pytest.fixture
async def slack():
    async with SlackEmulator(slack_workspace()) as emulator:
        yield emulator


async def test_serve_answers_and_a_new_process_decides_the_pending_approval(database_url, slack, model, tmp_path):
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-cli",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.api_url,
        "DATABASE_URL": database_url,
        "BOT_MODEL": "openai/test-model",
    }
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    port = free_port()
    first = await start_bot(port, env, tmp_path / "bot.log")
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET, slack=slack)
    try:
        event = sender.mention("delete record 2")
        assert (await sender.event(event))[0] == 200
        posted = await slack.wait_for(
            "chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")), timeout=30
        )
        # the thinking status is cleared once the turn is over (the message's ts recorded)
        await slack.wait_for("assistant.threads.setStatus", lambda c: c.params.get("status") == "", timeout=30)
    finally:
        await stop_bot(first)
    message = slack.posted_by(posted[0])

    second = await start_bot(port, env, tmp_path / "bot.log")
    try:
        assert (await sender.click(message, "tool_approve", user="U2"))[0] == 200
        stops = await slack.wait_for("chat.stopStream", timeout=30)
        assert slack.message("C1", stops[-1].params["ts"]).text == "Record 2 is deleted."
        assert "Approved" in message.all_text and message.action_ids() == []
        listing = [c for c in slack.calls if c.method == "chat.update"]
        assert listing
        assert event["ts"] == slack.message("C1", stops[-1].params["ts"]).thread_ts
    finally:
        await stop_bot(second)
