"""Delegation through the real Bolt app and the HTTP API, on SQLite and PostgreSQL: while U9 is away, U7
decides for U9 until the delegation ends, and only what U9 could decide; never on U7's own request, never
passed on; under four eyes a person counts once, whoever they stand in for. The thread's message, the API's
answer and the audit trail name both ("<@U7> for <@U9>")."""

from __future__ import annotations

import html
import json

import pytest

from memory import PolicyChange
from tests.support.processes import bot_command
from tests.support.waiting import until

from .harness import (
    RunningBot,
    ask_to_delete,
    decide_path,
    home_click,
    home_of,
    open_home,
    record_ids,
    refused_click,
    request,
    text_of,
    waiting_call,
)

pytestmark = pytest.mark.both_databases

DELEGATIONS = "/api/delegations"


async def delegate(bot: RunningBot, delegator: str, delegate: str, until: str = "2d", **more: str) -> dict:
    status, answer = await request(
        bot, "POST", DELEGATIONS, body={"delegator": delegator, "delegate": delegate, "until": until, **more}
    )
    assert status == 200 and answer["status"] == "delegated", answer
    return answer["delegation"]


async def refused(bot: RunningBot, message, user: str) -> str:
    """Click Approve as `user`, who may not: the ephemeral explanation they got."""
    before = len(bot.slack.calls_of("chat.postEphemeral"))
    await bot.sender.click(message, "tool_approve", user=user)
    ephemerals = await bot.slack.wait_for("chat.postEphemeral", count=before + 1)
    assert ephemerals[-1].params["user"] == user
    return ephemerals[-1].params["text"]


async def decided(bot: RunningBot, message, text: str) -> str:
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts and text in str(c.params))
    return html.unescape(message.all_text)


async def test_a_delegate_decides_for_the_delegator_until_it_ends(admin_bot: RunningBot, model, clock):
    bot = admin_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9"]))
    made = await delegate(bot, "U9", "U7")
    status, listed = await request(bot, "GET", DELEGATIONS)  # what an admin sees: every delegation in force
    assert status == 200 and [(d["delegator"], d["delegate"]) for d in listed["delegations"]] == [("U9", "U7")]
    assert listed["delegations"][0]["id"] == made["id"]

    ask_to_delete(model, 3)
    await bot.mention("delete record 3", user="U2")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve", user="U7")
    shown = await decided(bot, message, "Approved")
    assert "Approved by <@U7> for <@U9>" in shown
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
    approved = next(e for e in await bot.storage.audit_log.entries() if e.action == "approved")
    assert (approved.actor, approved.on_behalf_of, approved.via) == ("U7", "U9", "button")

    clock.advance(2 * 86400 + 1)  # the delegation's time ran out: U7 decides nothing for U9 any more
    ask_to_delete(model, 4)
    await bot.mention("delete record 4", user="U2")
    later = await bot.approval_message(count=2)
    assert "Only <@U9> may decide" in await refused(bot, later, "U7")
    assert await record_ids(bot) == [1, 2, 4, 5]
    status, listed = await request(bot, "GET", DELEGATIONS)
    assert listed["delegations"] == []
    assert [d.delegate for d in await bot.storage.delegations.end_lapsed()] == ["U7"]
    ended = [e for e in await bot.storage.audit_log.entries() if e.action.startswith("delegat")]
    assert [(e.action, e.actor, e.via) for e in ended] == [
        ("delegated", "U9", "api"),
        ("delegation_ended", "system", "expiry"),
    ]
    assert "its time ran out" in ended[-1].detail


async def test_a_delegation_ended_early_stops_at_once(admin_bot: RunningBot, model):
    bot = admin_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9"]))
    made = await delegate(bot, "U9", "U7", until="2026-12-31")
    status, answer = await request(bot, "POST", f"{DELEGATIONS}/{made['id']}/end", body={"endedBy": "U3"})
    assert status == 403 and "only U9, U7 or an admin may end" in answer["error"]
    status, answer = await request(bot, "POST", f"{DELEGATIONS}/{made['id']}/end", body={"endedBy": "U7"})
    assert status == 200 and answer["delegation"]["endedBy"] == "U7"
    status, answer = await request(bot, "POST", f"{DELEGATIONS}/{made['id']}/end", body={"endedBy": "U7"})
    assert status == 409 and "already ended" in answer["error"]

    ask_to_delete(model)
    await bot.mention("delete record 3", user="U2")
    message = await bot.approval_message()
    assert "Only <@U9> may decide" in await refused_click(bot, message, "U7")


