"""A quick fuzz of the boundary (issue 41): every route of the HTTP API and the Slack endpoint get bodies
a bot must expect from outside (invalid UTF-8, a bogus charset, deep nesting, numbers too big to read,
fields missing or of another type, ids longer than their columns), and none is ever a 500 or a
traceback; the approval that waited meanwhile still waits and is decided afterwards. Mutations come from
a fixed seed, so a failure names its case and comes back. On SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import logging
import random
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.slack_emulator import Modal
from bot.slack_emulator.app_requests import (
    app_home_opened_event,
    block_actions,
    event_callback,
    home_block_actions,
    view_submission,
)
from bot.slack_emulator.workspace import Channel
from memory import PolicyChange
from tests.support.scripted_model import reply

from .harness import AUTH, SIGNING_SECRET, RunningBot, ask_to_delete, decide_path, record_ids, waiting_call

pytestmark = pytest.mark.both_databases

DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000
BIG = "9" * 5000
"""An integer Python refuses to read (more than 4,300 digits)."""
HUGE = "1" + "0" * 400
"""A float too big to be finite (read as infinity) where a fraction or exponent makes it one."""
JSON_BODIES: list[tuple[str, bytes]] = [
    ("invalid-utf8", b'{"approver": "\xff\xfe", "resumedBy": "\xc3("}'),
    ("deep-array", DEEP.encode()),
    ("deep-object", DEEP_OBJECT.encode()),
    ("deep-value", ('{"approver": "U3", "resumeData": ' + DEEP + ', "reason": ' + DEEP + "}").encode()),
    ("big-integer", ('{"approver": "U3", "grant": {"seconds": ' + BIG + "}}").encode()),
    ("huge-float", ('{"approver": "U3", "resumeData": {"city": ' + HUGE + "e10}}").encode()),
    ("huge-seconds", ('{"approver": "U3", "grant": {"seconds": ' + HUGE + "}}").encode()),
    ("huge-expiry", ('{"expiresAfter": ' + HUGE + ', "approvalsRequired": ' + HUGE + "}").encode()),
    ("nan", b'{"approver": "U3", "resumeData": {"city": NaN}, "escalateAfter": Infinity}'),
    ("empty", b""),
    ("null", b"null"),
    ("list", b"[]"),
    ("string", b'"U3"'),
    ("missing-fields", b"{}"),
    ("wrong-types", b'{"approver": 5, "resumedBy": ["U3"], "decisions": "all", "grant": "yes", "approvers": [1]}'),
    ("decisions-missing", b'{"approver": "U3", "decisions": [{}, {"runId": 5}, null]}'),
    ("long-people", json.dumps({"approver": "U" + "A" * 9000, "revokedBy": "W" * 300, "actor": "U" * 300}).encode()),
    ("long-policy", json.dumps({"escalateTo": "C" + "A" * 300, "approvers": ["S" + "A" * 9000]}).encode()),
    ("long-approvers", json.dumps({"approvers": ["U2", "S" + "A" * 9000]}).encode()),
]
CONTENT_TYPES = ["application/json", "application/json; charset=no-such-charset", "text/plain; charset=utf-16"]


def api_routes(run_id: str, call_id: str) -> list[tuple[str, str]]:
    agent = "/api/agents/demo-agent"
    long_id = "r" * 300
    return [
        ("POST", decide_path(run_id, call_id, "approve")),
        ("POST", decide_path(run_id, call_id, "decline")),
        ("POST", decide_path(run_id, call_id, "resume")),
        ("POST", decide_path(long_id, call_id, "approve")),
        ("POST", decide_path(run_id, long_id, "resume")),
        ("POST", decide_path("run%00%ED%A0%80", call_id, "decline")),
        ("POST", f"{agent}/decisions"),
        ("POST", f"{agent}/grants/{long_id}/revoke"),
        ("POST", f"{agent}/grants/g%00/revoke"),
        ("PATCH", "/api/policies/delete-record"),
        ("PATCH", f"/api/policies/{'t' * 300}"),
        ("GET", f"{agent}/suspended-runs?page={BIG[:40]}&perPage=%FF&threadId={'x' * 300}"),
        ("GET", f"{agent}/grants?grantedBy={'U' * 300}"),
        ("GET", "/api/policies"),
    ]


def tracebacks(caplog) -> list[str]:
    return [r.getMessage()[:300] for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


@pytest.fixture
async def fuzzed_bot(admin_bot: RunningBot, model) -> RunningBot:
    """The bot (HTTP API, U1 an admin) with an approval waiting that only U2 may decide: the fuzz
    speaks as U3, so a body that is valid after all decides nothing."""
    await admin_bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    ask_to_delete(model)
    await admin_bot.mention("supprime 3 — 删除三号记录")
    await admin_bot.approval_message()
    model.chat.push(*[reply("D'accord — 好的.") for _ in range(60)])  # for mentions a mutation leaves valid
    return admin_bot


async def test_no_api_route_answers_bad_input_with_a_500(fuzzed_bot: RunningBot, model, caplog):
    bot = fuzzed_bot
    caplog.set_level(logging.INFO)
    run_id, call_id = await waiting_call(bot)
    answers = []
    async with aiohttp.ClientSession() as session:
        for method, path in api_routes(run_id, call_id):
            for name, body in JSON_BODIES:
                for content_type in CONTENT_TYPES:
                    headers = {**AUTH, "Content-Type": content_type}
                    async with session.request(method, bot.base_url + path, data=body, headers=headers) as answer:
                        text = await answer.text()
                        answers.append((answer.status, method, path[:60], name, content_type, text[:200]))
    server_errors = [a for a in answers if a[0] >= 500]
    assert server_errors == [], server_errors[:5]
    assert not [a for a in answers if "Traceback" in a[-1]]
    assert tracebacks(caplog) == []
    await still_decidable(bot, run_id, call_id)


async def still_decidable(bot: RunningBot, run_id: str, call_id: str) -> None:
    assert (await bot.agent.get_tool_call(run_id, call_id)).state == "awaiting_approval"
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    bot.slack.calls.clear()
    status, _ = await aiohttp_post(bot, decide_path(run_id, call_id, "approve"), {"approver": "U2"})
    assert status == 200
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]


async def aiohttp_post(bot: RunningBot, path: str, body: Any) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(bot.base_url + path, json=body, headers=AUTH) as answer,
    ):
        return answer.status, await answer.text()


# --- the Slack endpoint -------------------------------------------------------------------------

ODD_VALUES: list[Any] = [None, 5, 1.5, True, [], {}, "", "x" * 5000, "٣", "\ud800", "<@U1>", ["U1"], {"id": "U1"}]


def paths_of(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a key or an item in `value`, but not inside Block Kit blocks (the bot's own message,
    echoed back: they would take most of the sample)."""
    if path and path[-1] == "blocks":
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from paths_of(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index)
            yield from paths_of(item, (*path, index))


