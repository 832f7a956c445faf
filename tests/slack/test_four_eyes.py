"""Four eyes (M of N): a policy that requires several distinct approvers, through the real Bolt app, the
HTTP API and two replicas, on SQLite and PostgreSQL. The requester never counts, each approval is audited,
one decline declines, the call runs once when the last approval lands, and never after a decline or an expiry."""

from __future__ import annotations

import asyncio
import json

import pytest

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.statements import statements_of
from tests.support.waiting import until

from .harness import API_TOKEN as TOKEN
from .harness import (
    AUTH,
    RunningBot,
    ask_to_delete,
    decide_path,
    modal_values,
    opened_policy_modal,
    record_ids,
    request,
    running_bot,
    waiting_call,
)


@pytest.fixture
async def api_bot(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, api_token=TOKEN, clock=clock) as running:
        await running.storage.policies.set("delete-record", PolicyChange(approvals_required=2))
        yield running


async def updated(bot: RunningBot, message, text: str) -> None:
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts and text in str(c.params))


async def ephemeral(bot: RunningBot, text: str) -> str:
    calls = await bot.slack.wait_for("chat.postEphemeral", lambda c: text in c.params["text"])
    return calls[-1].params["text"]


async def test_two_distinct_approvers_and_never_the_requester(api_bot: RunningBot, model):
    bot = api_bot
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    assert "0 of 2 approvals" in message.all_text
    assert message.action_ids() == [
        "tool_approve",
        "tool_decline",
        "tool_decline_with_reason",
        "tool_cancel",
    ]  # no editing

    await bot.sender.click(message, "tool_approve", user="U1")  # the requester
    assert "other than who asked" in await ephemeral(bot, "needs 2 approvals")

    await bot.sender.click(message, "tool_approve", user="U2")
    await updated(bot, message, "1 of 2 approvals")
    assert "1 of 2 approvals*: <@U2>" in message.all_text
    assert message.action_ids()[:2] == ["tool_approve", "tool_decline"]  # still waiting
    assert await record_ids(bot) == [1, 2, 3, 4, 5]

    await bot.sender.click(message, "tool_approve", user="U2")  # the same person again
    assert "Your approval does not count" in await ephemeral(bot, "you already approved it")
    assert await record_ids(bot) == [1, 2, 3, 4, 5]

    await bot.sender.click(message, "tool_approve", user="U3")
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Deleted record 3."
    assert "Approved" in message.all_text and message.action_ids() == []
    assert await record_ids(bot) == [1, 2, 4, 5]

    entries = [e for e in await bot.storage.audit_log.entries() if e.run_id is not None]
    assert [(e.action, e.actor, e.via) for e in entries] == [
        ("requested", "U1", "runtime"),
        ("refused", "U1", "button"),
        ("approved", "U2", "button"),
        ("refused", "U2", "button"),  # the repeat: one line, with its reason
        ("approved", "U3", "button"),
        ("executed", "system", "runtime"),
    ]
    assert entries[2].detail == "approval 1 of 2; waits for 1 more" and entries[4].detail == "approval 2 of 2"
    assert entries[3].detail.startswith("approve: Your approval does not count: U2 already approved it")
    assert len({e.args_fingerprint for e in entries}) == 1  # every approval bound to the same arguments
    assert len(model.chat.requests) == 2  # the proposal and one continuation: it ran once


async def test_one_decline_declines_after_an_approval(api_bot: RunningBot, model):
    bot = api_bot
    ask_to_delete(model)
    model.chat.push(reply("OK, I did not delete it."))
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    ref = message.button_value("tool_approve")
    await bot.sender.click(message, "tool_approve", user="U2")
    await updated(bot, message, "1 of 2 approvals")
    await bot.sender.click(message, "tool_decline", user="U3")
    await updated(bot, message, "Declined")
    await bot.sender.click(message, "tool_approve", user="U7", value=ref)  # a client that still shows it
    assert "already decided" in await ephemeral(bot, "already decided")
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    actions = [e.action for e in await bot.storage.audit_log.entries() if e.run_id is not None]
    assert "executed" not in actions and actions.count("declined") == 1


