"""Standing grants ("Approve and allow for 1 hour in this thread") through the real Bolt app, on SQLite and
PostgreSQL: the click approves once and stores a grant; a later call of the same tool in the same thread runs
without an approval message and is audited `grant_used` with the grant; another thread, other arguments (a
same-arguments grant), an ended or revoked grant, a disabled tool and a quorum policy all ask as usual."""

from __future__ import annotations

import json

import pytest

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import API_TOKEN as TOKEN
from .harness import (
    RunningBot,
    ask_to_delete,
    decide_path,
    home_click,
    home_of,
    modal_values,
    open_home,
    opened_policy_modal,
    record_ids,
    request,
    running_bot,
    text_of,
    waiting_call,
)

GRANT, SAME_ARGS = "tool_approve_grant", "tool_approve_grant_same_args"


@pytest.fixture
async def bot(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, clock=clock, admins=("U9",)) as running:
        await running.storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
        yield running


def ask_to_delete_next(model, record_id: int, call_id: str) -> None:
    model.chat.push(
        tool_calls(call("delete-record", {"id": record_id}, id=call_id)), reply(f"Deleted record {record_id}.")
    )


async def granted_first(bot: RunningBot, model, *, button: str = GRANT, granter: str = "U2") -> dict:
    """Ask to delete record 3, approve it with a grant; the mention's event (its thread)."""
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.sender.click(message, button, user=granter)
    await bot.slack.wait_for("chat.stopStream")
    assert "Approved" in message.all_text and message.action_ids() == []
    return event


def approval_posts(bot: RunningBot) -> int:
    return len([c for c in bot.slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params.get("blocks"))])


async def test_a_grant_click_approves_once_and_the_next_call_in_the_thread_runs_without_asking(bot, model):
    ask_to_delete(model)
    event = await bot.mention("delete record 3")
    message = await bot.approval_message()
    assert message.action_ids()[:3] == ["tool_approve", GRANT, SAME_ARGS]
    assert "Approve and allow for 1 hour in this thread" in str(message.blocks)
    await bot.sender.click(message, GRANT, user="U2")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
    (grant,) = await bot.storage.grants.live()
    assert (grant.granted_by, grant.tool_name, grant.args_fingerprint) == ("U2", "delete-record", None)

    ask_to_delete_next(model, 4, "call_2")
    await bot.say("und jetzt Datensatz 4 löschen, bitte — 请删除", user="U1", thread_ts=event["ts"])
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Deleted record 4."
    assert approval_posts(bot) == 1  # no approval message for the second call
    assert await record_ids(bot) == [1, 2, 5]

    entries = [e for e in await bot.storage.audit_log.entries() if e.run_id is not None]
    assert [(e.action, e.actor) for e in entries] == [
        ("requested", "U1"),
        ("approved", "U2"),
        ("granted", "U2"),
        ("executed", "system"),
        ("requested", "U1"),
        ("grant_used", "U2"),
        ("executed", "system"),
    ]
    used = entries[5]
    assert f"grant {grant.id}" in used.detail and used.args_fingerprint == entries[4].args_fingerprint
    assert used.policy_version == 1 and f"grant {grant.id}" in entries[2].detail
    assert len(model.chat.requests) == 4  # each call ran once


async def test_a_call_in_another_thread_still_asks(bot, model):
    await granted_first(bot, model)
    ask_to_delete_next(model, 4, "call_2")
    await bot.mention("delete record 4")  # a new thread
    second = await bot.approval_message(count=2)
    assert "delete-record" in second.all_text
    assert await record_ids(bot) == [1, 2, 4, 5]
    assert "grant_used" not in [e.action for e in await bot.storage.audit_log.entries()]


async def test_a_same_arguments_grant_does_not_cover_other_arguments(bot, model):
    event = await granted_first(bot, model, button=SAME_ARGS)
    (grant,) = await bot.storage.grants.live()
    assert grant.same_arguments
    ask_to_delete_next(model, 4, "call_2")
    await bot.say("delete record 4 too", user="U1", thread_ts=event["ts"])
    second = await bot.approval_message(count=2)
    assert await record_ids(bot) == [1, 2, 4, 5]
    await bot.sender.click(second, "tool_decline", user="U2")
    await bot.slack.wait_for("chat.stopStream", count=2)

    # the same arguments again are covered (the record is gone already, but it ran without asking)
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_3")), reply("Record 3 was gone already."))
    await bot.say("delete record 3 once more", user="U1", thread_ts=event["ts"])
    await bot.slack.wait_for("chat.stopStream", count=3)
    assert approval_posts(bot) == 2
    assert [e.action for e in await bot.storage.audit_log.entries()].count("grant_used") == 1


async def test_an_ended_grant_asks_again(bot, model, clock):
    event = await granted_first(bot, model)
    clock.advance(3601)
    ask_to_delete_next(model, 4, "call_2")
    await bot.say("delete record 4", user="U1", thread_ts=event["ts"])
    await bot.approval_message(count=2)
    assert await record_ids(bot) == [1, 2, 4, 5]
    assert await bot.storage.grants.live() == []


