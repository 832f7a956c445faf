"""An admin's rules in Slack, through the real Bolt app: a condition on the arguments sends one call to
approval and lets another run at once, its rule on the approval message and in the audit trail; a rule
names its own approvers; a condition that cannot be evaluated fails safe; a trial rule changes nothing."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest

from memory import PolicyChange
from tests.support.processes import bot_command
from tests.support.scripted_model import call, reply, tool_calls

from .harness import (
    RunningBot,
    home_of,
    modal_values,
    open_home,
    opened_policy_modal,
    refused_click,
    request,
    text_of,
)

pytestmark = pytest.mark.both_databases

TOKYO_NEEDS_APPROVAL = {"condition": 'args.city == "東京"', "effect": "require_approval", "name": "東京チーム"}


def ask_weather(model, city: str | None, id: str = "call_1") -> None:
    model.chat.push(tool_calls(call("get-weather", {"city": city} if city else {}, id=id)), reply("天気です。"))


async def test_a_rule_on_an_argument_asks_for_one_call_and_runs_another_at_once(bot: RunningBot, model):
    await bot.storage.policies.set("get-weather", PolicyChange(rules=[TOKYO_NEEDS_APPROVAL]))
    ask_weather(model, "パリ")
    await bot.mention("パリの天気は?")
    await bot.slack.wait_for("chat.stopStream")
    assert not [c for c in bot.slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params.get("blocks"))]

    ask_weather(model, "東京", id="call_2")
    await bot.mention("東京の天気は?")
    message = await bot.approval_message()
    assert 'Needs 東京チーム: args.city == "東京"' in message.all_text

    entries = [e for e in await bot.storage.audit_log.entries() if e.action != "policy_changed"]
    ran, asked = entries[0], next(e for e in entries if e.action == "requested" and "東京チーム" in (e.detail or ""))
    assert ran.action == "executed" and asked.detail.startswith("rule 1: Needs 東京チーム")


async def test_a_rule_names_its_own_approvers(bot: RunningBot, model):
    big_refund = {"condition": "args.amount > 100.0", "effect": "require_approval", "name": "finance",
                  "approvers": ["U9"]}  # fmt: skip
    await bot.storage.policies.set("issue-refund", PolicyChange(rules=[big_refund]))
    model.chat.push(
        tool_calls(call("issue-refund", {"order_id": "株式会社テスト-7", "amount": 150}, id="call_1")),
        reply("返金しました。"),
    )
    await bot.mention("株式会社テストに150ドル返金して")
    message = await bot.approval_message()
    shown = html.unescape(message.all_text)  # what Slack renders of the mrkdwn
    assert "Needs finance: args.amount > 100.0" in shown and "Who may approve: <@U9>" in shown
    assert "Only <@U9> may decide `issue-refund`" in await refused_click(bot, message, "U2")
    (waiting,) = (await bot.agent.list_suspended_runs()).runs[0].tool_calls  # what the HTTP API lists
    assert waiting.rule == "rule 1: Needs finance: args.amount > 100.0"
    await open_home(bot, "U9")
    home = text_of(await home_of(bot, "U9"))
    assert "Needs finance: args.amount > 100.0" in html.unescape(home)
    await bot.sender.click(message, "tool_approve", user="U9")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Approved" in message.all_text


async def test_a_condition_that_cannot_be_evaluated_fails_safe(bot: RunningBot, model):
    await bot.storage.policies.set("get-weather", PolicyChange(rules=[TOKYO_NEEDS_APPROVAL]))
    ask_weather(model, None)  # no city: `args.city` cannot be read
    await bot.mention("天気は?")
    message = await bot.approval_message()
    assert "could not be evaluated" in message.all_text
    asked = next(e for e in await bot.storage.audit_log.entries() if e.action == "requested")
    assert "rule 1 (東京チーム) could not be evaluated" in asked.detail and "city" in asked.detail


async def test_a_trial_rule_changes_nothing_and_is_audited(bot: RunningBot, model):
    await bot.storage.policies.set("get-weather", PolicyChange(rules=[{**TOKYO_NEEDS_APPROVAL, "trial": True}]))
    ask_weather(model, "東京")
    await bot.mention("東京の天気は?")
    await bot.slack.wait_for("chat.stopStream")
    assert not [c for c in bot.slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params.get("blocks"))]
    actions = [(e.action, e.detail) for e in await bot.storage.audit_log.entries() if e.action != "policy_changed"]
    assert ("would_require", 'trial rule 1: Needs 東京チーム: args.city == "東京"') in actions
    assert "executed" in [a for a, _ in actions]
    code, out, err = await bot_command("policy", "list", database_url=bot.storage.url)
    assert code == 0, err
    assert "trial since version 1: would_require 1, would_allow 0, would_refuse 0" in out


async def test_rules_through_the_http_api_and_a_bad_one_refused_in_one_line(api_bot: RunningBot):
    path = "/api/policies/issue-refund"
    bad = [
        (
            {"condition": "args.amont > 100.0", "effect": "refuse"},
            "rule 1 (args.amont > 100.0): args has no field 'amont'",
        ),
        ({"condition": "args.amount >", "effect": "refuse"}, "syntax error"),
        ({"condition": "args.amount > 1.0", "effect": "maybe"}, "unknown effect 'maybe'"),
        ({"condition": "args.amount > 1.0", "effect": "refuse", "colour": "red"}, "unknown field 'colour'"),
    ]
    for rule, error in bad:
        status, answer = await request(api_bot, "PATCH", path, body={"rules": [rule]})
        assert status == 400 and error in answer["error"] and "\n" not in answer["error"], (rule, answer)
    status, answer = await request(api_bot, "PATCH", path, body={"rules": "args.amount > 1.0"})
    assert status == 400 and "rules must be a list of objects" in answer["error"]

    rule = {
        "condition": 'args.order_id.startsWith("株式会社テスト")',
        "effect": "require_approval",
        "approvers": ["U9"],
    }
    status, policy = await request(api_bot, "PATCH", path, body={"rules": [rule]})
    assert status == 200 and policy["rules"] == [rule] and policy["version"] == 1
    changed = [e for e in await api_bot.storage.audit_log.entries() if e.action == "policy_changed"]
    assert [(e.via, e.before["rules"], e.after["rules"]) for e in changed] == [("api", [], [rule])]


async def test_four_eyes_and_expiry_hold_for_a_call_a_rule_sent_to_approval(bot: RunningBot, model, clock):
    await bot.storage.policies.set(
        "get-weather", PolicyChange(rules=[TOKYO_NEEDS_APPROVAL], approvals_required=2, expires_after=900)
    )
    ask_weather(model, "東京")
    await bot.mention("東京の天気は?", user="U1")
    message = await bot.approval_message()
    assert "0 of 2 approvals" in message.all_text and "東京チーム" in message.all_text
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts and "1 of 2" in str(c.params))

    clock.advance(901)
    assert len(await bot.agent.expire_waiting_approvals()) == 1
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts and "Expired" in str(c.params))
    actions = [e.action for e in await bot.storage.audit_log.entries() if e.run_id]
    assert actions == ["requested", "approved", "expired"]


async def test_a_running_bot_follows_a_file_applied_from_elsewhere_at_once(bot: RunningBot, model, tmp_path):
    file = tmp_path / "policies.yaml"
    file.write_text(
        'policies:\n  get-weather:\n    rules:\n    - condition: args.city == "東京"\n      effect: refuse\n',
        encoding="utf-8",
    )
    code, out, err = await bot_command("policy", "apply", str(file), database_url=bot.storage.url)
    assert code == 0 and "get-weather: rule 1 added" in out, err
    ask_weather(model, "東京")
    await bot.mention("東京の天気は?")
    await bot.slack.wait_for("chat.stopStream")
    blocked = [e for e in await bot.storage.audit_log.entries() if e.action == "blocked"]
    assert len(blocked) == 1 and "an admin's rule refused the call" in blocked[0].detail
    assert "executed" not in [e.action for e in await bot.storage.audit_log.entries()]


async def test_a_trial_allow_rule_is_audited_and_the_call_still_waits(bot: RunningBot, model):
    paris = {"condition": 'args.city == "パリ"', "effect": "allow", "trial": True}
    await bot.storage.policies.set("get-weather", PolicyChange(mode="require_approval", rules=[paris]))
    ask_weather(model, "パリ")
    await bot.mention("パリの天気は?")
    message = await bot.approval_message()
    assert "パリ" in message.all_text
    actions = [e.action for e in await bot.storage.audit_log.entries() if e.run_id]
    assert actions == ["would_allow", "requested"]


async def test_an_admin_adds_orders_and_removes_rules_in_the_home_form(home_bot: RunningBot):
    await home_bot.storage.policies.set("issue-refund", PolicyChange(rules=[{"condition": "true", "effect": "allow"}]))
    view = await opened_policy_modal(home_bot, "issue-refund")
    rules_field = next(b for b in view["blocks"] if b["block_id"] == "policy_rules")
    assert rules_field["element"]["initial_value"] == "if true then allow"

    def values(rules: str) -> dict[str, Any]:
        return {**modal_values(), "policy_rules": {"value": {"type": "plain_text_input", "value": rules}}}

    for rules, error in [
        ("if args.amont > 100.0 then refuse", "rule 1 (args.amont > 100.0): args has no field 'amont'"),
        ("when args.amount > 1.0 refuse", "line 1: write `if CONDITION then allow|require_approval|refuse`"),
        ("if true then allow\nif args.amount > 100 then refuse", "rule 2 (args.amount > 100): args.amount is a double"),
    ]:
        status, body = await home_bot.sender.submit(view, values(rules), user="U1")
        assert status == 200 and error in json.loads(body)["errors"]["policy_rules"], (rules, body)
    assert (await home_bot.storage.policies.get("issue-refund")).version == 1  # nothing changed

    wanted = (
        "if args.order_id.startsWith(\"株式会社テスト\") then refuse (named '取引停止') [trial]\n"
        "if args.amount > 100.0 then require_approval by U9 (named 'finance')"
    )
    status, body = await home_bot.sender.submit(view, values(wanted), user="U1")
    assert status == 200 and not body
    policy = await home_bot.storage.policies.get("issue-refund")
    assert [(r.effect, r.name, r.approvers, r.trial) for r in policy.rules] == [
        ("refuse", "取引停止", (), True),
        ("require_approval", "finance", ("U9",), False),
    ]
    change = [e for e in await home_bot.storage.audit_log.entries() if e.action == "policy_changed"][-1]
    assert (change.actor, change.via, change.before["rules"], len(change.after["rules"])) == (
        "U1", "home", [{"condition": "true", "effect": "allow"}], 2,
    )  # fmt: skip


async def test_a_standing_grant_covers_later_calls_a_rule_sends_to_approval(bot: RunningBot, model):
    await bot.storage.policies.set("get-weather", PolicyChange(rules=[TOKYO_NEEDS_APPROVAL], grant_seconds=3600))
    ask_weather(model, "東京")
    event = await bot.mention("東京の天気は?")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_approve_grant", user="U2")
    await bot.slack.wait_for("chat.stopStream")

    ask_weather(model, "東京", id="call_2")
    await bot.say("もう一度、東京の天気は?", user="U1", thread_ts=event["ts"])
    await bot.slack.wait_for("chat.stopStream", count=2)
    approvals = [c for c in bot.slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params.get("blocks"))]
    assert len(approvals) == 1  # the second call ran under the grant
    actions = [e.action for e in await bot.storage.audit_log.entries() if e.run_id]
    assert actions[-3:] == ["requested", "grant_used", "executed"]


async def test_arguments_too_large_for_a_rule_fail_safe(bot: RunningBot, model):
    await bot.storage.policies.set("get-weather", PolicyChange(rules=[TOKYO_NEEDS_APPROVAL]))
    ask_weather(model, "東" * 70_000)
    await bot.mention("天気は?")
    await bot.approval_message()
    asked = next(e for e in await bot.storage.audit_log.entries() if e.action == "requested")
    assert "could not be evaluated (the arguments are" in asked.detail and "a rule reads at most 64000" in asked.detail
