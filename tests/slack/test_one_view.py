"""Every decision shown, and one view of a waiting call on every surface (issue 39): the decided four-eyes
message names every approver, a call run under a standing grant says so in its thread, and the App Home's
card offers what the thread offers (no edit of a four-eyes call) and shows the preview. Through the real
Bolt app, the Slack emulation and the scripted model."""

from __future__ import annotations

from typing import Any

from bot.slack_emulator.workspace import UserGroup
from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot, ask_to_delete, home_click, home_of, open_home, record_ids, request, text_of


def home_buttons(view: dict[str, Any]) -> list[str]:
    return [
        element["action_id"]
        for block in view["blocks"]
        if block["type"] == "actions" and block.get("block_id", "").startswith("home_call_")
        for element in block.get("elements", [])
        if element.get("type") == "button"
    ]


async def test_the_decided_four_eyes_message_names_every_approver(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvals_required=2))
    ask_to_delete(model)
    await bot.mention("レコード3を削除して", user="U1")
    message = await bot.approval_message()

    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: "1 of 2 approvals" in str(c.params))
    assert "1 of 2 approvals*: <@U2>" in message.all_text
    await bot.sender.click(message, "tool_approve", user="U3")
    await bot.slack.wait_for("chat.stopStream")
    assert message.action_ids() == []
    assert "Approved by <@U2>, <@U3>" in message.all_text
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_a_call_run_under_a_standing_grant_says_so_in_its_thread(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
    ask_to_delete(model)
    event = await bot.mention("レコード3を削除して", user="U1")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve_grant", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    (grant,) = await bot.storage.grants.live()

    model.chat.push(tool_calls(call("delete-record", {"id": 4}, id="call_2")), reply("レコード4を削除しました。"))
    await bot.say("レコード4も削除して", user="U1", thread_ts=event["ts"])
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    answer = bot.slack.message("C1", stops[-1].params["ts"])
    assert answer.text == "レコード4を削除しました。"
    shown = str(answer.blocks)  # the call's task in the answer says under whose grant it ran, until when
    assert "ran under <@U2>'s grant, until <!date^" + str(int(grant.expires_at.timestamp())) in shown
    assert await record_ids(bot) == [1, 2, 5]


async def test_the_home_card_of_a_four_eyes_call_offers_no_edit_and_shows_the_preview(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvals_required=2, approvers=["U2", "U3"]))
    await open_home(bot, "U2")
    await home_of(bot, "U2")
    ask_to_delete(model)
    await bot.mention("レコード3を削除して", user="U1")
    message = await bot.approval_message()
    assert "tool_edit_args" not in message.action_ids()  # the thread offers no edit of a four-eyes call

    view = await home_of(bot, "U2", count=2)
    assert "`delete-record` requested by <@U1>" in text_of(view)
    assert home_buttons(view) == [
        "tool_approve",
        "tool_decline",
        "tool_decline_with_reason",
        "tool_cancel",
    ]  # nor the Home
    assert "Will delete 1 record: #3" in text_of(view)  # the preview, as in the thread
    assert "Will delete 1 record: #3" in message.all_text


async def test_the_home_card_offers_edit_where_the_thread_does(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    await open_home(bot, "U2")
    await home_of(bot, "U2")
    ask_to_delete(model)
    await bot.mention("レコード3を削除して", user="U1")
    message = await bot.approval_message()
    view = await home_of(bot, "U2", count=2)
    shared = ("tool_approve", "tool_decline", "tool_edit_args", "tool_cancel")
    thread_buttons = [a for a in message.action_ids() if a in shared]
    assert [a for a in home_buttons(view) if a != "tool_decline_with_reason"] == thread_buttons


async def test_every_copy_of_a_four_eyes_call_offers_no_edit_and_shows_the_preview(api_bot: RunningBot, model, clock):
    bot = api_bot
    bot.slack.workspace.usergroups["S9"] = UserGroup(id="S9", handle="on-call", users=("U2", "U7"))
    await bot.storage.policies.set(
        "delete-record",
        PolicyChange(approvals_required=2, approvers=["U2", "U3"], escalate_to="S9", escalate_after=600),
    )
    await open_home(bot, "U2")
    await home_of(bot, "U2")
    ask_to_delete(model)
    await bot.mention("レコード3を削除して", user="U1")
    message = await bot.approval_message()
    home = await home_of(bot, "U2", count=2)
    clock.advance(601)
    assert len(await bot.agent.escalate_waiting_approvals()) == 1

    posted = [bot.slack.posted_by(c) for c in bot.slack.calls_of("chat.postMessage") if c.response.get("ok")]
    copies = {copy.channel: copy for copy in posted if "Escalated" in copy.all_text}
    assert sorted(copies) == ["DU2", "DU7"]
    for shown in (message, *copies.values()):  # the preview on every copy, as in the thread
        assert "Will delete 1 record: #3" in shown.all_text
        assert "tool_edit_args" not in shown.action_ids()  # nor an edit of arguments everyone approves
    assert copies["DU2"].action_ids() == ["tool_approve", "tool_decline", "tool_decline_with_reason", "tool_cancel"]
    assert copies["DU7"].action_ids() == []  # U7 may not decide it: their copy offers nothing
    assert "tool_approve" in message.action_ids()  # the thread's message, for whoever may
    assert home_buttons(home) == ["tool_approve", "tool_decline", "tool_decline_with_reason", "tool_cancel"]
    assert "Will delete 1 record: #3" in text_of(home)
    who = next(line for line in message.all_text.split("\n") if line.startswith("Who may approve: "))
    assert "<@U2> or <@U3>" in who and who in text_of(home)  # who may decide, until when: as the thread says

    def listed(page: dict[str, Any]) -> dict[str, Any]:
        (run,) = page["runs"]
        (shown,) = run["toolCalls"]
        return shown

    path = "/api/agents/demo-agent/suspended-runs"
    for viewer, allowed in (
        ("U2", ["approve", "cancel", "decline"]),
        ("U1", ["cancel", "decline"]),
        ("U7", []),
        (None, ["approve", "cancel", "decline"]),
    ):
        status, page = await request(bot, "GET", path + (f"?viewer={viewer}" if viewer else ""))
        assert status == 200
        assert listed(page)["actions"] == allowed, viewer  # the viewer's, as the rule allows: never edit_args
    shown = listed(page)
    assert shown["approvalsRequired"] == 2 and shown["deciders"] == ["U2", "U3"] and shown["requester"] == "U1"
    assert "Will delete 1 record: #3" in shown["preview"]["result"]

    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: "1 of 2 approvals" in str(c.params), count=len(copies) + 1)
    for shown_copy in (message, copies["DU2"]):  # every copy and the API say who approved so far
        assert "1 of 2 approvals*: <@U2>" in shown_copy.all_text
    assert copies["DU2"].action_ids() == ["tool_decline", "tool_decline_with_reason", "tool_cancel"]  # U2 approved
    _, page = await request(bot, "GET", path + "?viewer=U2")
    assert listed(page)["approvals"] == ["U2"] and listed(page)["actions"] == ["cancel", "decline"]


