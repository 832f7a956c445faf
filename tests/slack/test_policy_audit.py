"""Every change of who may do what leaves a trace (issue 17, item 3), and the policy modal keeps the
command line's rules (items 4 and 10), through the real Bolt app, the HTTP API and `python -m bot`,
on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from bot.slack.home_builder import build_policy_modal
from bot.slack.translator import translator
from memory import PolicyChange, ToolPolicy
from tests.support.processes import bot_command
from tests.support.scripted_model import call, reply, tool_calls

from .harness import (
    RunningBot,
    ask_to_delete,
    decide_path,
    home_click,
    modal_values,
    opened_policy_modal,
    record_ids,
    request,
    waiting_call,
)


async def test_policy_changes_refusals_and_blocked_calls_are_audited(admin_bot: RunningBot, model):
    # the admin U1 names the approvers of delete-record in the Home
    view = await opened_policy_modal(admin_bot, "delete-record")
    status, body = await admin_bot.sender.submit(view, modal_values(approvers="U2", expiry="600"), user="U1")
    assert (status, body) == (200, "")

    # U1 asks; U3 clicks Approve (refused), the API names U7 (refused), U2 approves
    ask_to_delete(model)
    await admin_bot.mention("delete record 3", user="U1")
    message = await admin_bot.approval_message()
    await admin_bot.sender.click(message, "tool_approve", user="U3")
    await admin_bot.slack.wait_for("chat.postEphemeral")
    run_id, call_id = await waiting_call(admin_bot)
    assert (await request(admin_bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U7"}))[
        0
    ] == 403
    await admin_bot.sender.click(message, "tool_approve", user="U2")
    await admin_bot.slack.wait_for("chat.stopStream")

    # issue-refund is disabled on the command line; then the model calls it
    code, out, err = await bot_command(
        "policy", "set", "issue-refund", "--mode", "disabled", database_url=admin_bot.storage.url
    )
    assert code == 0, err
    model.chat.push(
        tool_calls(call("issue-refund", {"order_id": "A-1", "amount": 30}, id="call_r")),
        reply("Refunds are turned off here."),
    )
    await admin_bot.mention("refund order A-1 $30", user="U3")
    await admin_bot.slack.wait_for("chat.stopStream", count=2)

    entries = await admin_bot.storage.audit_log.entries()
    lines = [(e.action, e.tool_name, e.actor, e.via) for e in entries]
    assert lines == [
        ("policy_changed", "delete-record", "U1", "home"),
        ("requested", "delete-record", "U1", "runtime"),
        ("refused", "delete-record", "U3", "button"),
        ("refused", "delete-record", "U7", "api"),
        ("approved", "delete-record", "U2", "button"),
        ("executed", "delete-record", "system", "runtime"),
        ("policy_changed", "issue-refund", "system", "cli"),
        ("blocked", "issue-refund", "U3", "runtime"),
    ]
    home_change, _, by_button, by_api, _, _, cli_change, blocked = entries
    assert home_change.run_id is None and home_change.policy_version == 1
    assert home_change.before == ToolPolicy(tool_name="delete-record").fields()
    assert home_change.after == {
        "mode": "inherit", "approvers": ["U2"], "self_approval": True, "expires_after": 600,
        "approvals_required": 1, "grant_seconds": None, "escalate_to": None, "escalate_after": None, "rules": [],
        "undo_seconds": 300, "version": 1,
    }  # fmt: skip
    assert (cli_change.before["mode"], cli_change.after["mode"]) == ("inherit", "disabled")
    assert cli_change.detail.startswith("command line: ")
    assert by_button.detail == "approve: Only U2 may decide delete-record requests." and by_button.policy_version == 1
    assert by_api.detail == "approve: Only U2 may decide delete-record requests." and by_api.run_id == run_id
    assert blocked.policy_version == 1 and "disabled" in blocked.detail

    # `python -m bot audit` shows the changes: jsonl with before/after, and a table naming what changed
    code, out, err = await bot_command("audit", "--format", "jsonl", database_url=admin_bot.storage.url)
    assert code == 0, err
    printed = [json.loads(line) for line in out.splitlines()]
    assert printed[0]["action"] == "policy_changed" and printed[0]["after"]["approvers"] == ["U2"]
    assert printed[0]["run_id"] is None and printed[0]["before"]["approvers"] == []
    code, out, err = await bot_command("audit", "--tool", "issue-refund", database_url=admin_bot.storage.url)
    assert code == 0, err
    assert 'mode "inherit" -> "disabled"' in out.splitlines()[1]


async def test_the_policy_modal_refuses_what_the_command_line_refuses(admin_bot: RunningBot):
    view = await opened_policy_modal(admin_bot, "delete-record")
    for values, block, expected in [
        (modal_values(expiry="²"), "policy_expiry", "not a whole number of seconds"),  # a 500 before
        (modal_values(expiry="1" * 30), "policy_expiry", "more than 365 days"),  # a 500 before
        (modal_values(expiry="100000000000"), "policy_expiry", "more than 365 days"),  # stored before
        (modal_values(expiry="-1"), "policy_expiry", "negative"),
        (modal_values(approvers="S1,bob"), "policy_approvers", "not a Slack user or user-group ID: bob"),
    ]:
        status, body = await admin_bot.sender.submit(view, values, user="U1")
        assert status == 200, (values, status, body)
        errors = json.loads(body)["errors"]
        assert expected in errors[block], errors

    # a modal for a tool the agent does not have (a forged private_metadata): refused like `policy set`
    forged = build_policy_modal(ToolPolicy(tool_name="no-such-tool"), translator("en"))
    status, body = await admin_bot.sender.submit(forged, modal_values(mode="disabled"), user="U1")
    assert status == 200
    assert "unknown tool 'no-such-tool'" in json.loads(body)["errors"]["policy_mode"]
    assert await admin_bot.storage.policies.all() == []
    assert await admin_bot.storage.audit_log.entries() == []


async def test_a_refused_click_in_the_home_is_audited_as_home(admin_bot: RunningBot, model):
    await admin_bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    ask_to_delete(model)
    await admin_bot.mention("delete record 3", user="U1")
    message = await admin_bot.approval_message()
    await home_click(admin_bot, "U3", "tool_approve", message.button_value("tool_approve"))
    await admin_bot.slack.wait_for("views.publish", lambda c: "Only <@U2>" in str(c.params.get("view")))
    await admin_bot.slack.settle()
    refused = [e for e in await admin_bot.storage.audit_log.entries() if e.action == "refused"]
    assert [(e.actor, e.via) for e in refused] == [("U3", "home")]
    assert await record_ids(admin_bot) == [1, 2, 3, 4, 5]
