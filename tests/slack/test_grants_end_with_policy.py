"""A standing grant holds only under the policy it was given under, through the real Bolt app on SQLite and
PostgreSQL: a change of the grant time, the mode, the approvers (whether made in the App Home's policy form,
through the HTTP API or with `python -m bot policy set`) ends every live grant of the tool at once, so
changing it back never revives one; each ended grant is audited `grant_revoked` once, by `system`, with the
reason. A change of what only governs waiting calls (the expiry, the escalation) keeps the grants."""

from __future__ import annotations

import json

import pytest

from memory import PolicyChange
from tests.support.processes import bot_command
from tests.support.scripted_model import call, reply, tool_calls

from .harness import API_TOKEN as TOKEN
from .harness import (
    RunningBot,
    ask_to_delete,
    home_click,
    home_of,
    open_home,
    record_ids,
    request,
    running_bot,
    text_of,
)

# the grants end in the policy change's own transaction (UPDATE ... RETURNING): a storage matter
pytestmark = pytest.mark.both_databases

GRANT = "tool_approve_grant"
ADMIN = "U9"


@pytest.fixture
async def bot(database_url, slack, model, clock):
    async with running_bot(
        database_url=database_url, slack=slack, clock=clock, admins=(ADMIN,), api_token=TOKEN
    ) as running:
        await running.storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
        yield running


async def granted(bot: RunningBot, model) -> dict:
    """U1 asks to delete record 3 in a new thread, U2 approves it with a grant; the mention's event."""
    ask_to_delete(model)
    event = await bot.mention("删除第 3 条记录 (delete record 3)")
    message = await bot.approval_message()
    await bot.sender.click(message, GRANT, user="U2")
    await bot.slack.wait_for("chat.stopStream")
    assert "Approved" in message.all_text
    assert [grant.granted_by for grant in await bot.storage.grants.live()] == ["U2"]
    return event


async def next_call_asks(bot: RunningBot, model, event: dict, record_id: int) -> bool:
    """U1 asks to delete `record_id` in the grant's thread: True if an approval message was posted for it,
    False if it ran without asking (the record is gone)."""
    before = approval_posts(bot)
    model.chat.push(
        tool_calls(call("delete-record", {"id": record_id}, id=f"call_{record_id}")),
        reply(f"记录 {record_id} 已删除。"),
    )
    turns = len(bot.slack.calls_of("chat.stopStream"))
    await bot.say(f"レコード {record_id} も削除して", user="U1", thread_ts=event["ts"])
    await bot.slack.wait_until(
        lambda: approval_posts(bot) > before or len(bot.slack.calls_of("chat.stopStream")) > turns
    )
    await bot.slack.settle()
    asked = approval_posts(bot) > before
    assert asked == (record_id in await record_ids(bot))
    return asked


def approval_posts(bot: RunningBot) -> int:
    return len([c for c in bot.slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params.get("blocks"))])


async def revocations(bot: RunningBot) -> list:
    return [e for e in await bot.storage.audit_log.entries() if e.action == "grant_revoked"]


def form_values(
    *, mode: str = "inherit", grants: str = "3600", expiry: str = "", escalate_to: str = "", escalate_after: str = ""
) -> dict:
    """Every field of the Home's policy form, as an admin submits it (the form always sends them all)."""

    def text(value: str) -> dict:
        return {"value": {"type": "plain_text_input", "value": value}}

    return {
        "policy_mode": {"value": {"type": "static_select", "selected_option": {"value": mode}}},
        "policy_approvers": text(""),
        "policy_self_approval": {"value": {"type": "checkboxes", "selected_options": [{"value": "allowed"}]}},
        "policy_expiry": text(expiry),
        "policy_approvals_required": text("1"),
        "policy_grant_seconds": text(grants),
        "policy_escalate_to": text(escalate_to),
        "policy_escalate_after": text(escalate_after),
    }


async def submit_policy_form(bot: RunningBot, values: dict) -> None:
    """The admin opens the policy form of delete-record in the Home and submits `values`."""
    opened = len(bot.slack.calls_of("views.open"))
    await open_home(bot, ADMIN)
    await home_click(bot, ADMIN, "policy_edit", "delete-record")
    view = (await bot.slack.wait_for("views.open", count=opened + 1))[-1].params["view"]
    view = json.loads(view) if isinstance(view, str) else view
    status, body = await bot.sender.submit(view, values, user=ADMIN)
    assert (status, body) == (200, "")


