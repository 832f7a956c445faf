"""The HTTP endpoint: Slack's URL verification, signature checks, and a health check."""

from __future__ import annotations

import json
import logging

import aiohttp
import pytest

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


BAD_BODIES = [
    ("application/json", "{not json"),
    ("application/json", "[1, 2]"),
    ("application/x-www-form-urlencoded", "payload=%7Bnot+json"),
    ("application/x-www-form-urlencoded", "payload=%5B1%5D"),
]


@pytest.mark.parametrize(("content_type", "body"), BAD_BODIES)
@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
async def test_a_malformed_request_gets_a_400_and_one_log_line(bot: RunningBot, content_type, body, signed, caplog):
    caplog.set_level(logging.DEBUG)
    signature = None if signed else "v0=" + "0" * 64
    status, _ = await bot.sender.post(body, content_type=content_type, signature=signature)
    assert status == 400
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(problems) == 1, [r.getMessage() for r in problems]
    assert problems[0].exc_info is None and "malformed" in problems[0].getMessage()
    # the bot still works afterwards
    good = json.dumps({"type": "url_verification", "challenge": "c-1"})
    assert (await bot.sender.post(good, content_type="application/json"))[0] == 200
