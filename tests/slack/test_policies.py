"""Tool policies in Slack, through the real Bolt app: who may click, self-approval, a disabled tool,
and a policy changed with `python -m bot policy set` while the bot runs."""

from __future__ import annotations

import asyncio
import os
import sys

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot, ask_to_delete, record_ids, refused_click


async def test_only_the_named_approvers_may_decide(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9"]))
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    for action_id in ("tool_approve", "tool_decline", "tool_edit_args"):
        assert "Only <@U9> may decide `delete-record`" in await refused_click(bot, message, "U2", action_id)

    await bot.sender.click(message, "tool_approve", user="U9")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Approved" in message.all_text and "<@U9>" in message.all_text
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_self_approval_refused_but_another_person_may(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(self_approval=False))
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    assert "does not let you approve your own request" in await refused_click(bot, message, "U1")

    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_a_disabled_tool_cannot_be_approved_but_can_be_declined(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.storage.policies.set("delete-record", PolicyChange(mode="disabled"))  # while it waits
    assert "An admin disabled `delete-record`" in await refused_click(bot, message, "U2")

    await bot.sender.click(message, "tool_decline", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Declined" in message.all_text
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_policy_set_on_the_command_line_then_a_click_the_new_policy_refuses(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "policy", "set", "delete-record", "--approvers", "U9",
        env={**os.environ, "DATABASE_URL": bot.storage.url},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert "approvers U9" in out.decode()

    assert "Only <@U9>" in await refused_click(bot, message, "U2")
    await bot.sender.click(message, "tool_approve", user="U9")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]


async def test_approvers_by_user_group(bot: RunningBot, model):
    # S1 ("leads") is U1 and U2 in the emulated workspace
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["S1"]))
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U3")
    message = await bot.approval_message()
    assert "Only <!subteam^S1> may decide" in await refused_click(bot, message, "U7")
    assert "Only <!subteam^S1> may decide" in await refused_click(bot, message, "U9")

    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
    lookups = bot.slack.calls_of("usergroups.users.list")
    assert lookups and all(call.params["usergroup"] == "S1" for call in lookups)
    assert len(lookups) == 1  # cached: three checks, one lookup


async def test_a_group_slack_cannot_resolve_refuses_the_click_and_says_so(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["S404"]))
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    explanation = await refused_click(bot, message, "U2")
    assert "could not read the members of user group S404" in explanation and "Nothing was changed" in explanation


async def test_the_audit_rows_of_one_whole_cycle_in_slack(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"], self_approval=False))
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    await refused_click(bot, message, "U1")  # a refused click changes nothing but leaves its line
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")

    policy_line, *entries = await bot.storage.audit_log.entries()
    assert (policy_line.action, policy_line.run_id, policy_line.after["approvers"]) == ("policy_changed", None, ["U2"])
    assert [(e.action, e.actor, e.via, e.policy_version, e.tool_name) for e in entries] == [
        ("requested", "U1", "runtime", 1, "delete-record"),
        ("refused", "U1", "button", 1, "delete-record"),
        ("approved", "U2", "button", 1, "delete-record"),
        ("executed", "system", "runtime", None, "delete-record"),
    ]
    assert len({e.args_fingerprint for e in entries}) == 1 and len({e.run_id for e in entries}) == 1


async def test_an_expired_approval_says_so_and_a_later_click_changes_nothing(bot: RunningBot, model, clock):
    await bot.storage.policies.set("delete-record", PolicyChange(expires_after=60))
    model.chat.push(
        tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Nobody approved it in time, so I did not.")
    )
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    ref = message.button_value("tool_approve")
    assert await bot.agent.expire_waiting_approvals() == []  # not yet
    clock.advance(60.5)
    assert len(await bot.agent.expire_waiting_approvals()) == 1

    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert message.action_ids() == [] and "Expired" in message.all_text
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Nobody approved it in time, so I did not."

    await bot.sender.click(message, "tool_approve", user="U2", value=ref)  # a client that still shows the button
    ephemeral = await bot.slack.wait_for("chat.postEphemeral")
    assert "This request expired" in ephemeral[-1].params["text"]
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
