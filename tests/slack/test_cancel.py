"""Cancel (issue 44): whoever may decide a waiting call, or an admin, withdraws it from its message, its
App Home card, the HTTP API, or with a clear "never mind" in the thread in the bot's languages. The call
never runs, the run goes on with the model told it was cancelled (not declined), and the audit says
`cancelled`. Through the real Bolt app, the Slack emulation and the scripted model."""

from __future__ import annotations

import pytest

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import (
    RunningBot,
    decide_path,
    home_click,
    home_of,
    open_home,
    record_ids,
    refused_click,
    request,
    waiting_call,
)

pytestmark = pytest.mark.both_databases


def ask_to_delete(model) -> None:
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Not deleting it, then."))


async def lines(bot: RunningBot) -> list[tuple[str, str | None, str | None]]:
    return [(e.action, e.actor, e.via) for e in await bot.storage.audit_log.entries() if e.run_id is not None]


def told(model) -> str:
    """What the model read last as the result of the call."""
    return [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]["content"]


async def cancelled_message(bot: RunningBot) -> str:
    updates = await bot.slack.wait_for("chat.update", lambda c: "Cancelled" in str(c.params.get("blocks")))
    return str(updates[-1].params["blocks"])


async def test_the_requester_cancels_an_approval_from_its_message(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    assert "tool_cancel" in message.action_ids()

    await bot.sender.click(message, "tool_cancel", user="U1")
    shown = await cancelled_message(bot)
    assert "Cancelled by <@U1>" in shown and "so it was not run" in shown and "Declined" not in shown
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 3, 4, 5]  # it never ran
    assert "cancelled this tool call" in told(model) and "not declined" in told(model)
    assert await lines(bot) == [("requested", "U1", "runtime"), ("cancelled", "U1", "button")]
    assert (await bot.agent.list_suspended_runs()).total == 0


async def test_someone_the_rule_refuses_cannot_cancel_but_an_admin_can(home_bot: RunningBot, model):
    bot = home_bot  # U1 is an admin
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U3")
    message = await bot.approval_message()

    text = await refused_click(bot, message, "U4", "tool_cancel")  # neither an approver nor the requester
    assert "Only <@U2> may decide" in text

    await bot.sender.click(message, "tool_cancel", user="U1")  # the admin
    assert "Cancelled by <@U1>" in await cancelled_message(bot)
    await bot.slack.wait_for("chat.stopStream")
    assert [line for line in await lines(bot) if line[0] != "requested"] == [
        ("refused", "U4", "button"),
        ("cancelled", "U1", "button"),
    ]
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_the_requester_cancels_from_the_home_card(bot: RunningBot, model):
    await open_home(bot, "U1")
    await home_of(bot, "U1")
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    view = await home_of(bot, "U1", count=2)
    buttons = [
        e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"] if e["action_id"] == "tool_cancel"
    ]
    assert len(buttons) == 1

    await home_click(bot, "U1", "tool_cancel", buttons[0]["value"])
    assert "Cancelled by <@U1>" in await cancelled_message(bot)
    await bot.slack.wait_for("chat.stopStream")
    assert ("cancelled", "U1", "home") in await lines(bot)
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    assert message.action_ids() == []  # the thread's message no longer offers anything


async def test_the_http_api_cancels_and_refuses_whom_the_rule_refuses(api_bot: RunningBot, model):
    bot = api_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    await bot.approval_message()
    run_id, call_id = await waiting_call(bot)

    status, body = await request(bot, "POST", decide_path(run_id, call_id, "cancel"), body={})
    assert status == 400 and "actor is required" in body["error"]
    status, body = await request(bot, "POST", decide_path(run_id, call_id, "cancel"), body={"actor": "U3"})
    assert status == 403
    status, body = await request(
        bot, "POST", decide_path(run_id, call_id, "cancel"), body={"actor": "U2", "reason": "wrong record"}
    )
    assert status == 200 and body["status"] == "cancelled"
    shown = await cancelled_message(bot)
    assert "Cancelled by <@U2>" in shown and "wrong record" in shown
    await bot.slack.wait_for("chat.stopStream")
    assert "cancelled this tool call" in told(model) and "wrong record" in told(model)
    status, body = await request(bot, "POST", decide_path(run_id, call_id, "cancel"), body={"actor": "U2"})
    assert status == 409  # once


