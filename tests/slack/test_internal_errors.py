"""A run that fails inside the bot tells the thread that it failed, never the internals (a database's
error text, a connection string): those go to the log, for operators."""

from __future__ import annotations

import logging

from bot.demo import build_demo_agent
from tests.support.scripted_model import call, tool_calls

from .harness import MODEL, running_bot

SECRET = "connection to postgresql://admin:hunter2@db.internal failed: 数据库错误"


def failing_agent(storage):
    def before_tool_call(check):
        raise RuntimeError(SECRET)

    agent = build_demo_agent(storage, model=MODEL)
    agent.hooks["before_tool_call"] = before_tool_call
    return agent


async def test_an_internal_failure_is_told_without_its_internals(database_url, slack, model, caplog):
    model.chat.push(tool_calls(call("list-records", {})))
    async with running_bot(database_url=database_url, slack=slack, agent_factory=failing_agent) as bot:
        with caplog.at_level(logging.ERROR):
            await bot.mention("list the records, s'il vous plaît")
            said = await slack.wait_until(
                lambda: [m for m in slack.messages.values() if "internal error" in m.text], what="the failure"
            )

    shown = " ".join(m.text for m in slack.messages.values())
    assert "hunter2" not in shown and "postgresql://" not in shown and "RuntimeError" not in shown
    assert "in its log" in said[0].text
    assert SECRET in caplog.text  # the operator still learns what happened
