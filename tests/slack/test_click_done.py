"""A click whose listener returned is marked done, so the sweep of clicks left undone (`clicks.py`) never
carries it out again nor tells its clicker it could not be carried out."""

from __future__ import annotations

import pytest
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
