"""Bad input found from outside (issue 41): each is refused with a 4xx and a plain word (or, in a Slack
form, an error in the form), never a 500 or a traceback, and it loses nothing: the call that waited still
waits and is decided afterwards. Through the real Bolt app and the HTTP API, on SQLite and PostgreSQL
(where `varchar(n)` refuses what SQLite would keep)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import aiohttp
import pytest
from slack_sdk.signature import SignatureVerifier

from bot.agent import Agent
from bot.demo.tools import build_demo_tools
from bot.slack.decisions import UNKNOWN
from bot.slack.listeners.actions._click import NOT_OPENED
from bot.slack_emulator.app_requests import action_of, block_actions, event_callback
from bot.slack_emulator.workspace import Channel
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool

from .harness import (
    MODEL,
    SIGNING_SECRET,
    RunningBot,
    ask_to_delete,
    decide_path,
    modal_values,
    opened_policy_modal,
    record_ids,
    request,
    running_bot,
    waiting_call,
)

pytestmark = pytest.mark.both_databases  # the column limits bite on PostgreSQL only

LONG_PERSON = "U" + "A" * 9000
"""A person ID of 9,001 characters: `users.info` cannot even be asked about it (the URL is too long)."""


def tracebacks(caplog) -> list[str]:
    return [r.getMessage()[:300] for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def approved_and_ran(bot: RunningBot, message) -> None:
    """The waiting approval is still there to decide: a click by U2 runs the tool."""
    bot.slack.calls.clear()
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]


# --- the HTTP API -------------------------------------------------------------------------------


async def test_a_person_id_of_9001_characters_is_a_400_and_the_call_can_still_be_decided(
    api_bot: RunningBot, model, caplog
):
    caplog.set_level(logging.DEBUG)
    ask_to_delete(model)
    await api_bot.mention("supprime l'enregistrement 3, s'il te plaît — 请删除")
    message = await api_bot.approval_message()
    run_id, call_id = await waiting_call(api_bot)

    for what, body in (
        ("approve", {"approver": LONG_PERSON}),
        ("decline", {"approver": LONG_PERSON, "reason": "نه"}),
        ("approve", {"approver": "U" + "B" * 40}),  # fits the API's column, not a Slack user ID
    ):
        status, answer = await request(api_bot, "POST", decide_path(run_id, call_id, what), body=body)
        assert status == 400, (what, status, answer)
        assert "Traceback" not in json.dumps(answer)
    status, answer = await request(
        api_bot, "POST", "/api/agents/demo-agent/decisions",
        body={"approver": LONG_PERSON, "decisions": [{"runId": run_id, "toolCallId": call_id, "action": "approve"}]},
    )  # fmt: skip
    assert status == 400 and "longer than 255 characters" in answer["error"]
    assert tracebacks(caplog) == []
    assert (await api_bot.agent.get_tool_call(run_id, call_id)).state == "awaiting_approval"

    model.chat.push(reply("Deleted record 3."))
    status, answer = await request(api_bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U2"})
    assert status == 200 and answer["status"] == "approved"
    await api_bot.slack.wait_for("chat.stopStream")
    assert await record_ids(api_bot) == [1, 2, 4, 5]
    assert "Approved" in message.all_text


async def test_an_escalation_target_longer_than_its_column_is_refused_by_the_api_and_the_home(
    admin_bot: RunningBot, model, caplog
):
    bot = admin_bot
    caplog.set_level(logging.DEBUG)
    ask_to_delete(model)
    await bot.mention("レコード3を削除して")
    message = await bot.approval_message()
    target = "S" + "A" * 40  # the shape of a user-group ID, 41 characters: the column holds 32

    status, answer = await request(
        bot, "PATCH", "/api/policies/delete-record", body={"escalateTo": target, "escalateAfter": 600}
    )
    assert status == 400 and "at most 32 characters" in answer["error"], answer

    modal = await opened_policy_modal(bot, "delete-record")
    values = {
        **modal_values(),
        "policy_escalate_to": {"value": {"type": "plain_text_input", "value": target}},
        "policy_escalate_after": {"value": {"type": "plain_text_input", "value": "600"}},
    }
    status, body = await bot.sender.submit(modal, values, user="U1")
    assert status == 200
    errors = json.loads(body)
    assert errors["response_action"] == "errors" and "at most 32 characters" in errors["errors"]["policy_escalate_to"]

    policy = await bot.storage.policies.get("delete-record")
    assert policy.escalate_to is None and policy.version == 0  # nothing was stored
    assert tracebacks(caplog) == []
    model.chat.push(reply("Deleted record 3."))
    await approved_and_ran(bot, message)


# --- signed Slack events ------------------------------------------------------------------------


async def post_signed(bot: RunningBot, body: str, content_type: str) -> tuple[int, str, dict[str, str]]:
    """A request signed as Slack signs it, with its status, body and headers."""
    timestamp = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(timestamp=timestamp, body=body)
    headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}
    async with aiohttp.ClientSession() as session, session.post(bot.url, data=body.encode(), headers=headers) as answer:
        return answer.status, await answer.text(), dict(answer.headers)


def overlong_events(bot: RunningBot, thread_ts: str) -> dict[str, dict[str, Any]]:
    def mention(**event: Any) -> dict[str, Any]:
        return {**bot.sender.mention("عرض السجلات 列出记录", thread_ts=thread_ts), **event}

    return {
        "event_id": {**event_callback(mention()), "event_id": "Ev" + "X" * 98},
        "team_id": {**event_callback(mention()), "team_id": "T" + "X" * 39},
        "event.ts": event_callback(mention(ts="1" * 29 + ".000000000")),
        "event.user": event_callback(mention(user="U" + "X" * 39)),
        "event.channel": event_callback(mention(channel="C" + "X" * 39)),
    }


async def test_a_signed_event_with_an_overlong_id_is_a_400_slack_does_not_retry(bot: RunningBot, model, caplog):
    caplog.set_level(logging.DEBUG)
    ask_to_delete(model)
    event = await bot.mention("delete record 3 — 删除记录三")
    message = await bot.approval_message()

    for name, body in overlong_events(bot, event["ts"]).items():
        status, text, headers = await post_signed(bot, json.dumps(body), "application/json")
        assert status == 400, (name, status, text)
        assert headers.get("X-Slack-No-Retry") == "1" and headers["Content-Type"].startswith("text/plain")
        assert "must be shorter than" in text and "Traceback" not in text, text
    assert tracebacks(caplog) == []
    assert not [c for c in bot.slack.calls if c.method in ("chat.postMessage", "chat.startStream")][1:]

    model.chat.push(reply("Deleted record 3."))
    await approved_and_ran(bot, message)


# --- nesting in Slack forms ---------------------------------------------------------------------

DEEP_5000 = "[" * 5000 + "]" * 5000
DEEP_3000 = "[" * 3000 + "]" * 3000


def colour_agent(storage):
    """The demo agent with a tool that asks which colour, from a list (a select in the answer form)."""

    async def pick_colour(_input: Any, ctx) -> Any:
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Quelle couleur ? 什么颜色？"})
        return {"colour": ctx.agent.resume_data["colour"]}

    colour = create_tool(
        id="pick-colour",
        description="Paint with a colour the user picks",
        input_schema={"type": "object", "properties": {}},
        resume_schema={
            "type": "object",
            "properties": {"colour": {"enum": ["rouge", "青", "أزرق"]}},
            "required": ["colour"],
        },
        execute=pick_colour,
    )
    return Agent(id="demo-agent", model=MODEL, tools=[*build_demo_tools(storage), colour])


async def test_an_answer_form_value_nested_5000_deep_stays_in_the_form(database_url, slack, model, caplog):
    caplog.set_level(logging.DEBUG)
    model.chat.push(tool_calls(call("pick-colour", {}, id="call_1")))
    async with running_bot(database_url=database_url, slack=slack, agent_factory=colour_agent) as bot:
        await bot.mention("paint it — 塗って")
        question = await bot.question_message()
        await bot.sender.click(question, "tool_answer", user="U1")
        view = (await slack.wait_for("views.open"))[0].params["view"]
        block = next(b for b in view["blocks"] if b["type"] == "input")
        options = block["element"]["options"]

        forged = {block["block_id"]: {"value": {"type": "static_select", "selected_option": {"value": DEEP_5000}}}}
        status, body = await bot.sender.submit(view, forged)
        assert status == 200
        answer = json.loads(body)
        assert answer["response_action"] == "errors" and block["block_id"] in answer["errors"]
        assert tracebacks(caplog) == []
        assert question.action_ids() == ["tool_answer", "tool_question_cancel"]

        chosen = next(o for o in options if o["text"]["text"] == "青")
        model.chat.push(reply("Peint en 青."))
        picked = {block["block_id"]: {"value": {"type": "static_select", "selected_option": chosen}}}
        status, body = await bot.sender.submit(view, picked)
        assert (status, body) == (200, "")
        await slack.wait_for("chat.stopStream")
        tool_message = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
        assert json.loads(tool_message["content"]) == {"colour": "青"}


async def test_a_bulk_form_with_metadata_nested_3000_deep_decides_nothing(bot: RunningBot, model, caplog):
    caplog.set_level(logging.DEBUG)
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()

    forged = {"type": "modal", "callback_id": "home_bulk_decline_reason", "private_metadata": DEEP_3000, "blocks": []}
    status, _ = await bot.sender.submit(forged, {}, user="U2")
    assert status == 200  # a modal's submission is acked; what it decided is said in the Home
    await bot.slack.settle()
    assert tracebacks(caplog) == []
    assert message.action_ids()[0] == "tool_approve" and await record_ids(bot) == [1, 2, 3, 4, 5]

    model.chat.push(reply("Deleted record 3."))
    await approved_and_ran(bot, message)


# --- forged buttons -----------------------------------------------------------------------------


@pytest.mark.parametrize("action_id", ["tool_question_decline", "tool_question_url"])
async def test_a_question_button_its_message_does_not_show_is_refused_with_a_word(
    bot: RunningBot, model, caplog, action_id
):
    caplog.set_level(logging.DEBUG)
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))
    await bot.mention("quel temps fait-il ? 天気は？")
    question = await bot.question_message()
    ref = action_of(question, "tool_answer")["value"]

    await bot.sender.click(question, action_id, user="U1", value=ref)
    ephemeral = await bot.slack.wait_for("chat.postEphemeral")
    assert ephemeral[0].params["user"] == "U1" and ephemeral[0].params["text"] == UNKNOWN
    await bot.slack.settle()
    assert tracebacks(caplog) == []
    assert question.action_ids() == ["tool_answer", "tool_question_cancel"]
    run_id = (await bot.agent.list_suspended_runs()).runs[0].run_id
    assert (await bot.agent.get_tool_call(run_id, "call_1")).state == "suspended"

    await bot.sender.click(question, "tool_answer", user="U1")
    view = (await bot.slack.wait_for("views.open"))[0].params["view"]
    model.chat.push(reply("Il fait beau à 東京."))
    status, body = await bot.sender.submit(
        view, {"field:city": {"value": {"type": "plain_text_input", "value": "東京"}}}
    )
    assert (status, body) == (200, "")
    await bot.slack.wait_for("chat.stopStream")
    assert (await bot.agent.get_tool_call(run_id, "call_1")).state == "done"


async def test_a_click_whose_trigger_slack_refuses_is_told_and_decides_nothing(bot: RunningBot, model, caplog):
    """Decline with reason opens a modal with the click's trigger_id; a forged one (or one past Slack's 3
    seconds) makes views.open fail: the clicker is told so, and the call still waits."""
    caplog.set_level(logging.DEBUG)
    ask_to_delete(model)
    await bot.mention("delete record 3 — 삭제")
    message = await bot.approval_message()
    button = action_of(message, "tool_decline_with_reason")
    payload = block_actions("U2", message, button, channel=Channel(id="C1", name="general"), trigger_id="forged")
    status, _ = await bot.sender.interaction(payload)
    assert status == 200
    ephemeral = await bot.slack.wait_for("chat.postEphemeral")
    assert ephemeral[0].params["user"] == "U2" and ephemeral[0].params["text"] == NOT_OPENED
    assert tracebacks(caplog) == []
    assert message.action_ids()[0] == "tool_approve" and await record_ids(bot) == [1, 2, 3, 4, 5]

    model.chat.push(reply("Deleted record 3."))
    await approved_and_ran(bot, message)