@pytest.mark.parametrize("words", ["never mind", "算了", "취소해", "やっぱりいい"])
async def test_never_mind_in_the_thread_cancels_the_waiting_approval(bot: RunningBot, model, words):
    ask_to_delete(model)
    event = await bot.mention("delete record 3", user="U1")
    await bot.approval_message()

    await bot.say(words, thread_ts=event["ts"], user="U1")
    assert "Cancelled by <@U1>" in await cancelled_message(bot)
    await bot.slack.wait_for("chat.stopStream")
    assert "cancelled this tool call" in told(model)
    assert ("cancelled", "U1", "thread") in await lines(bot)
    assert model.structured.requests == []  # a withdrawal, not an answer read by the model
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_a_bystanders_never_mind_is_a_turn_of_its_own(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    ask_to_delete(model)
    event = await bot.mention("delete record 3", user="U1")
    await bot.approval_message()
    model.chat.push(reply("It waits for <@U2>."))
    await bot.say("never mind", thread_ts=event["ts"], user="U3")
    await bot.slack.wait_for("chat.stopStream")
    assert (await bot.agent.list_suspended_runs()).total == 1  # still waits
    assert [line[0] for line in await lines(bot)] == ["requested"]  # and no refused line for a chat message


async def test_a_question_is_cancelled_from_its_button_and_in_the_thread(bot: RunningBot, model):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")), reply("OK, no forecast."))
    await bot.mention("what's the weather?", user="U1")
    question = await bot.question_message()
    assert "tool_question_cancel" in question.action_ids()
    await bot.sender.click(question, "tool_question_cancel", user="U1")
    await bot.slack.wait_for("chat.update", lambda c: "Cancelled by <@U1>" in str(c.params.get("blocks")))
    await bot.slack.wait_for("chat.stopStream")
    assert "cancelled the question" in told(model)
    assert ("cancelled", "U1", "button") in await lines(bot)

    model.chat.push(tool_calls(call("get-weather", {}, id="call_2")), reply("Fine."))
    event = await bot.mention("weather again?", user="U1")
    await bot.slack.wait_for("chat.postMessage", lambda c: "tool_answer" in str(c.params.get("blocks")), count=2)
    await bot.say("算了", thread_ts=event["ts"], user="U1")
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert [line for line in await lines(bot) if line[0] == "cancelled"][-1] == ("cancelled", "U1", "thread")
    assert model.structured.requests == []


async def test_an_expiry_is_told_as_an_expiry_not_a_decline_nor_a_cancel(bot: RunningBot, model, clock):
    await bot.storage.policies.set("delete-record", PolicyChange(expires_after=60))
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    clock.advance(61)
    assert len(await bot.agent.expire_waiting_approvals()) == 1
    await bot.slack.wait_until(lambda: message.action_ids() == [], what="the message closed")
    await bot.slack.wait_for("chat.stopStream")
    assert "Expired" in message.all_text and "Declined" not in message.all_text and "Cancelled" not in message.all_text
    assert "expired" in told(model) and "declined" not in told(model) and "cancelled" not in told(model)
    assert [line[0] for line in await lines(bot)] == ["requested", "expired"]
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_a_question_nobody_answers_expires_with_its_tools_policy(bot: RunningBot, model, clock):
    """A tool's own question waits at most its tool policy's expiry, then expires as an approval does: the
    message says so and keeps no buttons, the model reads that nobody answered, the audit says `expired`."""
    await bot.storage.policies.set("get-weather", PolicyChange(expires_after=60))
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")), reply("No city, no forecast."))
    await bot.mention("天気は？", user="UJA")
    question = await bot.question_message()
    clock.advance(59)
    assert await bot.agent.expire_waiting_approvals() == []  # not yet
    clock.advance(2)
    assert len(await bot.agent.expire_waiting_approvals()) == 1
    await bot.slack.wait_until(lambda: question.action_ids() == [], what="the question closed")
    await bot.slack.wait_for("chat.stopStream")
    assert "期限切れ" in question.all_text, question.all_text  # in the thread's language (UJA's)
    assert "Nobody answered this tool's question in time" in told(model) and "declined" not in told(model)
    assert [line[:2] for line in await lines(bot)] == [("expired", "system")]
    assert (await bot.agent.list_suspended_runs()).total == 0
    await bot.say("大阪", thread_ts=question.thread_ts, user="UJA")  # too late: a turn of its own
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert model.structured.requests == []