async def test_a_delegate_never_gains_a_right_the_delegator_lacks_nor_passes_one_on(admin_bot: RunningBot, model):
    bot = admin_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U3"]))
    await delegate(bot, "U3", "U9")  # U9 decides for U3 ...
    await delegate(bot, "U9", "U7")  # ... and U7 for U9, which passes on U9's own rights only
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U2")
    message = await bot.approval_message()
    assert "Only <@U3> may decide" in await refused_click(bot, message, "U7")
    run_id, call_id = await waiting_call(bot)
    status, answer = await request(bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U7"})
    assert status == 403 and "Only U3 may decide" in answer["error"]

    status, answer = await request(bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U9"})
    assert status == 200 and answer == {"runId": run_id, "toolCallId": call_id, "status": "approved",
                                        "onBehalfOf": "U3"}  # fmt: skip
    assert "Approved by <@U9> for <@U3>" in await decided(bot, message, "Approved")


async def test_a_delegate_cannot_approve_their_own_request(admin_bot: RunningBot, model):
    bot = admin_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9"]))
    await delegate(bot, "U9", "U7")
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U7")
    message = await bot.approval_message()
    text = await refused_click(bot, message, "U7")
    assert "You decide for <@U9> while they are away, but not on your own request" in text
    refused = [e for e in await bot.storage.audit_log.entries() if e.action == "refused"]
    assert [(e.actor, e.on_behalf_of) for e in refused] == [("U7", None)]


async def test_four_eyes_counts_a_person_once_whoever_they_stand_in_for(admin_bot: RunningBot, model):
    bot = admin_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U3", "U9"], approvals_required=2))
    await delegate(bot, "U3", "U7")
    await delegate(bot, "U9", "U7")  # U7 holds both approvers' approvals
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U2")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve", user="U7")
    assert "1 of 2 approvals*: <@U7> for <@U3>" in await decided(bot, message, "1 of 2")

    assert "you already approved it" in await refused(bot, message, "U7")  # not again for U9
    assert "you already approved it" in await refused(bot, message, "U3")  # U3 counted through U7
    run_id, call_id = await waiting_call(bot)
    status, answer = await request(bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U7"})
    assert status == 403 and "already approved" in answer["error"]

    await bot.sender.click(message, "tool_approve", user="U9")
    assert "Approved by <@U7> for <@U3>, <@U9>" in await decided(bot, message, "Approved by")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
    approvals = [(e.actor, e.on_behalf_of) for e in await bot.storage.audit_log.entries() if e.action == "approved"]
    assert approvals == [("U7", "U3"), ("U9", None)]


async def test_a_delegation_refused_in_one_line(admin_bot: RunningBot):
    bot = admin_bot
    for body, code, error in [
        ({"delegator": "U9", "delegate": "U9", "until": "1d"}, 400, "cannot delegate to themselves"),
        ({"delegator": "U9", "delegate": "U7", "until": "366d"}, 400, "1 second to 365 days"),
        ({"delegator": "U9", "delegate": "U7", "until": "Friday"}, 400, "is not an end time"),
        ({"delegator": "U9", "delegate": "U7", "until": "1d", "actor": "U3"}, 403, "only U9 or an admin"),
        ({"delegator": "U9", "delegate": "U7"}, 400, "until must be a string"),
        ({"delegator": "U9", "delegate": "U404", "until": "1d"}, 400, "not a person of this workspace"),
        ({"delegator": "U9", "delegate": "U7", "until": "1d", "colour": "red"}, 400, "unknown fields colour"),
    ]:
        status, answer = await request(bot, "POST", DELEGATIONS, body=body)
        assert (status, error in answer.get("error", "")) == (code, True), (body, answer)
        assert "\n" not in answer["error"]
    await delegate(bot, "U9", "U7", actor="U1")  # an admin may make one for someone else
    status, answer = await request(bot, "POST", DELEGATIONS, body={"delegator": "U9", "delegate": "U3", "until": "1d"})
    assert status == 409 and "U9 already delegates to U7" in answer["error"]
    status, _ = await request(bot, "GET", DELEGATIONS, headers={})
    assert status == 401


def delegation_values(delegate: str, until: str) -> dict:
    return {
        "delegation_delegate": {"delegate": {"type": "users_select", "selected_user": delegate}},
        "delegation_until": {"until": {"type": "plain_text_input", "value": until}},
    }


async def test_an_approver_hands_over_in_the_home_and_the_admin_sees_it(home_bot: RunningBot, model):
    bot = home_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9"]))
    await open_home(bot, "U9")
    assert "Hand over my approvals" in text_of(await home_of(bot, "U9"))
    await home_click(bot, "U9", "delegation_open", "open")
    opened = await bot.slack.wait_for("views.open")
    form = opened[-1].params["view"]
    form = json.loads(form) if isinstance(form, str) else form
    for values, block, error in [
        (delegation_values("U9", "3d"), "delegation_delegate", "Choose someone other than you."),
        (delegation_values("U7", "Friday"), "delegation_until", "Write a date (2026-12-11)"),
        (delegation_values("U7", "400d"), "delegation_until", "within the next 365 days"),
    ]:
        status, answer = await bot.sender.submit(form, values, user="U9")
        assert status == 200 and error in json.loads(answer)["errors"][block], (values, answer)
    assert await bot.storage.delegations.in_force() == []
    status, answer = await bot.sender.submit(form, delegation_values("U7", "3d"), user="U9")
    assert status == 200 and not answer
    (made,) = await bot.storage.delegations.in_force()
    assert (made.delegator, made.delegate, made.created_by) == ("U9", "U7", "U9")

    home = html.unescape(text_of(await home_of(bot, "U9", count=2)))
    assert ":palm_tree: <@U7> decides for you until" in home and "Hand over my approvals" not in home
    await open_home(bot, "U1")  # the admin sees every delegation in force
    admin = html.unescape(text_of(await home_of(bot, "U1")))
    assert "*Delegations in force*" in admin and "<@U7> decides for <@U9> until" in admin

    ask_to_delete(model)
    await bot.mention("delete record 3", user="U2")
    await bot.approval_message()
    await open_home(bot, "U7")  # the delegate: U9's approval waits for them too, with its buttons
    view = await home_of(bot, "U7")
    shown = html.unescape(text_of(view))
    assert "You decide for <@U9> until" in shown and "delete-record" in shown
    assert "tool_approve" in json.dumps(view)

    await home_click(bot, "U7", "delegation_end", made.id)  # the delegate hands it back
    await until_true(lambda: bot.storage.delegations.in_force(), [])
    ended = [(e.action, e.actor, e.via) for e in await bot.storage.audit_log.entries() if e.action.startswith("deleg")]
    assert ended == [("delegated", "U9", "home"), ("delegation_ended", "U7", "home")]


async def until_true(read, wanted) -> None:
    async def matches() -> bool:
        return await read() == wanted

    await until(matches, what=f"{wanted!r}")


async def test_delegations_on_the_command_line_and_in_its_audit(api_bot: RunningBot, model):
    bot = api_bot
    url = bot.storage.url
    code, out, err = await bot_command("delegate", "add", "U9", "U7", "--until", "3d", database_url=url)
    assert code == 0 and "U9's approvals go to U7 until" in out, err
    code, out, err = await bot_command("delegate", "add", "U9", "U3", "--until", "3d", database_url=url)
    assert code == 2 and "U9 already delegates to U7" in err and len(err.strip().splitlines()) == 2, err
    code, out, err = await bot_command("delegate", "list", database_url=url)
    assert code == 0 and "U9's approvals go to U7" in out, err
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9"]))
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U2")
    await bot.approval_message()
    run_id, call_id = await waiting_call(bot)
    status, answer = await request(bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U7"})
    assert status == 200 and answer["onBehalfOf"] == "U9"
    await bot.slack.wait_for("chat.stopStream")
    code, out, err = await bot_command("audit", database_url=url)
    assert code == 0 and any("approved" in line and "U7 for U9" in line for line in out.splitlines()), out
    code, out, err = await bot_command("audit", "--format", "jsonl", database_url=url)
    approved = next(json.loads(line) for line in out.splitlines() if '"approved"' in line)
    assert (approved["actor"], approved["on_behalf_of"]) == ("U7", "U9")
    (made,) = await bot.storage.delegations.in_force()
    code, out, err = await bot_command("delegate", "end", made.id, database_url=url)
    assert code == 0 and "ended" in out, err
    code, out, err = await bot_command("delegate", "list", database_url=url)
    assert code == 0 and "No delegation in force." in out
