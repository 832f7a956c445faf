"""The App Home tab: each user's approvals (with buttons that act as the thread's), and an admin's
tool policies with a modal to change them."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from bot.slack.services import services_of_app
from memory import PolicyChange
from tests.support.waiting import until

from .harness import (
    RunningBot,
    ask_to_delete,
    home_click,
    home_of,
    open_home,
    published,
    record_ids,
    running_bot,
    text_of,
)


def buttons(view: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (element["action_id"], element.get("value"))
        for block in view["blocks"]
        for element in (block.get("elements", []) if block["type"] == "actions" else [block.get("accessory") or {}])
        if element.get("type") == "button"
    ]


async def test_an_admin_sees_the_tool_policies_and_a_non_admin_does_not(home_bot: RunningBot):
    await open_home(home_bot, "U1")
    admin_view = await home_of(home_bot, "U1")
    assert admin_view["type"] == "home"
    text = text_of(admin_view)
    assert "Tool policies" in text and "`delete-record`" in text and "`list-records`" in text
    assert ("policy_edit", "delete-record") in buttons(admin_view)

    await open_home(home_bot, "U2")
    member_view = await home_of(home_bot, "U2")
    # a member's only button is the one anyone has: hand their approvals to someone while away
    assert "Tool policies" not in text_of(member_view) and buttons(member_view) == [("delegation_open", "open")]
    assert "Nothing is waiting for your decision" in text_of(member_view)

    # opened again with nothing changed (what was published for U2 is recorded): nothing is published again
    home_views = services_of_app(home_bot.app).stores.home_views

    async def recorded() -> bool:
        return await home_views.digest("U2") is not None

    await until(recorded, what="the bot to record the Home it published for U2")
    await open_home(home_bot, "U2")
    await home_bot.slack.settle()
    assert len(published(home_bot, "U2")) == 1


async def test_approvals_waiting_for_you_are_decided_from_the_home(home_bot: RunningBot, model):
    await home_bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    await open_home(home_bot, "U2")
    await open_home(home_bot, "U3")
    await home_of(home_bot, "U2")
    ask_to_delete(model)
    await home_bot.mention("delete record 3", user="U1")
    message = await home_bot.approval_message()

    view = await home_of(home_bot, "U2", count=2)  # refreshed because an approval for U2 appeared
    assert "Waiting for your decision" in text_of(view) and "`delete-record` requested by <@U1>" in text_of(view)
    ref = message.button_value("tool_approve")
    assert ("tool_approve", ref) in buttons(view)
    await home_bot.slack.settle()
    assert len(published(home_bot, "U3")) == 1  # U3 is no approver: their Home did not change

    await home_click(home_bot, "U2", "tool_approve", ref)
    await home_bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Approved" in message.all_text and "<@U2>" in message.all_text
    await home_bot.slack.wait_for("chat.stopStream")
    assert await record_ids(home_bot) == [1, 2, 4, 5]
    view = await home_of(home_bot, "U2", count=3)
    assert "Nothing is waiting for your decision" in text_of(view)


async def test_a_home_click_the_policy_refuses_changes_nothing_and_says_why(home_bot: RunningBot, model):
    await home_bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    ask_to_delete(model)
    await home_bot.mention("delete record 3", user="U1")
    message = await home_bot.approval_message()
    await home_click(home_bot, "U3", "tool_approve", message.button_value("tool_approve"))
    # answered where the click was made: in U3's Home, naming who may decide as a person
    await home_bot.slack.wait_for("views.publish", lambda c: "Only <@U2>" in str(c.params.get("view")))
    view = published(home_bot, "U3")[-1]
    assert "Only <@U2> may decide `delete-record` requests." in text_of(view)
    await home_bot.slack.settle()
    assert home_bot.slack.calls_of("chat.postEphemeral") == []  # not in the thread
    assert home_bot.slack.calls_of("chat.update") == []
    assert await record_ids(home_bot) == [1, 2, 3, 4, 5]


async def test_an_admin_changes_a_policy_in_the_modal(home_bot: RunningBot):
    await open_home(home_bot, "U1")
    await home_of(home_bot, "U1")
    await home_click(home_bot, "U1", "policy_edit", "delete-record")
    opened = await home_bot.slack.wait_for("views.open")
    view = opened[-1].params["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert view["callback_id"] == "policy_modal" and view["private_metadata"] == "delete-record"

    def values(approvers: str, expiry: str) -> dict[str, Any]:
        return {
            "policy_mode": {"value": {"type": "static_select", "selected_option": {"value": "require_approval"}}},
            "policy_approvers": {"value": {"type": "plain_text_input", "value": approvers}},
            "policy_self_approval": {"value": {"type": "checkboxes", "selected_options": []}},
            "policy_expiry": {"value": {"type": "plain_text_input", "value": expiry}},
        }

    status, body = await home_bot.sender.submit(view, values("bob", "60"), user="U1")
    assert status == 200 and "not a Slack user or user-group ID: bob" in json.loads(body)["errors"]["policy_approvers"]
    status, body = await home_bot.sender.submit(view, values("U2", "soon"), user="U1")
    assert "whole number of seconds" in json.loads(body)["errors"]["policy_expiry"]
    status, body = await home_bot.sender.submit(view, values("U2,S1", "60"), user="U2")  # not an admin
    assert "Only admins" in json.loads(body)["errors"]["policy_mode"]
    assert (await home_bot.storage.policies.get("delete-record")).version == 0

    status, body = await home_bot.sender.submit(view, values("U2, S1", "60"), user="U1")
    assert status == 200 and not body
    policy = await home_bot.storage.policies.get("delete-record")
    assert (str(policy.mode), policy.approvers, policy.self_approval, policy.expires_after, policy.version) == (
        "require_approval",
        ("U2", "S1"),
        False,
        60,
        1,
    )
    assert policy.updated_by == "U1"
    refreshed = await home_bot.slack.wait_until(
        lambda: next((v for v in published(home_bot, "U1") if "<@U2>, <!subteam^S1>" in text_of(v)), None),
        what="the admin's Home showing the new policy",
    )
    assert "after 60 s" in text_of(refreshed)


async def test_a_non_admin_cannot_open_the_policy_modal(home_bot: RunningBot):
    await open_home(home_bot, "U2")
    await home_of(home_bot, "U2")
    await home_click(home_bot, "U2", "policy_edit", "delete-record")
    await home_bot.slack.settle()
    assert home_bot.slack.calls_of("views.open") == []


async def test_without_bot_admins_the_workspace_admins_are_the_admins(bot: RunningBot):
    # in the emulated workspace U1 is an admin (users.info says so) and U2 is not
    await open_home(bot, "U1")
    assert "Tool policies" in text_of(await home_of(bot, "U1"))
    await open_home(bot, "U2")
    assert "Tool policies" not in text_of(await home_of(bot, "U2"))
    assert {call.params["user"] for call in bot.slack.calls_of("users.info")} >= {"U1", "U2"}


async def test_a_rate_limited_home_is_published_after_retry_after(home_bot: RunningBot):
    home_bot.slack.fail("views.publish", status=429, retry_after=1)
    started = time.monotonic()
    await open_home(home_bot, "U2")
    view = await home_of(home_bot, "U2")  # only successful calls are recorded
    assert time.monotonic() - started >= 1.0
    assert [method for method, _ in home_bot.slack.failed] == ["views.publish"]
    assert "Nothing is waiting for your decision" in text_of(view)


@pytest.mark.both_databases
async def test_a_home_opened_on_one_replica_is_refreshed_by_another(database_url, slack, model):
    async with (
        running_bot(database_url=database_url, slack=slack) as first,
        running_bot(database_url=database_url, slack=slack) as second,
    ):
        await first.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
        await open_home(first, "U2")  # U2 opens their Home through the first replica
        await home_of(first, "U2")
        ask_to_delete(model)
        await second.mention("delete record 3", user="U1")  # the request goes to the second
        view = await home_of(second, "U2", count=2)
        assert "`delete-record` requested by <@U1>" in text_of(view)
        await services_of_app(second.app).home.settled()  # its digest stored
        await open_home(second, "U2")  # opened again, nothing new: not published again
        await slack.settle()
        assert len(published(first, "U2")) == 2
