"""A click whose listener returned is marked done, so the sweep of clicks left undone (`clicks.py`) never
carries it out again nor tells its clicker it could not be carried out."""

from __future__ import annotations

import pytest
from sqlalchemy import event as sql_event
from sqlalchemy import select

from bot.slack.tables import SlackClickRow

from .harness import RunningBot, ask_to_delete, record_ids

pytestmark = pytest.mark.both_databases


async def test_an_approve_click_carried_out_is_marked_done(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 2, 4, 5]
    async with bot.storage.engine.connect() as connection:
        clicks = (await connection.execute(select(SlackClickRow.action_id, SlackClickRow.done_at))).all()
    assert [click.action_id for click in clicks] == ["tool_approve"]
    assert clicks[0].done_at is not None, "a click carried out is left for the sweep to carry out again"


async def test_a_click_that_settles_its_call_is_marked_done_with_its_messages_close(bot: RunningBot, model):
    """One write for both (issue 42): the click's work is done once its message shows the decision, and its
    listener's end writes nothing more."""
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    seen: list[tuple[int, str]] = []

    def record(connection, _cursor, statement, *_args):
        seen.append((id(connection.connection.dbapi_connection), " ".join(statement.split())))

    sql_event.listen(bot.storage.engine.sync_engine, "before_cursor_execute", record)
    try:
        await bot.sender.click(message, "tool_approve", user="U2")
        await bot.slack.wait_for("chat.stopStream")
        await bot.slack.settle()
    finally:
        sql_event.remove(bot.storage.engine.sync_engine, "before_cursor_execute", record)
    marks = [(n, on) for n, (on, statement) in enumerate(seen) if "UPDATE slack_clicks SET done_at" in statement]
    closes = [(n, on) for n, (on, sql) in enumerate(seen) if "UPDATE slack_tool_call_messages SET closed_at" in sql]
    assert len(marks) == 1 and len(closes) == 1, seen
    (mark, marked_on), (close, closed_on) = marks[0], closes[0]
    # in the close's statement (PostgreSQL: one statement of CTEs), or next on its connection (SQLite, in sequence)
    assert marked_on == closed_on, seen
    assert [sql for on, sql in seen[close + 1 : mark] if on == closed_on] == [], seen
    async with bot.storage.engine.connect() as connection:
        clicks = (await connection.execute(select(SlackClickRow.done_at))).all()
    assert clicks[0].done_at is not None
