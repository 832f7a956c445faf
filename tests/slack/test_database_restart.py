"""A PostgreSQL restart under a running bot is not a failure: the run goes on once the database is back,
and the thread shows one answer and no error notice (issue 41).

Each test has a PostgreSQL server of its own (`postgres_cluster`, `tests/support/pg_cluster.py`), so that
restarting it (`pg_ctl restart -m fast`: connections told and closed; `-m immediate`: a crash and its
recovery) disturbs no other test. The restart is made while the scripted model answers, so that the
run's next write (the step, or the run's last write with its answer) meets the connections the restart
closed, or a server still starting.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from memory import Storage
from tests.support.databases import migrate_every_package
from tests.support.scripted_model import call, reply, structured, tool_calls
from tests.support.waiting import until

from .harness import record_ids, running_bot

FALSE_NOTICES = ("internal error", "Sorry, that failed", ":warning:", "stalled")


def restarting(cluster, answer, *, mode: str = "fast", down_for: float = 0.0):
    """A scripted model answer that restarts the database first (`down_for`: the server stays down that long
    after the answer is sent, so the run's next write finds it refusing, then starting)."""

    def respond(_body):
        if down_for:
            cluster.stop(mode)
            threading.Thread(target=lambda: (time.sleep(down_for), cluster.start()), daemon=True).start()
        else:
            cluster.restart(mode)
        return answer

    return respond


def assert_one_answer(slack, answer: str) -> None:
    shown = [m.all_text for m in slack.messages.values()]
    assert sum(text.count(answer) for text in shown) == 1, shown
    false = [text for text in shown if any(notice in text for notice in FALSE_NOTICES)]
    assert not false, false


async def run_statuses(url: str) -> list[str]:
    import sqlalchemy as sa

    storage = Storage(url)
    try:
        async with storage.read() as connection:
            return list(await connection.scalars(sa.text("SELECT status FROM runs")))
    finally:
        await storage.close()


@pytest.fixture
async def cluster_url(postgres_cluster) -> str:
    await migrate_every_package(postgres_cluster.url)
    return postgres_cluster.url


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_a_restart_as_the_run_ends_shows_one_answer_and_no_error(
    postgres_cluster, cluster_url, slack, model, mode
):
    answer = "再起動のあとでも答えは一つだけ。"
    model.chat.push(restarting(postgres_cluster, reply(answer), mode=mode))
    async with running_bot(database_url=cluster_url, slack=slack) as bot:
        await bot.mention("こんにちは、元気ですか")
        await slack.wait_for("chat.stopStream")
        await slack.settle()
        assert_one_answer(slack, answer)
    assert await run_statuses(cluster_url) == ["completed"]


async def test_a_database_down_for_seconds_as_the_run_ends_is_waited_for(postgres_cluster, cluster_url, slack, model):
    answer = "قاعدة البيانات عادت، والجواب واحد."
    model.chat.push(restarting(postgres_cluster, reply(answer), mode="immediate", down_for=2.0))
    async with running_bot(database_url=cluster_url, slack=slack) as bot:
        await bot.mention("مرحبا")
        await slack.wait_for("chat.stopStream", timeout=30)
        await slack.settle()
        assert_one_answer(slack, answer)
    assert await run_statuses(cluster_url) == ["completed"]


async def test_a_restart_between_steps_lets_the_run_carry_on(postgres_cluster, cluster_url, slack, model):
    answer = "레코드 목록을 확인했습니다."
    model.chat.push(
        restarting(postgres_cluster, tool_calls(call("list-records", {}, id="call_list"))),
        restarting(postgres_cluster, reply(answer), mode="immediate"),
    )
    async with running_bot(database_url=cluster_url, slack=slack) as bot:
        await bot.mention("レコードを見せて")
        await slack.wait_for("chat.stopStream", timeout=30)
        await slack.settle()
        assert_one_answer(slack, answer)
    assert len(model.chat.requests) == 2  # the step was stored once and the model asked once after it
    assert await run_statuses(cluster_url) == ["completed"]


async def test_an_approval_clicked_after_a_restart_runs_once(postgres_cluster, cluster_url, slack, model):
    answer = "已删除记录 3。"
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply(answer))
    async with running_bot(database_url=cluster_url, slack=slack) as bot:
        await bot.mention("删除记录 3")
        message = await bot.approval_message()
        await slack.settle()
        postgres_cluster.restart("fast")  # every connection the bot holds is now closed
        status, _ = await bot.sender.click(message, "tool_approve", user="U2")
        assert status == 200
        await slack.wait_for("chat.stopStream")
        await slack.settle()
        assert_one_answer(slack, answer)
        assert await record_ids(bot) == [1, 2, 4, 5]
    assert await run_statuses(cluster_url) == ["completed"]


