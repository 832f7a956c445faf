"""Malformed requests at `/slack/events`, signed or not: each gets a 4xx and one log line without a
traceback, and the bot goes on answering (issue 17, item 9)."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.slack.modal_builder import EDIT_ARGS_CALLBACK
from bot.slack_emulator.app_requests import event_callback

from .harness import RunningBot

DEEP = "[" * 100_000 + "]" * 100_000
CLICK = {
    "type": "block_actions",
    "user": {"id": "U1"},
    "team": {"id": "T1"},
    "trigger_id": "t-1",
    "container": {"type": "message", "message_ts": "1.0", "channel_id": "C1"},
    "channel": {"id": "C1"},
    "message": {"ts": "1.0", "blocks": []},
    "actions": [{"type": "button", "action_id": "tool_approve", "block_id": "b", "value": "x"}],
}
SUBMISSION = {
    "type": "view_submission",
    "user": {"id": "U1"},
    "team": {"id": "T1"},
    "view": {"id": "V1", "callback_id": EDIT_ARGS_CALLBACK, "private_metadata": "x", "state": {"values": {}}},
}


def _without(payload: dict[str, Any], *path: str) -> dict[str, Any]:
    copy = json.loads(json.dumps(payload))
    inner = copy
    for key in path[:-1]:
        inner = inner[key]
    del inner[path[-1]]
    return copy


def _form(payload: Any) -> str:
    return urlencode({"payload": payload if isinstance(payload, str) else json.dumps(payload)})


def _event(**event: Any) -> str:
    return json.dumps(event_callback({"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1.0", **event}))


JSON = "application/json"
FORM = "application/x-www-form-urlencoded"

# (id, content type, body, extra headers, signed, the status it must get)
MALFORMED = [
    ("nested-100k-json", JSON, DEEP, {}, False, 400),
    ("nested-100k-payload", FORM, _form(DEEP), {}, False, 400),
    ("nested-100k-object", JSON, '{"a":' * 100_000 + "1" + "}" * 100_000, {}, True, 400),
    (
        "timestamp-abc",
        JSON,
        '{"type": "url_verification", "challenge": "c"}',
        {"X-Slack-Request-Timestamp": "abc"},
        False,
        401,
    ),
    (
        "timestamp-5000-digits",
        JSON,
        '{"type": "url_verification"}',
        {"X-Slack-Request-Timestamp": "9" * 5000},
        False,
        401,
    ),
    ("event-timestamp-abc", JSON, _event(text="hi"), {"X-Slack-Request-Timestamp": "abc"}, False, 401),
    ("invalid-utf8", JSON, b'{"type": "url_verification", "challenge": "\xff\xfe"}', {}, True, 400),
    ("view-submission-without-state", FORM, _form(_without(SUBMISSION, "view", "state")), {}, True, 400),
    ("view-submission-without-user", FORM, _form(_without(SUBMISSION, "user")), {}, True, 400),
    ("view-submission-user-without-id", FORM, _form({**SUBMISSION, "user": {}}), {}, True, 400),
    (
        "view-submission-state-a-list",
        FORM,
        _form({**SUBMISSION, "view": {**SUBMISSION["view"], "state": []}}),
        {},
        True,
        400,
    ),
    ("block-actions-without-actions", FORM, _form({**CLICK, "actions": []}), {}, True, 400),
    ("block-actions-action-a-string", FORM, _form({**CLICK, "actions": ["tool_approve"]}), {}, True, 400),
    ("block-actions-without-user", FORM, _form(_without(CLICK, "user")), {}, True, 400),
    ("block-actions-message-a-string", FORM, _form({**CLICK, "message": "hi"}), {}, True, 400),
    ("event-a-list", JSON, json.dumps({**event_callback({"type": "x"}), "event": []}), {}, True, 400),
    ("event-text-a-number", JSON, _event(text=5), {}, True, 400),
    (
        "event-authorizations-a-string",
        JSON,
        json.dumps({**json.loads(_event(text="hi")), "authorizations": "x"}),
        {},
        True,
        400,
    ),
]


@pytest.mark.parametrize(
    ("content_type", "body", "headers", "signed", "expected"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
async def test_a_malformed_request_gets_a_4xx_and_no_traceback(
    bot: RunningBot, content_type, body, headers, signed, expected, caplog
):
    caplog.set_level(logging.DEBUG)
    raw = body if isinstance(body, bytes) else body.encode()
    status = await _post(bot, raw, content_type=content_type, headers=headers, signed=signed)
    assert status == expected
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], [
        r.getMessage()[:300] for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR
    ]
    # the bot still works afterwards
    good = json.dumps({"type": "url_verification", "challenge": "c-1"})
    assert (await bot.sender.post(good, content_type="application/json"))[0] == 200


@pytest.mark.parametrize(("signed", "expected"), [(True, 200), (False, 401)], ids=["signed", "unsigned"])
async def test_a_bogus_charset_is_ignored_the_body_is_read_as_utf8(bot: RunningBot, signed, expected, caplog):
    """Slack's bodies are UTF-8; a Content-Type naming a charset Python does not know was a 500."""
    caplog.set_level(logging.DEBUG)
    body = json.dumps({"type": "url_verification", "challenge": "défi-挑战"}, ensure_ascii=False).encode()
    status = await _post(bot, body, content_type=JSON + "; charset=no-such-charset", headers={}, signed=signed)
    assert status == expected
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def _post(bot: RunningBot, raw: bytes, *, content_type: str, headers: dict[str, str], signed: bool) -> int:
    import time

    timestamp = str(int(time.time()))
    signature = "v0=" + "0" * 64
    if signed:
        # the signature over the raw bytes, as Slack computes it
        import hashlib
        import hmac

        from .harness import SIGNING_SECRET

        base = b"v0:" + timestamp.encode() + b":" + raw
        signature = "v0=" + hmac.new(SIGNING_SECRET.encode(), base, hashlib.sha256).hexdigest()
    all_headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature,
        **headers,
    }
    async with aiohttp.ClientSession() as session, session.post(bot.url, data=raw, headers=all_headers) as response:
        await response.read()
        return response.status
