"""A trial rule counted in the admin's App Home: next to the rule, how many calls it would have changed since
the policy's last change, from the audit trail's `would_*` lines, through the real Bolt app."""

from __future__ import annotations

import html

import pytest

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot, home_of, open_home, text_of

pytestmark = pytest.mark.both_databases


async def ask_weather(bot: RunningBot, model, city: str, id: str, count: int) -> None:
    model.chat.push(tool_calls(call("get-weather", {"city": city}, id=id)), reply("天気です。"))
    await bot.mention(f"{city}の天気は?")
    await bot.slack.wait_for("chat.stopStream", count=count)


async def test_each_trial_rule_is_counted_next_to_it_in_the_admins_home(home_bot: RunningBot, model):
    rules = [
        {"condition": 'args.city == "東京"', "effect": "require_approval", "name": "東京チーム", "trial": True},
        {"condition": 'args.city == "서울"', "effect": "refuse", "trial": True},
        {"condition": 'args.city == "القاهرة"', "effect": "allow"},
    ]
    await home_bot.storage.policies.set("get-weather", PolicyChange(rules=rules))
    for count, (city, id) in enumerate([("東京", "a"), ("パリ", "b"), ("東京", "c"), ("서울", "d")], 1):
        await ask_weather(home_bot, model, city, id, count)

    await open_home(home_bot, "U1")
    shown = html.unescape(text_of(await home_of(home_bot, "U1")))
    lines = shown.splitlines()
    tokyo = next(line for line in lines if line.startswith("1. Needs 東京チーム"))
    assert "_trial_: would have changed 2 calls since v1 (2 would have waited for approval)" in tokyo
    seoul = next(line for line in lines if line.startswith("2. Refused by refusal"))
    assert "_trial_: would have changed 1 call since v1 (1 would have been refused)" in seoul
    cairo = next(line for line in lines if line.startswith("3. Allowed by no approval"))
    assert "trial" not in cairo

    await open_home(home_bot, "U2")  # not an admin: no policies, no counts
    assert "trial" not in text_of(await home_of(home_bot, "U2"))
