"""`GET /metrics`: what an operator's Prometheus scrapes, before and after one approval cycle."""

from __future__ import annotations

import copy

from bot.agent import Agent
from tests.support.scripted_model import call, failure, reply, tool_calls
from tools import create_tool

from .harness import MODEL, RunningBot, running_bot, scrape, value


async def test_one_approval_cycle_moves_the_counters(bot: RunningBot, model):
    before = await scrape(bot)
    assert value(before, "bot_approvals_waiting") == 0

    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    await bot.mention("delete record 2")
    message = await bot.approval_message()
    waiting = await scrape(bot)
    assert value(waiting, "bot_approvals_waiting") == 1  # counted in the database at scrape time

    stale = copy.deepcopy(message)  # as a second user's screen still shows it
    bot.slack.fail("chat.update", status=500)  # one failed attempt, retried by the client
    assert (await bot.sender.click(message, "tool_approve", user="U2"))[0] == 200
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    # a second click on the same message decides nothing
    assert (await bot.sender.click(stale, "tool_approve", user="U3"))[0] == 200
    await bot.slack.wait_for("chat.postEphemeral")
    after = await scrape(bot)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert value(after, "bot_approvals_waiting") == 0
    assert moved("bot_decisions_total", outcome="approved") == 1
    assert moved("bot_decision_wait_seconds_count", kind="approval") == 1
    assert moved("bot_refused_clicks_total", reason="already_decided") == 1
    assert moved("bot_slack_api_errors_total", method="chat.update", error="fatal_error") == 1
    assert moved("bot_tool_runs_total", tool="delete-record", outcome="ok") == 1
    assert moved("bot_model_call_seconds_count", kind="step") == 2  # the call, then the answer


def agent_with_a_failing_tool(_storage) -> Agent:
    async def check_stock(_input, _ctx):
        raise ConnectionError("the warehouse does not answer")

    tool = create_tool(
        id="check-stock", description="Check the stock", input_schema={"type": "object"}, execute=check_stock
    )
    return Agent(id="stock-agent", instructions="You check stock.", model=MODEL, tools=[tool])


async def test_model_errors_and_failing_tools_are_counted(database_url, slack, model):
    async with running_bot(database_url=database_url, slack=slack, agent_factory=agent_with_a_failing_tool) as bot:
        before = await scrape(bot)
        model.chat.push(
            tool_calls(call("check-stock", {}, id="call_9")), failure(400)
        )  # the tool fails, then the model
        await bot.mention("is there stock?")
        await bot.slack.wait_for("chat.stopStream")
        await bot.slack.settle()
        after = await scrape(bot)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("bot_tool_runs_total", tool="check-stock", outcome="error") == 1
    assert moved("bot_model_call_errors_total", kind="step", error="BadRequestError") == 1


async def test_an_answer_in_the_thread_counts_as_answered(bot: RunningBot, model):
    """Auto-resume from the next message is a decision like a click on the form: it was not counted."""
    from tests.support.scripted_model import structured

    before = await scrape(bot)
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))
    event = await bot.mention("what's the weather?")
    question = await bot.question_message()
    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Sunny in Paris."))
    await bot.say("Paris", thread_ts=event["ts"])
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    await bot.slack.settle()
    after = await scrape(bot)
    assert (
        value(after, "bot_decisions_total", outcome="answered")
        - value(before, "bot_decisions_total", outcome="answered")
        == 1
    )
    assert (
        value(after, "bot_decision_wait_seconds_count", kind="question")
        - value(before, "bot_decision_wait_seconds_count", kind="question")
        == 1
    )
    assert value(after, "bot_questions_waiting") == 0
