"""The HTTP endpoint: Slack's URL verification, signature checks, and a health check."""

from __future__ import annotations

import json

import aiohttp

from .harness import RunningBot


async def test_url_verification_answers_the_challenge(bot: RunningBot):
    body = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "t"})
    status, text = await bot.sender.post(body, content_type="application/json")
    assert status == 200 and "c-123" in text


async def test_requests_with_a_bad_or_old_signature_are_refused(bot: RunningBot, model):
    body = json.dumps({"type": "url_verification", "challenge": "c-123"})
    status, _ = await bot.sender.post(body, content_type="application/json", signature="v0=" + "0" * 64)
    assert status == 401
    stale = {"X-Slack-Request-Timestamp": "1000000000"}
    status, _ = await bot.sender.post(body, content_type="application/json", headers=stale)
    assert status == 401


async def test_health(bot: RunningBot):
    async with aiohttp.ClientSession() as session, session.get(bot.url.replace("/slack/events", "/health")) as r:
        assert r.status == 200 and (await r.json()) == {"ok": True}