class _StartWhenTheTurnFails(logging.Handler):
    """Starts the stopped cluster as soon as the bot logs `said` (by default: that a turn met the database away,
    so the database is back before the turn's end is stored, the moment a turn cut off used to be marked
    answered)."""

    def __init__(self, cluster, said: str = "the database went away during a turn"):
        super().__init__(logging.WARNING)
        self.cluster, self.said, self.fired = cluster, said, False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.fired and self.said in record.getMessage():
            self.fired = True
            self.cluster.start()


async def test_a_turn_the_database_cut_off_before_it_reached_the_agent_is_answered_once_it_is_back(
    postgres_cluster, cluster_url, slack, model
):
    """The database goes away while the model reads a reply against a waiting question, for longer than the
    storage waits for it: nothing of the turn is stored. The turn says nothing false, is not marked answered,
    and is taken again once the database is back: the question resumes once, the thread gets one answer."""
    model.chat.push(tool_calls(call("get-weather", {}, id="call_weather")), reply("Oslo: 晴れ, sunny."))

    def reading_while_the_database_goes(_body):
        postgres_cluster.stop("fast")
        return structured({"city": "Oslo"})

    model.structured.push(reading_while_the_database_goes, structured({"city": "Oslo"}))
    starter = _StartWhenTheTurnFails(postgres_cluster)
    logging.getLogger("bot.slack").addHandler(starter)
    try:
        async with running_bot(database_url=cluster_url, slack=slack) as bot:
            event = await bot.mention("天気は? what's the weather?")
            question = await bot.question_message()
            bot.storage.reconnect_for = 1.0  # the database stays away longer than this
            await bot.say("Oslo", thread_ts=event["ts"])
            await until(lambda: any("sunny" in m.all_text for m in slack.messages.values()), 60, what="the answer")
            await slack.settle()
            assert starter.fired
            assert_one_answer(slack, "Oslo: 晴れ, sunny.")
            assert question.action_ids() == []
    finally:
        logging.getLogger("bot.slack").removeHandler(starter)
    assert await run_statuses(cluster_url) == ["completed"]


async def test_a_database_gone_while_a_decision_is_shown_still_relays_the_runs_answer(
    postgres_cluster, cluster_url, slack, model
):
    """The database goes away after an Approve click's run has ended, while the click's decision is being shown
    in its message, for longer than the storage waits: the message is fixed later, but the answer the run
    gave is still relayed into the thread (it used to be lost with the click's failed listener)."""
    answer = "已删除记录 3 — record 3 deleted."
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply(answer))
    starter = _StartWhenTheTurnFails(postgres_cluster, said="could not update the message")
    logging.getLogger("bot.slack").addHandler(starter)
    try:
        async with running_bot(database_url=cluster_url, slack=slack) as bot:
            await bot.mention("删除记录 3")
            message = await bot.approval_message()
            await slack.settle()
            update = slack.hold("chat.update")  # the decision's update of its message waits
            clicking = asyncio.ensure_future(bot.sender.click(message, "tool_approve", user="U2"))
            await asyncio.wait_for(update.arrived.wait(), 30)
            await until(lambda: run_completed(bot), 30, what="the run's end")
            bot.storage.reconnect_for = 0.5
            await asyncio.to_thread(postgres_cluster.stop, "fast")
            update.release()
            assert (await clicking)[0] == 200
            await until(lambda: any(answer in m.all_text for m in slack.messages.values()), 60, what="the answer")
            await slack.settle()
            assert starter.fired
            assert_one_answer(slack, answer)
    finally:
        logging.getLogger("bot.slack").removeHandler(starter)


async def run_completed(bot) -> bool:
    import sqlalchemy as sa

    async with bot.storage.read() as connection:
        return list(await connection.scalars(sa.text("SELECT status FROM runs"))) == ["completed"]