async def test_a_grant_revoked_in_the_home_asks_for_the_very_next_call(bot, model):
    event = await granted_first(bot, model)
    (grant,) = await bot.storage.grants.live()
    await open_home(bot, "U2")
    home = await home_of(bot, "U2")  # the granter sees their own grant
    assert "delete-record" in text_of(home) and "Revoke" in text_of(home) and "any arguments" in text_of(home)
    await open_home(bot, "U3")
    assert "Revoke" not in text_of(await home_of(bot, "U3"))  # someone else sees none
    await home_click(bot, "U2", "grant_revoke", grant.id)
    await bot.slack.wait_for(
        "views.publish", lambda c: c.params.get("user_id") == "U2" and "Revoke" not in str(c.params.get("view"))
    )
    assert await bot.storage.grants.live() == []
    ask_to_delete_next(model, 4, "call_2")
    await bot.say("delete record 4", user="U1", thread_ts=event["ts"])
    await bot.approval_message(count=2)
    assert await record_ids(bot) == [1, 2, 4, 5]
    revoked = [e for e in await bot.storage.audit_log.entries() if e.action == "grant_revoked"]
    assert [(e.actor, e.via) for e in revoked] == [("U2", "home")] and grant.id in revoked[0].detail


async def test_an_admin_sees_and_revokes_every_grant_and_a_stranger_cannot(bot, model):
    await granted_first(bot, model)
    (grant,) = await bot.storage.grants.live()
    await open_home(bot, "U9")
    assert "Revoke" in text_of(await home_of(bot, "U9"))
    await home_click(bot, "U3", "grant_revoke", grant.id)  # a forged click by someone else
    refused = "Only <@U2>, who gave it, or an admin may revoke this grant."
    await bot.slack.wait_for(  # answered where it was made: in the Home, naming the granter as a person
        "views.publish", lambda c: c.params.get("user_id") == "U3" and refused in str(c.params.get("view"))
    )
    assert len(await bot.storage.grants.live()) == 1
    (line,) = [e for e in await bot.storage.audit_log.entries() if e.action == "refused"]
    assert (line.actor, line.via) == ("U3", "home") and "revoke" in line.detail  # through the one rule
    await home_click(bot, "U9", "grant_revoke", grant.id)
    await bot.slack.wait_for(
        "views.publish", lambda c: c.params.get("user_id") == "U9" and "Revoke" not in str(c.params.get("view"))
    )
    assert await bot.storage.grants.live() == []
    assert [(e.actor) for e in await bot.storage.audit_log.entries() if e.action == "grant_revoked"] == ["U9"]


async def test_a_disabled_tool_never_runs_under_a_grant(bot, model):
    event = await granted_first(bot, model)
    await bot.storage.policies.set("delete-record", PolicyChange(mode="disabled"))
    model.chat.push(tool_calls(call("delete-record", {"id": 4}, id="call_2")), reply("It is disabled."))
    await bot.say("delete record 4", user="U1", thread_ts=event["ts"])
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert await record_ids(bot) == [1, 2, 4, 5]
    actions = [e.action for e in await bot.storage.audit_log.entries() if e.run_id is not None]
    assert "blocked" in actions and "grant_used" not in actions


async def test_a_policy_that_no_longer_allows_grants_asks(bot, model):
    event = await granted_first(bot, model)
    await bot.storage.policies.set("delete-record", PolicyChange(grant_seconds=0))
    ask_to_delete_next(model, 4, "call_2")
    await bot.say("delete record 4", user="U1", thread_ts=event["ts"])
    second = await bot.approval_message(count=2)
    assert GRANT not in second.action_ids()
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_no_grant_with_a_quorum_and_not_for_the_granters_own_calls_without_self_approval(bot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvals_required=2))
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    assert GRANT not in message.action_ids() and SAME_ARGS not in message.action_ids()
    status, _ = await bot.sender.click(message, GRANT, user="U2", value=message.button_value("tool_approve"))
    await bot.slack.wait_for("chat.postEphemeral", lambda c: "No standing grant" in c.params["text"])
    assert await bot.storage.grants.live() == [] and await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_without_self_approval_a_grant_does_not_cover_the_granters_own_calls(bot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(self_approval=False))
    event = await granted_first(bot, model)
    ask_to_delete_next(model, 4, "call_2")
    await bot.say("delete record 4", user="U2", thread_ts=event["ts"])  # the granter asks now
    await bot.approval_message(count=2)
    assert await record_ids(bot) == [1, 2, 4, 5]


@pytest.mark.both_databases
async def test_a_grant_made_through_one_replica_is_used_on_the_other(database_url, slack, model, clock):
    async with (
        running_bot(database_url=database_url, slack=slack, clock=clock) as one,
        running_bot(database_url=database_url, slack=slack, clock=clock) as two,
    ):
        await one.storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
        event = await granted_first(one, model)
        ask_to_delete_next(model, 4, "call_2")
        await two.say("delete record 4", user="U1", thread_ts=event["ts"])
        await slack.wait_for("chat.stopStream", count=2)
        assert approval_posts(one) == 1
        assert await record_ids(two) == [1, 2, 5]
        used = [e for e in await two.storage.audit_log.entries() if e.action == "grant_used"]
        (grant,) = await one.storage.grants.live()
        assert len(used) == 1 and grant.id in used[0].detail