async def test_grant_time_zero_then_back_ends_the_grant_for_good(bot, model):
    event = await granted(bot, model)
    (grant,) = await bot.storage.grants.live()
    await submit_policy_form(bot, form_values(grants="0"))
    await submit_policy_form(bot, form_values(grants="60"))
    assert (await bot.storage.policies.get("delete-record")).grant_seconds == 60
    assert await next_call_asks(bot, model, event, 4)
    assert await bot.storage.grants.live() == []

    # a Revoke button left on a Home from before: the grant had ended, and is not ended twice
    await home_click(bot, "U2", "grant_revoke", grant.id)
    await bot.slack.wait_for(  # said in the Home, where the click was
        "views.publish", lambda c: c.params.get("user_id") == "U2" and "had already ended" in str(c.params["view"])
    )
    (revoked,) = await revocations(bot)
    assert (revoked.actor, revoked.via, revoked.tool_call_id) == ("system", "home", grant.tool_call_id)
    assert grant.id in revoked.detail and "the tool's policy changed: grant time 3600 s -> 0" in revoked.detail
    assert revoked.policy_version == 2  # the version that ended it; it was given under version 1

    # the granter's Home no longer offers to revoke it: it is gone
    publishes = len([c for c in bot.slack.calls_of("views.publish") if c.params.get("user_id") == "U2"])
    await open_home(bot, "U2")
    assert "Revoke" not in text_of(await home_of(bot, "U2", count=publishes))


async def test_disabling_and_enabling_the_tool_through_the_api_ends_the_grant(bot, model):
    event = await granted(bot, model)
    await open_home(bot, "U2")
    assert "Revoke" in text_of(await home_of(bot, "U2"))  # the granter's Home lists the grant
    for mode in ("disabled", "inherit"):
        status, body = await request(bot, "PATCH", "/api/policies/delete-record", body={"mode": mode})
        assert status == 200, body
    # the opened Home is refreshed: the grant is gone from it
    await bot.slack.wait_for(
        "views.publish", lambda c: c.params.get("user_id") == "U2" and "Revoke" not in str(c.params.get("view"))
    )
    assert await next_call_asks(bot, model, event, 4)
    status, body = await request(bot, "GET", "/api/agents/demo-agent/grants")
    assert (status, body["grants"]) == (200, [])
    (revoked,) = await revocations(bot)
    assert (revoked.actor, revoked.via) == ("system", "api")
    assert "mode inherit -> disabled" in revoked.detail


async def test_a_change_of_approvers_on_the_command_line_ends_every_grant_once(bot, model, database_url):
    first = await granted(bot, model)
    # a second grant of the same tool, in another thread
    ask_to_delete(model, 5)
    await bot.mention("delete record 5")
    message = await bot.approval_message(count=2)
    await bot.sender.click(message, GRANT, user="U2")
    await bot.slack.wait_for("chat.stopStream", count=2)
    grants = await bot.storage.grants.live()
    assert len(grants) == 2

    code, out, err = await bot_command(
        "policy", "set", "delete-record", "--approvers", "U2,U3", database_url=database_url
    )  # fmt: skip
    assert code == 0, err
    code, out, err = await bot_command("policy", "set", "delete-record", "--approvers", "", database_url=database_url)
    assert code == 0, err
    assert await next_call_asks(bot, model, first, 4)
    assert await bot.storage.grants.live() == []

    revoked = await revocations(bot)
    assert sorted(e.tool_call_id for e in revoked) == sorted(g.tool_call_id for g in grants)  # one line each
    for entry in revoked:
        assert (entry.actor, entry.via) == ("system", "cli")
        assert "approvers anyone in the conversation -> U2, U3" in entry.detail


async def test_a_change_of_expiry_or_escalation_keeps_the_grant(bot, model):
    event = await granted(bot, model)
    await submit_policy_form(bot, form_values(expiry="600", escalate_to="C2", escalate_after="60"))
    status, body = await request(bot, "PATCH", "/api/policies/delete-record", body={"grantSeconds": 3600})
    assert status == 200, body  # the same grant time again changes nothing a grant rests on
    policy = await bot.storage.policies.get("delete-record")
    assert (policy.expires_after, policy.escalate_to, policy.version) == (600, "C2", 3)
    assert len(await bot.storage.grants.live()) == 1
    assert not await next_call_asks(bot, model, event, 4)
    assert await revocations(bot) == []
    assert "grant_used" in [e.action for e in await bot.storage.audit_log.entries()]
