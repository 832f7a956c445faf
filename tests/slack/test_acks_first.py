"""A burst is acknowledged before its turns take the loop: Bolt's dispatch of a recorded delivery waits
while others are still being recorded (their acks wait for the claim's commit), for a bounded time."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.slack import intake as intake_module
from bot.slack.intake import EventIntake
from bot.slack.stores import ClickLog, EventLog, prepare_slack_tables
from bot.slack_emulator import BOT_USER_ID, GENERAL, TEAM_ID, SlackEmulator
from bot.slack_emulator.app_requests import event_body
from memory import Storage

SECRET = "acks-first-test-secret"


def signed_mention(text: str, ts: str) -> AsyncBoltRequest:
    body = event_body(
        {"type": "app_mention", "user": "UALICE", "text": f"<@{BOT_USER_ID}> {text}", "ts": ts,
         "channel": GENERAL, "event_ts": ts, "team": TEAM_ID}
    )  # fmt: skip
    timestamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=timestamp, body=body)
    headers = {"content-type": "application/json", "x-slack-request-timestamp": timestamp,
               "x-slack-signature": signature}  # fmt: skip
    return AsyncBoltRequest(body=body, headers=headers)


@contextmanager
def write_lock(database: Path) -> Iterator[threading.Event]:
    """Another process's long write transaction on `database`: every claim waits until `release` is set."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(database, isolation_level=None)
        connection.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(30)
        connection.execute("ROLLBACK")
        connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        yield release
    finally:
        release.set()
        holder.join(10)


async def told(body: dict) -> None:
    """No clicker to tell here: these tests send events only."""


async def an_intake(tmp_path: Path, slack: SlackEmulator) -> tuple[EventIntake, AsyncApp, Storage, asyncio.Event]:
    """The intake of a Bolt app (on the Slack emulation) whose dispatch of a mention that says "hold"
    waits for the event returned."""
    storage = Storage(f"sqlite+aiosqlite:///{tmp_path}/bot.db")
    await prepare_slack_tables(storage)
    app = AsyncApp(token="xoxb-test-token", signing_secret=SECRET)
    app.client.base_url = slack.api_url
    held = asyncio.Event()

    @app.middleware
    async def hold(body, next):
        if body.get("event", {}).get("text", "").endswith("hold"):
            await held.wait()
        await next()

    return (
        EventIntake(
            app,
            EventLog(storage),
            ClickLog(storage),
            SECRET,
            holder="test",
            tell_lost=told,
            logger=logging.getLogger("test"),
        ),
        app,
        storage,
        held,
    )


async def test_a_delivery_waits_for_its_dispatch_until_the_deliveries_being_recorded_are_answered(tmp_path, slack):
    intake, app, storage, held = await an_intake(tmp_path, slack)
    recording: list[asyncio.Task] = []
    seen: list[tuple[str, bool]] = []  # (the mention, whether the delivery being recorded meanwhile was answered)

    @app.event("app_mention")
    async def mentioned(event):
        seen.append((event["text"].split()[-1], recording[0].done()))

    try:
        assert (await intake.acknowledge(signed_mention("hold", "1800000000.000100"))).status == 200
        assert (await intake.acknowledge(signed_mention("first", "1800000001.000100"))).status == 200
        with write_lock(tmp_path / "bot.db") as release:  # another process writes: the next claim waits
            recording.append(asyncio.create_task(intake.acknowledge(signed_mention("second", "1800000002.000100"))))
            held.set()  # the dispatcher is free for "first" now, while "second" is being recorded
            await asyncio.sleep(0.1)
            release.set()
            assert (await recording[0]).status == 200
        async with asyncio.timeout(5):
            while len(seen) < 3:
                await asyncio.sleep(0.01)
        assert seen == [("hold", False), ("first", True), ("second", True)]
    finally:
        await intake.close()
        await storage.close()


async def test_the_dispatch_waits_for_the_acks_a_bounded_time(tmp_path, slack, monkeypatch):
    """A delivery whose record hangs (the database locked by another process) holds back the dispatch of
    one recorded before it for `ACKS_FIRST_FOR` at most: that turn is not held hostage by the other."""
    monkeypatch.setattr(intake_module, "ACKS_FIRST_FOR", 0.3)
    intake, app, storage, held = await an_intake(tmp_path, slack)
    dispatched = asyncio.Event()

    @app.event("app_mention")
    async def mentioned(event):
        if event["text"].endswith("first"):
            dispatched.set()

    try:
        assert (await intake.acknowledge(signed_mention("hold", "1800000000.000100"))).status == 200
        assert (await intake.acknowledge(signed_mention("first", "1800000001.000100"))).status == 200
        with write_lock(tmp_path / "bot.db"):
            hanging = asyncio.create_task(intake.acknowledge(signed_mention("second", "1800000002.000100")))
            held.set()
            started = time.monotonic()
            async with asyncio.timeout(5):
                await dispatched.wait()
            waited = time.monotonic() - started
            assert not hanging.done()  # still waiting for the lock
        assert 0.2 < waited < 2, waited
        assert (await hanging).status == 200
    finally:
        await intake.close()
        await storage.close()
