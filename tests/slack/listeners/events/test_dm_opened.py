"""Opening the bot's DM (the agent view: `app_home_opened` with `tab == "messages"`) offers suggested
prompts made from the agent's tools and, in an empty DM, a greeting; reopening it does not greet again."""

from __future__ import annotations

from bot.slack_emulator.app_requests import app_home_opened_event

from ...harness import RunningBot


async def test_opening_the_dm_offers_prompts_from_the_tools_and_greets_once(bot: RunningBot):
    event = {**app_home_opened_event("U1", "messages"), "channel": "D1"}
    assert (await bot.sender.event(event))[0] == 200
    [prompts] = await bot.slack.wait_for("assistant.threads.setSuggestedPrompts")
    assert prompts.ok and prompts.params["channel_id"] == "D1"
    titles = [p["title"] for p in prompts.params["prompts"]]
    assert titles == ["list-records", "delete-record", "issue-refund", "get-weather"]
    assert prompts.params["prompts"][0]["message"] == "list the records in the database (id and title)"
    [greeting] = await bot.slack.wait_for("chat.postMessage", lambda c: c.params.get("channel") == "D1")
    assert "Hi <@U1>!" in greeting.params["text"] and "`delete-record`" in greeting.params["text"]

    assert (await bot.sender.event({**app_home_opened_event("U1", "messages"), "channel": "D1"}))[0] == 200
    await bot.slack.wait_for("assistant.threads.setSuggestedPrompts", count=2)
    await bot.slack.settle()
    assert len([c for c in bot.slack.calls_of("chat.postMessage") if c.params.get("channel") == "D1"]) == 1
    assert bot.slack.calls_of("views.publish") == []  # the Home tab is not what was opened