def mutated(payload: dict[str, Any], path: tuple[Any, ...], change: Any) -> dict[str, Any]:
    """`payload` with the key or item at `path` removed (`change` is `DELETE`) or replaced by `change`."""
    copied = copy.deepcopy(payload)
    parent: Any = copied
    for step in path[:-1]:
        parent = parent[step]
    if change is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = change
    return copied


DELETE = object()


def slack_cases(bot: RunningBot, message) -> list[tuple[str, str, str]]:
    """(name, content type, body) of each fuzzed request: mutations of real payloads of every kind the
    bot handles, by U3 (whom the policy does not let decide), and raw bodies no payload parses to."""
    channel = Channel(id="C1", name="general")
    payloads: dict[str, dict[str, Any]] = {}
    for action in ("tool_approve", "tool_decline", "tool_decline_with_reason", "tool_edit_args"):
        button = next(e for b in message.blocks for e in b.get("elements", []) if e.get("action_id") == action)
        payloads[action] = block_actions("U3", message, button, channel=channel, trigger_id="t-1")
    ref = next(e for b in message.blocks for e in b.get("elements", []) if e.get("action_id") == "tool_approve")
    for action in ("tool_answer", "tool_question_decline", "tool_question_url", "feedback_up"):
        payloads[action] = block_actions(
            "U3", message, {"type": "button", "action_id": action, "value": ref["value"]}, channel=channel,
            trigger_id="t-1",
        )  # fmt: skip
    home_action = {"type": "button", "action_id": "home_bulk_decline", "value": "home_bulk_decline"}
    payloads["home"] = home_block_actions("U3", {"blocks": []}, home_action, trigger_id="t-2")
    for callback in ("tool_answer", "tool_decline_reason", "tool_edit_args", "home_bulk_decline_reason", "policy"):
        modal = Modal(
            id="V1", user="U3", view={"callback_id": callback, "private_metadata": ref["value"], "blocks": []}
        )
        values = {"field:city": {"value": {"type": "plain_text_input", "value": "東京"}}}
        payloads[f"view:{callback}"] = view_submission(modal, values, trigger_id="t-3")
    payloads["mention"] = event_callback(bot.sender.mention("عرض السجلات", thread_ts=message.thread_ts))
    payloads["home_opened"] = event_callback(app_home_opened_event("U3"))

    rng = random.Random(41)
    cases = []
    for kind, payload in payloads.items():
        paths = list(paths_of(payload))
        for path in rng.sample(paths, min(len(paths), 20)):
            change = rng.choice([DELETE, *ODD_VALUES])
            changed = mutated(payload, path, change)
            name = f"{kind}:{'/'.join(map(str, path))}={'<deleted>' if change is DELETE else repr(change)[:20]}"
            if kind in ("mention", "home_opened"):
                cases.append((name, "application/json", json.dumps(changed)))
            else:
                cases.append((name, "application/x-www-form-urlencoded", urlencode({"payload": json.dumps(changed)})))
    raw_payloads = [DEEP, DEEP_OBJECT, '{"type": "block_actions", "n": ' + BIG + "}", '{"type": 1e999}', "[]", "null"]
    for raw in raw_payloads:
        cases.append((f"payload:{raw[:20]}", "application/x-www-form-urlencoded", urlencode({"payload": raw})))
        cases.append((f"json:{raw[:20]}", "application/json", raw))
    cases.append(("form-without-payload", "application/x-www-form-urlencoded", "token=x&team_id=T1"))
    cases.append(("bogus-charset", "application/json; charset=no-such-charset", json.dumps(payloads["mention"])))
    return cases