async def test_the_rule_and_the_grant_a_call_ran_under_are_said_in_the_conversations_language(bot: RunningBot, model):
    finance = {"condition": "args.id > 2", "effect": "require_approval", "name": "finance"}
    await bot.storage.policies.set("delete-record", PolicyChange(rules=[finance], grant_seconds=3600))
    ask_to_delete(model)
    event = await bot.mention("レコード3を削除して", user="UJA")  # a conversation in Japanese
    message = await bot.approval_message()
    assert "ルール 1: finance の承認が必要: args.id &gt; 2" in message.all_text  # not "rule 1: Needs finance"
    await bot.sender.click(message, "tool_approve_grant", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    (grant,) = await bot.storage.grants.live()

    model.chat.push(tool_calls(call("delete-record", {"id": 4}, id="call_2")), reply("レコード4を削除しました。"))
    await bot.say("レコード4も削除して", user="UJA", thread_ts=event["ts"])
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    shown = str(bot.slack.message("C1", stops[-1].params["ts"]).blocks)
    date = "<!date^" + str(int(grant.expires_at.timestamp()))
    assert "<@U2> の継続許可で実行（" + date in shown and "ran under" not in shown


async def test_a_click_on_a_stale_screen_is_one_audit_line_with_its_reason(api_bot: RunningBot, model):
    bot = api_bot
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    ref = message.button_value("tool_approve")
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    await bot.sender.click(message, "tool_decline", user="U3", value=ref)  # a client that still shows it
    told = await bot.slack.wait_for("chat.postEphemeral")
    assert "already decided" in told[0].params["text"]
    run_id, call_id = message_call(await bot.storage.audit_log.entries())
    status, _ = await request(
        bot, "POST", f"/api/agents/demo-agent/runs/{run_id}/tool-calls/{call_id}/decline", body={"approver": "U7"}
    )
    assert status == 409
    await bot.slack.settle()

    refused = [e for e in await bot.storage.audit_log.entries() if e.action == "refused"]
    assert [(e.actor, e.via) for e in refused] == [("U3", "button"), ("U7", "api")]  # once each, with why
    assert all("it no longer waits (already approved)" in (e.detail or "") for e in refused)
    assert "decline:" in (refused[1].detail or "")


def message_call(entries: list[Any]) -> tuple[str, str]:
    (requested,) = [e for e in entries if e.action == "requested"]
    return requested.run_id, requested.tool_call_id


async def test_the_home_card_offers_the_grant_the_thread_offers_and_gives_it(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"], grant_seconds=3600))
    await open_home(bot, "U2")
    await home_of(bot, "U2")
    ask_to_delete(model)
    await bot.mention("レコード3を削除して", user="U1")
    message = await bot.approval_message()
    view = await home_of(bot, "U2", count=2)
    assert home_buttons(view) == message.action_ids()  # the same buttons, the grants on offer among them
    assert "tool_approve_grant" in home_buttons(view) and "Approve and allow for 1 hour in this thread" in text_of(view)

    await home_click(bot, "U2", "tool_approve_grant", message.button_value("tool_approve"))
    await bot.slack.wait_for("chat.stopStream")
    (grant,) = await bot.storage.grants.live()
    assert grant.granted_by == "U2" and not grant.same_arguments
    (granted,) = [e for e in await bot.storage.audit_log.entries() if e.action == "granted"]
    assert (granted.actor, granted.via) == ("U2", "home")
