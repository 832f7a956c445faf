"""`GET /metrics`: what an operator's Prometheus scrapes, before and after one approval cycle."""

from __future__ import annotations

import copy

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot


async def scrape(bot: RunningBot) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the scrape, by name and labels."""
    url = bot.url.replace("/slack/events", "/metrics")
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_one_approval_cycle_moves_the_counters(bot: RunningBot, model):
    before = await scrape(bot)
    assert value(before, "bot_approvals_waiting") == 0

    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    await bot.mention("delete record 2")
    message = await bot.approval_message()
    waiting = await scrape(bot)
    assert value(waiting, "bot_approvals_waiting") == 1  # counted in the database at scrape time

    stale = copy.deepcopy(message)  # as a second user's screen still shows it
    bot.slack.fail("chat.update", status=500)  # one failed attempt, retried by the client
    assert (await bot.sender.click(message, "tool_approve", user="U2"))[0] == 200
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    # a second click on the same message decides nothing
    assert (await bot.sender.click(stale, "tool_approve", user="U3"))[0] == 200
    await bot.slack.wait_for("chat.postEphemeral")
    after = await scrape(bot)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert value(after, "bot_approvals_waiting") == 0
    assert moved("bot_decisions_total", outcome="approved") == 1
    assert moved("bot_decision_wait_seconds_count", kind="approval") == 1
    assert moved("bot_refused_clicks_total", reason="already_decided") == 1
    assert moved("bot_slack_api_errors_total", method="chat.update", error="fatal_error") == 1
