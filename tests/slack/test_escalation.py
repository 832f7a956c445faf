"""Escalation before expiry, through the real Bolt app and the Slack emulation, on SQLite and PostgreSQL:
an approval still waiting after its policy's `escalate_after` is brought to `escalate_to` (a DM to each
member of a user group, or one post in a channel) with the same buttons, once (also with two replicas
sweeping at once, and when Slack fails a post); a decision on any copy decides the call once and every
copy shows it; a call decided before the delay is never escalated; the expiry still applies after it."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.slack_emulator.workspace import UserGroup
from memory import PolicyChange
from tests.support.scripted_model import reply
from tests.support.statements import statements_of

from .harness import (
    API_TOKEN,
    RunningBot,
    ask_to_delete,
    modal_values,
    opened_policy_modal,
    record_ids,
    request,
    running_bot,
    waiting_call,
)

GROUP = "S9"
MEMBERS = ("U2", "U3", "U7")


@pytest.fixture
async def escalating_bot(database_url, slack, model, clock):
    slack.workspace.usergroups[GROUP] = UserGroup(id=GROUP, handle="on-call", users=MEMBERS)
    async with running_bot(database_url=database_url, slack=slack, api_token=API_TOKEN, clock=clock) as running:
        await running.storage.policies.set(
            "delete-record", PolicyChange(escalate_to=GROUP, escalate_after=600, expires_after=3600)
        )
        yield running


def escalated_copies(bot: RunningBot) -> list:
    """The approval copies the escalation posted (in the members' DMs or a channel other than C1)."""
    return [
        bot.slack.posted_by(c)
        for c in bot.slack.calls_of("chat.postMessage")
        if c.response.get("ok") and "tool_approve" in str(c.params.get("blocks")) and c.response["channel"] != "C1"
    ]


def audit_of(entries, action: str) -> list:
    return [e for e in entries if e.action == action]


async def test_a_waiting_approval_is_escalated_once_to_each_member_and_one_click_decides_for_all(
    escalating_bot: RunningBot, model, clock
):
    bot = escalating_bot
    ask_to_delete(model)
    event = await bot.mention("delete record 3 ― 删除记录 ― レコード ― 기록 ― حذف")
    message = await bot.approval_message()
    ref = message.button_value("tool_approve")
    clock.advance(590)  # 10 s short: the clock also runs with real time, and the machine may be slow
    assert await bot.agent.escalate_waiting_approvals() == []  # not yet
    clock.advance(11)
    run_id, call_id = await waiting_call(bot)
    assert await bot.agent.escalate_waiting_approvals() == [(run_id, call_id)]
    assert await bot.agent.escalate_waiting_approvals() == []  # once

    copies = escalated_copies(bot)
    assert sorted(c.channel for c in copies) == [f"D{member}" for member in MEMBERS]
    for copy in copies:  # the same approval, the same binding
        assert copy.button_value("tool_approve") == ref
        assert copy.action_ids()[:2] == ["tool_approve", "tool_decline"]
        assert "Escalated" in copy.all_text and "10 minutes" in copy.all_text
    note = [m for m in bot.slack.thread("C1", event["ts"]) if "brought to" in m.text]
    assert [m.text for m in note] == [f":rotating_light: No decision after 10 minutes: brought to <!subteam^{GROUP}>."]

    status, page = await request(bot, "GET", "/api/agents/demo-agent/suspended-runs")
    assert status == 200 and page["runs"][0]["toolCalls"][0]["escalatedAt"] is not None
    escalated = audit_of(await bot.storage.audit_log.entries(), "escalated")
    assert [(e.actor, e.via, e.run_id) for e in escalated] == [("system", "escalation", run_id)]
    assert GROUP in escalated[0].detail and "U3" in escalated[0].detail

    dm_of_u3 = next(c for c in copies if c.channel == "DU3")
    status, _ = await bot.sender.click(dm_of_u3, "tool_approve", user="U3")
    assert status == 200
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.wait_until(lambda: all(m.action_ids() == [] for m in [message, *copies]), what="every copy closed")
    for shown in [message, *copies]:
        assert "Approved" in shown.all_text and "U3" in shown.all_text
    assert await record_ids(bot) == [1, 2, 4, 5]
    entries = await bot.storage.audit_log.entries()
    assert [(e.actor, e.via) for e in audit_of(entries, "approved")] == [("U3", "button")]
    assert len(audit_of(entries, "executed")) == 1 and len(model.chat.requests) == 2


async def test_a_call_decided_before_the_delay_is_never_escalated(escalating_bot: RunningBot, model, clock):
    bot = escalating_bot
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    clock.advance(700)
    assert await bot.agent.escalate_waiting_approvals() == []
    await bot.slack.settle()
    assert escalated_copies(bot) == []
    assert audit_of(await bot.storage.audit_log.entries(), "escalated") == []


async def test_the_expiry_after_an_escalation_still_declines_and_closes_every_copy(
    escalating_bot: RunningBot, model, clock
):
    bot = escalating_bot
    await bot.storage.policies.set("delete-record", PolicyChange(expires_after=900))
    ask_to_delete(model)
    model.chat.push(reply("Nobody approved it in time."))
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    clock.advance(601)
    assert len(await bot.agent.escalate_waiting_approvals()) == 1
    copies = escalated_copies(bot)
    assert len(copies) == 3
    clock.advance(300)
    assert len(await bot.agent.expire_waiting_approvals()) == 1
    await bot.slack.wait_until(lambda: all(m.action_ids() == [] for m in [message, *copies]), what="every copy closed")
    assert all("Expired" in m.all_text for m in [message, *copies])
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


@pytest.mark.both_databases
async def test_two_replicas_sweeping_at_once_escalate_once(database_url, slack, model, clock):
    slack.workspace.usergroups[GROUP] = UserGroup(id=GROUP, handle="on-call", users=MEMBERS)
    async with (
        running_bot(database_url=database_url, slack=slack, clock=clock) as one,
        running_bot(database_url=database_url, slack=slack, clock=clock) as two,
    ):
        await one.storage.policies.set("delete-record", PolicyChange(escalate_to=GROUP, escalate_after=600))
        ask_to_delete(model)
        await one.mention("delete record 3")
        await one.approval_message()
        clock.advance(601)
        first, second = await asyncio.gather(
            one.agent.escalate_waiting_approvals(), two.agent.escalate_waiting_approvals()
        )
        assert len(first) + len(second) == 1
        await slack.settle()
        assert sorted(c.channel for c in escalated_copies(one)) == [f"D{member}" for member in MEMBERS]
        assert len(audit_of(await one.storage.audit_log.entries(), "escalated")) == 1


async def test_slack_failing_a_post_gives_the_escalation_to_a_later_sweep_without_doubling_it(
    escalating_bot: RunningBot, model, clock
):
    bot = escalating_bot
    ask_to_delete(model)
    await bot.mention("delete record 3")
    await bot.approval_message()
    clock.advance(601)
    bot.slack.delay("chat.postMessage", 0)  # the DM to the first member goes out
    bot.slack.fail("chat.postMessage", status=500)  # Slack fails the second
    assert await bot.agent.escalate_waiting_approvals() == []
    run_id, call_id = await waiting_call(bot)
    assert (await bot.agent.get_tool_call(run_id, call_id)).escalated_at is None
    assert len(escalated_copies(bot)) == 1
    clock.advance(5)
    assert await bot.agent.escalate_waiting_approvals() == [(run_id, call_id)]
    assert sorted(c.channel for c in escalated_copies(bot)) == [f"D{member}" for member in MEMBERS]  # each once
    assert len(audit_of(await bot.storage.audit_log.entries(), "escalated")) == 1


async def test_a_channel_target_gets_one_post_in_that_channel(escalating_bot: RunningBot, model, clock):
    bot = escalating_bot
    await bot.storage.policies.set("delete-record", PolicyChange(escalate_to="C2"))
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    clock.advance(601)
    assert len(await bot.agent.escalate_waiting_approvals()) == 1
    copies = escalated_copies(bot)
    assert [c.channel for c in copies] == ["C2"]
    await bot.sender.click(copies[0], "tool_decline", user="U2")
    await bot.slack.wait_until(lambda: message.action_ids() == [] and copies[0].action_ids() == [], what="closed")
    assert "Declined" in message.all_text and "Declined" in copies[0].all_text
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(("target", "problem"), [("CGONE", "channel_not_found"), ("S0", "has no members")])
async def test_an_unknown_channel_or_an_empty_group_is_audited_once_and_not_tried_again(
    escalating_bot: RunningBot, model, clock, target, problem
):
    bot = escalating_bot
    bot.slack.workspace.usergroups["S0"] = UserGroup(id="S0", handle="nobody")
    await bot.storage.policies.set("delete-record", PolicyChange(escalate_to=target))
    ask_to_delete(model)
    await bot.mention("delete record 3")
    await bot.approval_message()
    clock.advance(601)
    assert await bot.agent.escalate_waiting_approvals() == []
    clock.advance(5)
    assert await bot.agent.escalate_waiting_approvals() == []  # not tried again for this wait
    failed = audit_of(await bot.storage.audit_log.entries(), "escalation_failed")
    assert len(failed) == 1 and problem in failed[0].detail and failed[0].via == "escalation"
    assert escalated_copies(bot) == []
    run_id, call_id = await waiting_call(bot)
    assert (await bot.agent.get_tool_call(run_id, call_id)).state == "awaiting_approval"  # it still waits


async def test_an_admin_sets_the_escalation_in_the_home_and_a_delay_past_the_expiry_is_refused(
    database_url, slack, model
):
    async with running_bot(database_url=database_url, slack=slack, admins=("U1",)) as bot:
        view = await opened_policy_modal(bot, "delete-record")
        values = modal_values(expiry="600")
        values["policy_escalate_to"] = {"value": {"type": "plain_text_input", "value": "S1"}}
        for bad, error in [("600", "must be shorter than the expiry"), ("bientôt", "not a whole number")]:
            values["policy_escalate_after"] = {"value": {"type": "plain_text_input", "value": bad}}
            status, body = await bot.sender.submit(view, values, user="U1")
            errors = json.loads(body)["errors"] if isinstance(body, str) else body["errors"]
            assert status == 200 and errors.keys() == {"policy_escalate_after"}, body
            assert error in errors["policy_escalate_after"]
        assert (await bot.storage.policies.get("delete-record")).escalate_to is None  # nothing stored
        values["policy_escalate_after"] = {"value": {"type": "plain_text_input", "value": "300"}}
        status, body = await bot.sender.submit(view, values, user="U1")
        assert status == 200 and "errors" not in str(body), body
        policy = await bot.storage.policies.get("delete-record")
        assert (policy.escalate_to, policy.escalate_after, policy.expires_after) == ("S1", 300, 600)
        changed = [e for e in await bot.storage.audit_log.entries() if e.action == "policy_changed"]
        assert [(e.via, e.after["escalate_to"], e.after["escalate_after"]) for e in changed] == [("home", "S1", 300)]


async def test_the_http_api_sets_the_escalation_and_refuses_a_delay_past_the_expiry(api_bot: RunningBot):
    bot = api_bot
    change = {"escalateTo": "C2", "escalateAfter": 3600, "expiresAfter": 600}
    status, body = await request(bot, "PATCH", "/api/policies/delete-record", body=change)
    assert status == 400 and "must be shorter than the expiry (600 s)" in body["error"], body
    assert (await bot.storage.policies.get("delete-record")).version == 0  # nothing stored
    status, body = await request(bot, "PATCH", "/api/policies/delete-record", body={**change, "escalateAfter": 60})
    assert status == 200, body
    policy = await bot.storage.policies.get("delete-record")
    assert (policy.escalate_to, policy.escalate_after) == ("C2", 60)


def copies_in_dms(bot: RunningBot, ref: str) -> dict[str, list]:
    """Every message in a member's DM whose buttons carry `ref`, by DM: what each approver sees in Slack."""
    found: dict[str, list] = {}
    for message in bot.slack.workspace.messages.values():
        if message.channel.startswith("D") and ref in json.dumps(message.to_api().get("blocks") or []):
            found.setdefault(message.channel, []).append(message)
    return found


@pytest.mark.parametrize("found", ["at once", "by the next sweep", "when the call is settled"])
async def test_a_dm_posted_whose_answer_was_lost_is_one_copy_that_shows_the_decision(
    escalating_bot: RunningBot, model, clock, found
):
    """Slack carries out the DM to the first member but the connection drops before its answer. The post was
    recorded before it was made, so it is looked for in that DM (at once; by the next sweep when the DM could
    not be read then; or, decided before that sweep, when the call is settled) and adopted: each member gets
    one copy, and after a click every copy shows the decision, none keeps live buttons."""
    bot = escalating_bot
    ask_to_delete(model)
    await bot.mention("delete record 3 ― 删除记录 3")
    message = await bot.approval_message()
    ref = message.button_value("tool_approve")
    clock.advance(601)
    run_id, call_id = await waiting_call(bot)
    bot.slack.drop_connection("chat.postMessage")  # the DM is posted, its answer never comes
    if found == "at once":
        assert await bot.agent.escalate_waiting_approvals() == [(run_id, call_id)]
    else:
        bot.slack.fail("conversations.history", error="internal_error")  # the DM cannot be read now
        assert await bot.agent.escalate_waiting_approvals() == []  # given back to a later sweep
    if found == "by the next sweep":
        clock.advance(5)
        assert await bot.agent.escalate_waiting_approvals() == [(run_id, call_id)]
    dms = copies_in_dms(bot, ref)
    expected = MEMBERS if found != "when the call is settled" else MEMBERS[:1]
    assert sorted(dms) == [f"D{member}" for member in expected]
    assert all(len(copies) == 1 for copies in dms.values()), {dm: len(c) for dm, c in dms.items()}

    clicked = dms["DU7"][0] if "DU7" in dms else message
    status, _ = await bot.sender.click(clicked, "tool_approve", user="U7")
    assert status == 200
    shown = [message, *(copy for copies in dms.values() for copy in copies)]
    await bot.slack.wait_until(lambda: all(m.action_ids() == [] for m in shown), what="every copy closed")
    assert all("Approved" in m.all_text for m in shown)


async def test_an_escalation_to_a_group_reads_the_calls_view_once_for_every_member(
    escalating_bot: RunningBot, model, clock
):
    """Each member's DM shows the buttons the rule offers them, all from one read of the call (issue 42)."""
    bot = escalating_bot
    ask_to_delete(model)
    await bot.mention("delete record 3")
    await bot.approval_message()
    clock.advance(601)
    with statements_of(bot.storage) as seen:
        assert len(await bot.agent.escalate_waiting_approvals()) == 1
    assert sorted(c.channel for c in escalated_copies(bot)) == [f"D{member}" for member in MEMBERS]
    views = [s for s in seen if "FROM runs LEFT OUTER JOIN tool_calls" in s and "JOIN tool_policies" in s]
    assert len(views) == 1, views
