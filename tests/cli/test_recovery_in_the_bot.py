"""The bot runs the recovery itself: at start and periodically, on every replica; and on SIGTERM it lets
running tools finish before it exits. Real `python -m bot serve` processes, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from tests.support.processes import SECRET, bot_env, crash, free_port, lines, run, start_serve, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender
from tests.support.waiting import until


async def test_the_bot_recovers_a_run_a_crashed_process_left(model, database_url, storage, slack, effects, tmp_path):
    model.chat.push(tool_calls(call("delete-record", {"id": "5"}, id="call_del")), reply("Deleted record 5."))
    started = await run("start", "Delete record 5", database_url=database_url)
    await crash("approve", started["run_id"], "call_del", database_url=database_url, CRASH_AT="before_tool")
    assert lines(effects, "started") == []

    env = bot_env(database_url, slack, BOT_STALE_AFTER="0.5", BOT_RECOVERY_INTERVAL="0.5")
    bot = await start_serve(free_port(), env, tmp_path / "bot.log")
    try:
        await until(lambda: lines(effects, "finished delete-record 5"), 30, what="the recovered tool's end")

        async def completed() -> bool:
            return (await storage.runs.get_run(started["run_id"])).status == "completed"

        await until(completed, 10, what="the recovered run's completion")
    finally:
        await stop_bot(bot)

    assert (await storage.runs.get_run(started["run_id"])).status == "completed"
    assert len(lines(effects, "started delete-record 5")) == 1


async def test_sigterm_lets_a_running_tool_finish_before_the_bot_exits(model, database_url, slack, effects, tmp_path):
    model.chat.push(tool_calls(call("list-records", {"id": "all"}, id="call_list")), reply("Listed."))
    port = free_port()
    env = bot_env(database_url, slack, LIST_SECONDS="2", BOT_SHUTDOWN_GRACE="20")
    bot = await start_serve(port, env, tmp_path / "bot.log")
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET)
    assert (await sender.event(sender.mention("list the records")))[0] == 200
    await until(lambda: lines(effects, "started list-records"), 30, what="the tool's start")

    await stop_bot(bot)  # SIGTERM while the tool runs; exit code 0

    assert len(lines(effects, "finished list-records")) == 1


async def test_a_stop_that_takes_long_says_what_it_waits_for(model, database_url, slack, effects, tmp_path):
    model.chat.push(tool_calls(call("list-records", {"id": "all"}, id="call_list")), reply("Listed."))
    port, gate, log = free_port(), tmp_path / "gate", tmp_path / "bot.log"
    env = bot_env(database_url, slack, PAUSE_BEFORE_TOOL=str(gate), BOT_SHUTDOWN_GRACE="20")
    bot = await start_serve(port, env, log)
    sender = SignedSender(f"http://127.0.0.1:{port}/slack/events", SECRET)
    assert (await sender.event(sender.mention("list the records")))[0] == 200
    await until(lambda: gate.with_suffix(".reached").exists(), 30, what="the run to wait before its tool")

    stopping = asyncio.ensure_future(stop_bot(bot))  # the run waits at the gate: the stop goes on past 5 s
    try:
        await until(lambda: "still stopping after 5s" in log.read_text(), 30, what="the report of a slow stop")
    finally:
        gate.touch()
        await stopping

    assert len(lines(effects, "finished list-records")) == 1  # the run went on, within the grace
    report = log.read_text().split("still stopping after 5s; at work:", 1)[1].split("\n20", 1)[0]  # to the next line
    assert "-> stop -> wait_for_running_runs" in report, report  # the shutdown, waiting for the run at work
    assert "before_tool_call -> sleep" in report, report  # the run, in the hook that waits for the gate