async def test_an_admin_allows_grants_in_the_home_policy_form(database_url, slack, model):
    async with running_bot(database_url=database_url, slack=slack, admins=("U1",)) as bot:
        view = await opened_policy_modal(bot, "delete-record")
        values = modal_values()
        for bad, error in [("30", "60 seconds to 7 days"), ("une heure", "not a whole number"), ("３６００", "whole")]:
            values["policy_grant_seconds"] = {"value": {"type": "plain_text_input", "value": bad}}
            status, body = await bot.sender.submit(view, values, user="U1")
            assert status == 200 and error in json.dumps(body, ensure_ascii=False), body
        assert (await bot.storage.policies.get("delete-record")).grant_seconds is None
        values["policy_grant_seconds"] = {"value": {"type": "plain_text_input", "value": "7200"}}
        status, body = await bot.sender.submit(view, values, user="U1")
        assert (status, body) == (200, "")
        assert (await bot.storage.policies.get("delete-record")).grant_seconds == 7200
        await bot.slack.wait_for("views.publish", lambda c: "Standing grants: up to 7200 s" in str(c.params))
        changed = [e for e in await bot.storage.audit_log.entries() if e.action == "policy_changed"]
        assert changed[-1].after["grant_seconds"] == 7200 and changed[-1].via == "home"
        ask_to_delete(model)
        await bot.mention("delete record 3")
        message = await bot.approval_message()
        assert "Approve and allow for 2 hours in this thread" in str(message.blocks)


async def test_the_http_api_approves_with_a_grant_lists_and_revokes_it(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, api_token=TOKEN, clock=clock) as bot:
        await bot.storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
        ask_to_delete(model)
        event = await bot.mention("delete record 3")
        message = await bot.approval_message()
        run_id, call_id = await waiting_call(bot)
        path = decide_path(run_id, call_id, "approve")
        for bad, error in [
            ({"approver": "U2", "grant": "yes"}, "grant must be true or an object"),
            ({"approver": "U2", "grant": {"sameArgs": True}}, "unknown grant fields sameArgs"),
            ({"approver": "U2", "grant": {"sameArguments": "ja"}}, "sameArguments must be true or false"),
            ({"approver": "U2", "grant": {"seconds": 0}}, "whole number of seconds"),
        ]:
            status, body = await request(bot, "POST", path, body=bad)
            assert (status, error in body["error"]) == (400, True), body
        status, body = await request(bot, "POST", path, body={"approver": "U2", "grant": {"seconds": 7200}})
        assert status == 403 and "a grant lasts 1 to 3600 seconds" in body["error"]
        assert await record_ids(bot) == [1, 2, 3, 4, 5]  # nothing was decided

        status, body = await request(bot, "POST", path, body={"approver": "U2", "grant": {"sameArguments": False}})
        assert (status, body["status"], body["grant"]["grantedBy"]) == (200, "approved", "U2")
        grant_id = body["grant"]["grantId"]
        await bot.slack.wait_for("chat.stopStream")
        assert "Approved" in message.all_text
        status, body = await request(bot, "GET", "/api/agents/demo-agent/grants")
        assert status == 200 and [g["grantId"] for g in body["grants"]] == [grant_id]

        ask_to_delete_next(model, 4, "call_2")
        await bot.say("delete record 4", user="U1", thread_ts=event["ts"])
        await bot.slack.wait_for("chat.stopStream", count=2)
        assert await record_ids(bot) == [1, 2, 5] and approval_posts(bot) == 1

        revoke = f"/api/agents/demo-agent/grants/{grant_id}/revoke"
        status, body = await request(bot, "POST", revoke, body={})
        assert status == 400 and "revokedBy is required" in body["error"]
        status, body = await request(bot, "POST", "/api/agents/demo-agent/grants/nope/revoke", body={"revokedBy": "U2"})
        assert status == 404
        status, body = await request(bot, "POST", revoke, body={"revokedBy": "U3"})  # the same rule as the Home's
        assert (status, body["error"]) == (403, "Only U2, who gave it, or an admin may revoke this grant.")
        status, body = await request(bot, "POST", revoke, body={"revokedBy": "U2"})
        assert (status, body["status"]) == (200, "revoked")
        status, body = await request(bot, "POST", revoke, body={"revokedBy": "U2"})
        assert status == 409
        status, body = await request(bot, "GET", "/api/agents/demo-agent/grants")
        assert body["grants"] == []
        ask_to_delete_next(model, 5, "call_3")
        await bot.say("delete record 5", user="U1", thread_ts=event["ts"])
        await bot.approval_message(count=2)
        revoked = [e for e in await bot.storage.audit_log.entries() if e.action == "grant_revoked"]
        assert [(e.actor, e.via) for e in revoked] == [("U2", "api")]
