"""`python -m bot serve` with BOT_API_TOKEN serves the HTTP API on its port, in a real process: a call
waiting in Slack is approved through the API and the Slack message is updated as a click would."""

from __future__ import annotations

import asyncio
import socket
import threading

import aiohttp

from tests.support.processes import SECRET, bot_env, free_port, start_bot, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender
from tests.support.waiting import until


async def test_serve_serves_the_api_and_a_decision_through_it_shows_in_slack(database_url, slack, model, tmp_path):
    env = bot_env(database_url, slack, BOT_API_TOKEN="cli-api-token")
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = await start_bot(port, env, tmp_path / "bot.log")
    auth = {"Authorization": "Bearer cli-api-token"}
    try:
        sender = SignedSender(f"{base}/slack/events", SECRET, slack=slack)
        assert (await sender.event(sender.mention("delete record 2")))[0] == 200
        posted = await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")))
        message = slack.posted_by(posted[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/api/agents/demo-agent/suspended-runs", headers=auth) as response:
                page = await response.json()
            assert response.status == 200 and page["total"] == 1
            run = page["runs"][0]
            path = f"{base}/api/agents/demo-agent/runs/{run['runId']}/tool-calls/call_1/approve"
            async with session.post(path, json={"approver": "U2"}) as response:
                assert response.status == 401
            async with session.post(path, json={"approver": "U2"}, headers=auth) as response:
                assert response.status == 200, await response.text()
        await slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts, timeout=30)
        assert "Approved" in message.all_text and "<@U2>" in message.all_text
        stops = await slack.wait_for("chat.stopStream", timeout=30)
        assert slack.message("C1", stops[-1].params["ts"]).text == "Record 2 is deleted."
    finally:
        await stop_bot(process)


async def test_a_run_an_api_decision_resumed_is_answered_in_slack_within_the_shutdown_grace(
    database_url, slack, model, tmp_path
):
    """SIGTERM while the run an API approval resumed is at work: like a click's, it gets BOT_SHUTDOWN_GRACE,
    its answer reaches the thread, and the bot exits 0."""
    answering, release = threading.Event(), threading.Event()

    def slowly(_body):
        answering.set()
        release.wait(60)
        return reply("Record 2 is deleted.")

    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), slowly)
    env = bot_env(database_url, slack, BOT_API_TOKEN="cli-api-token", BOT_SHUTDOWN_GRACE="20")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = await start_bot(port, env, tmp_path / "bot.log")
    stopping = None
    try:
        sender = SignedSender(f"{base}/slack/events", SECRET, slack=slack)
        event = sender.mention("delete record 2")
        assert (await sender.event(event))[0] == 200
        await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")))
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer cli-api-token"}) as session:
            async with session.get(f"{base}/api/agents/demo-agent/suspended-runs") as response:
                run_id = (await response.json())["runs"][0]["runId"]
            path = f"{base}/api/agents/demo-agent/runs/{run_id}/tool-calls/call_1/approve"
            async with session.post(path, json={"approver": "U2"}) as response:
                assert response.status == 200, await response.text()
        await until(answering.is_set, 30, what="the model asked for the answer after the approved tool")

        stopping = asyncio.ensure_future(stop_bot(process))
        await until(lambda: not _listening(port), 30, what="the bot to stop listening")
        await asyncio.sleep(1)  # the web server's cleanup is done by now: the run is in its grace
    finally:
        release.set()
        await (stopping if stopping is not None else stop_bot(process))

    said = [m.text for m in slack.thread("C1", event["ts"])]
    assert "Record 2 is deleted." in said, said


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
