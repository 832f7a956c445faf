"""A PostgreSQL restart under a running bot is not a failure: the run goes on once the database is back,
and the thread shows one answer and no error notice (issue 41).

Each test has a PostgreSQL server of its own (`postgres_cluster`, `tests/support/pg_cluster.py`), so that
restarting it (`pg_ctl restart -m fast`: connections told and closed; `-m immediate`: a crash and its
recovery) disturbs no other test. The restart is made while the scripted model answers, so that the
run's next write (the step, or the run's last write with its answer) meets the connections the restart
closed, or a server still starting.
"""

from __future__ import annotations

import threading
import time

import pytest

from memory import Storage
from tests.support.databases import migrate_every_package
from tests.support.scripted_model import call, reply, tool_calls

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
