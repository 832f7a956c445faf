"""Undo (issue 44): once an approved call ran, its message offers Undo for its tool policy's window (5
minutes by default) if its tool declares how; whoever approved it, or an admin, undoes it once, on any
replica, never after the window; audited `undone`, shown in the thread, and told to the model. Through
the real Bolt app, the Slack emulation and the scripted model."""

from __future__ import annotations

import asyncio
import json

import pytest

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot, modal_values, opened_policy_modal, record_ids, request, running_bot

pytestmark = pytest.mark.both_databases


def ask_to_delete(model) -> None:
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Deleted record 3."))


async def lines(bot: RunningBot, action: str) -> list[tuple[str | None, str | None]]:
    return [(e.actor, e.via) for e in await bot.storage.audit_log.entries() if e.action == action]


async def approved_and_ran(bot: RunningBot, model, approver: str = "U2"):
    ask_to_delete(model)
    event = await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve", user=approver)
    await bot.slack.wait_for("chat.stopStream")
    return event, message


async def offered(bot: RunningBot, message) -> None:
    await bot.slack.wait_for("chat.update", lambda c: "tool_undo" in str(c.params.get("blocks")))
    assert "tool_undo" in message.action_ids()


async def test_the_approver_undoes_a_deletion_once_and_the_model_is_told(bot: RunningBot, model):
    event, message = await approved_and_ran(bot, model)
    await offered(bot, message)
    assert await record_ids(bot) == [1, 2, 4, 5]

    told = await refused_undo(bot, message, "U3")  # neither the approver nor an admin
    assert told == "Only <@U2>, who approved it, or an admin may undo this `delete-record` call."
    assert await record_ids(bot) == [1, 2, 4, 5]

    await bot.sender.click(message, "tool_undo", user="U2")
    await bot.slack.wait_for("chat.postMessage", lambda c: "Undone by <@U2>" in str(c.params.get("text")))
    assert await record_ids(bot) == [1, 2, 3, 4, 5]  # the record is back
    assert "Undone by <@U2>" in message.all_text and "tool_undo" not in message.action_ids()

    await bot.sender.click(message, "tool_undo", user="U2", value=message_ref(bot))  # a stale client: once only
    said = await bot.slack.wait_for("chat.postEphemeral", lambda c: "already undone" in c.params["text"])
    assert said[-1].params["user"] == "U2"
    assert await lines(bot, "undone") == [("U2", "button")]
    assert await lines(bot, "refused") == [("U3", "button")]

    model.chat.push(reply("Record 3 is back."))
    await bot.say("is record 3 still gone?", thread_ts=event["ts"], user="U1")
    await bot.slack.wait_for("chat.stopStream", count=2)
    history = str(model.chat.requests[-1]["messages"])
    assert "U2 undid the earlier call of the tool delete-record" in history


def message_ref(bot: RunningBot) -> str:
    approvals = [c for c in bot.slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params.get("blocks"))]
    blocks = str(approvals[0].params["blocks"])
    return blocks.split("'value': '")[1].split("'")[0]


async def refused_undo(bot: RunningBot, message, user: str) -> str:
    before = len(bot.slack.calls_of("chat.postEphemeral"))
    await bot.sender.click(message, "tool_undo", user=user)
    said = await bot.slack.wait_for("chat.postEphemeral", count=before + 1)
    assert said[-1].params["user"] == user
    return said[-1].params["text"]


async def test_no_undo_after_the_window(bot: RunningBot, model, clock):
    _, message = await approved_and_ran(bot, model)
    await offered(bot, message)
    clock.advance(301)  # the default window is 300 s
    assert "Too late to undo" in await refused_undo(bot, message, "U2")
    assert await record_ids(bot) == [1, 2, 4, 5]
    assert await lines(bot, "undone") == [] and await lines(bot, "undo_failed") == []


async def test_no_undo_for_a_tool_without_one_or_a_policy_that_allows_none(bot: RunningBot, model):
    await bot.storage.policies.set("list-records", PolicyChange(mode="require_approval"))
    model.chat.push(tool_calls(call("list-records", {}, id="call_1")), reply("Five records."))
    await bot.mention("list the records", user="U1")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert "tool_undo" not in message.action_ids()  # list-records declares no undo

    await bot.storage.policies.set("delete-record", PolicyChange(undo_seconds=0))
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_2")), reply("Deleted."))
    await bot.mention("delete record 3", user="U1")
    second = await bot.approval_message(count=2)
    await bot.sender.click(second, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream", count=2)
    await bot.slack.settle()
    assert "tool_undo" not in second.action_ids()  # its policy allows none


async def test_two_replicas_undo_it_exactly_once(database_url, slack, model):
    async with (
        running_bot(database_url=database_url, slack=slack) as one,
        running_bot(database_url=database_url, slack=slack) as two,
    ):
        _, message = await approved_and_ran(one, model)
        await offered(one, message)
        await asyncio.gather(
            one.sender.click(message, "tool_undo", user="U2"), two.sender.click(message, "tool_undo", user="U2")
        )
        await slack.wait_for("chat.postEphemeral", lambda c: "already undone" in c.params["text"])
        await slack.settle()
        assert await record_ids(one) == [1, 2, 3, 4, 5]
        assert await lines(one, "undone") == [("U2", "button")] and await lines(one, "undo_failed") == []


async def test_the_undo_window_is_set_from_the_home_form_and_the_http_api(admin_bot: RunningBot):
    bot = admin_bot  # U1 is an admin
    modal = await opened_policy_modal(bot, "delete-record")
    shown = [b for b in modal["blocks"] if b.get("block_id") == "policy_undo_seconds"]
    assert shown and shown[0]["element"]["initial_value"] == "300"  # the default

    def undo(value: str) -> dict:
        return {**modal_values(), "policy_undo_seconds": {"value": {"type": "plain_text_input", "value": value}}}

    status, body = await bot.sender.submit(modal, undo("five minutes"), user="U1")
    assert status == 200 and "policy_undo_seconds" in json.loads(body)["errors"]
    status, _ = await bot.sender.submit(modal, undo("0"), user="U1")
    assert status == 200
    assert (await bot.storage.policies.get("delete-record")).undo_seconds == 0

    status, answer = await request(bot, "PATCH", "/api/policies/delete-record", body={"undoSeconds": 120})
    assert status == 200 and answer["undoSeconds"] == 120, answer
    assert (await bot.storage.policies.get("delete-record")).undo_seconds == 120
    status, answer = await request(bot, "PATCH", "/api/policies/delete-record", body={"undoSeconds": -1})
    assert status == 400