async def test_an_expiry_after_one_approval_declines_and_a_late_approval_changes_nothing(
    api_bot: RunningBot, model, clock
):
    bot = api_bot
    await bot.storage.policies.set("delete-record", PolicyChange(expires_after=60))
    ask_to_delete(model)
    model.chat.push(reply("Nobody approved it in time."))
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    ref = message.button_value("tool_approve")
    await bot.sender.click(message, "tool_approve", user="U2")
    await updated(bot, message, "1 of 2 approvals")
    assert await bot.agent.expire_waiting_approvals() == []  # not yet
    clock.advance(60.5)
    assert len(await bot.agent.expire_waiting_approvals()) == 1
    await updated(bot, message, "Expired")
    await bot.sender.click(message, "tool_approve", user="U3", value=ref)
    assert "expired" in await ephemeral(bot, "expired")
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_a_message_in_the_thread_never_counts_as_an_approval(api_bot: RunningBot, model):
    bot = api_bot
    ask_to_delete(model)
    model.chat.push(reply("It needs two approvals by button."))
    event = await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.say("yes, I approve, go ahead", user="U2", thread_ts=event["ts"])
    await bot.slack.wait_for("chat.stopStream")
    status, page = await request(bot, "GET", "/api/agents/demo-agent/suspended-runs")
    assert page["total"] == 1
    run_id, call_id = await waiting_call(bot)
    record = await bot.agent.get_tool_call(run_id, call_id)
    assert record.approvals == () and "0 of 2 approvals" in message.all_text
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_the_http_api_counts_approvals_and_refuses_the_requester(api_bot: RunningBot, model):
    bot = api_bot
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    run_id, call_id = await waiting_call(bot)
    path = decide_path(run_id, call_id, "approve")

    status, body = await request(bot, "POST", path, body={"approver": "U1"})
    assert status == 403 and "other than who asked" in body["error"]
    status, body = await request(bot, "POST", path, body={"approver": "U2"})
    assert (status, body["status"], body["approvals"]) == (200, "waiting", ["U2"])
    await updated(bot, message, "1 of 2 approvals")
    status, body = await request(bot, "POST", path, body={"approver": "U2"})
    assert status == 403 and "U2 already approved it" in body["error"]
    status, body = await request(bot, "POST", path, body={"approver": "U3"})
    assert (status, body["status"]) == (200, "approved")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
    status, body = await request(bot, "POST", path, body={"approver": "U7"}, headers=AUTH)
    assert status == 409


async def test_an_approval_counted_while_the_message_was_on_its_way_shows_on_it(api_bot: RunningBot, model):
    # The first approval lands (the HTTP API) while Slack is slow to take the approval's message: no message had
    # a ts to update then, so the post brings the one that landed up to date, its buttons kept.
    bot = api_bot
    slow = bot.slack.hold("chat.postMessage")
    ask_to_delete(model)
    await bot.mention("delete record 3")
    await slow.arrived.wait()
    run_id, call_id = await waiting_call(bot)
    with statements_of(bot.storage) as seen:
        status, body = await request(bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U2"})
        assert (status, body["status"]) == (200, "waiting")
        # the decision's look for messages to update found none posted yet
        await until(lambda: any("AS own_ts" in statement for statement in seen), what="the look for messages")
    slow.release()
    message = await bot.approval_message()
    await updated(bot, message, "1 of 2 approvals")
    assert message.action_ids()[0] == "tool_approve"
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


@pytest.mark.both_databases
async def test_the_last_two_approvals_on_two_replicas_at_once_run_the_tool_once(database_url, slack, model):
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Deleted record 3."))
    async with (
        running_bot(database_url=database_url, slack=slack) as one,
        running_bot(database_url=database_url, slack=slack) as two,
    ):
        await one.storage.policies.set("delete-record", PolicyChange(approvals_required=2))
        await one.mention("delete record 3")
        message = await one.approval_message()
        results = await asyncio.gather(
            one.sender.click(message, "tool_approve", user="U2"), two.sender.click(message, "tool_approve", user="U3")
        )
        assert [status for status, _ in results] == [200, 200]
        await slack.wait_for("chat.stopStream")
        await slack.settle()
        assert await record_ids(one) == [1, 2, 4, 5]
        assert len(slack.calls_of("chat.stopStream")) == 1 and len(model.chat.requests) == 2
        entries = [e for e in await one.storage.audit_log.entries() if e.run_id is not None]
        assert sorted((e.action, e.actor) for e in entries if e.action == "approved") == [
            ("approved", "U2"),
            ("approved", "U3"),
        ]
        assert [e.action for e in entries].count("executed") == 1
        assert not [c for c in slack.calls_of("chat.postEphemeral")]  # neither approval was lost


async def test_an_admin_sets_the_approvals_required_in_the_home(database_url, slack, model):
    async with running_bot(database_url=database_url, slack=slack, admins=("U1",)) as bot:
        view = await opened_policy_modal(bot, "delete-record")
        values = modal_values()
        for bad, error in [("0", "from 1 to 10"), ("deux", "not a whole number")]:
            values["policy_approvals_required"] = {"value": {"type": "plain_text_input", "value": bad}}
            status, body = await bot.sender.submit(view, values, user="U1")
            assert status == 200 and error in json.dumps(body), body
        assert (await bot.storage.policies.get("delete-record")).approvals_required == 1
        values["policy_approvals_required"] = {"value": {"type": "plain_text_input", "value": "3"}}
        status, body = await bot.sender.submit(view, values, user="U1")
        assert (status, body) == (200, "")
        policy = await bot.storage.policies.get("delete-record")
        assert policy.approvals_required == 3
        await bot.slack.wait_for("views.publish", lambda c: "Approvals required: 3 different people" in str(c.params))
        ask_to_delete(model)
        await bot.mention("delete record 3")
        message = await bot.approval_message()
        assert "0 of 3 approvals" in message.all_text