async def post_signed(session: aiohttp.ClientSession, bot: RunningBot, body: bytes, content_type: str):
    timestamp = str(int(time.time()))
    base = b"v0:" + timestamp.encode() + b":" + body  # as Slack signs the raw bytes, UTF-8 or not
    signature = "v0=" + hmac.new(SIGNING_SECRET.encode(), base, hashlib.sha256).hexdigest()
    headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}
    async with session.post(bot.url, data=body, headers=headers) as answer:
        return answer.status, await answer.text()


async def test_the_slack_endpoint_never_answers_bad_input_with_a_500(fuzzed_bot: RunningBot, model, caplog):
    bot = fuzzed_bot
    caplog.set_level(logging.INFO)
    message = await bot.approval_message()
    run_id, call_id = await waiting_call(bot)
    answers = []
    async with aiohttp.ClientSession() as session:
        for name, content_type, body in slack_cases(bot, message):
            raw = body.encode("utf-8", "surrogatepass")
            status, text = await post_signed(session, bot, raw, content_type)
            answers.append((status, name, text[:200]))
        status, text = await post_signed(session, bot, b'{"type": "event_callback", "x": "\xff"}', "application/json")
        answers.append((status, "invalid-utf8", text[:200]))
    await bot.slack.settle()
    server_errors = [a for a in answers if a[0] >= 500]
    assert server_errors == [], server_errors[:5]
    assert not [a for a in answers if "Traceback" in a[-1]]
    assert tracebacks(caplog) == []
    await still_decidable(bot, run_id, call_id)
