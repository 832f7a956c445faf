"""An MCP server's question during a call (`elicitation/create`, form mode) is a suspension in the
thread: the question is posted with a form generated from `requestedSchema`, and the answer (in the
thread, or by the form) reaches the server as `accept` while its call is still live in this process."""

from __future__ import annotations

import json

import pytest

from memory import PolicyChange
from tests.support.scripted_model import call, reply, structured, tool_calls

from .servers import TITLE, configs, connected, stdio_entry, titles


@pytest.fixture
async def mcp_servers(tmp_path):
    async with connected(configs(tmp_path, {"tickets": stdio_entry()})) as servers:
        yield servers


async def ask_to_open_a_ticket(bot, model):
    """The model opens a ticket; it is approved; the server asks its question. Returns (event, question)."""
    model.chat.push(tool_calls(call("tickets__open_ticket", {"title": TITLE}, id="call_1")))
    event = await bot.mention("open a ticket: the printer is on fire")
    approval = await bot.approval_message()
    await bot.sender.click(approval, "tool_approve", user="U2")
    question = await bot.question_message()
    return event, question


async def test_the_question_is_a_suspension_with_the_servers_message_and_schema(bot, model):
    _, question = await ask_to_open_a_ticket(bot, model)
    assert "Choose its priority" in question.all_text and TITLE in question.all_text
    assert question.action_ids() == ["tool_answer", "tool_question_decline", "tool_question_cancel"]
    (run,) = (await bot.agent.list_suspended_runs()).runs
    (waiting,) = run.tool_calls
    assert waiting.tool_name == "tickets__open_ticket"
    assert waiting.suspend_payload["message"].startswith(f"Open a ticket “{TITLE}”?")
    schema = waiting.suspend_payload["requested_schema"]
    assert schema["properties"]["priority"]["enum"] == ["low", "medium", "high"]
    record = await bot.agent.get_tool_call(run.run_id, waiting.tool_call_id)
    assert record.resume_schema == schema and record.state == "suspended"


async def test_answered_in_the_thread_the_server_gets_accept_with_the_content(bot, model, mcp_servers):
    event, question = await ask_to_open_a_ticket(bot, model)
    model.structured.push(structured({"priority": "high", "confirm": "yes"}))
    model.chat.push(reply("Opened it."))
    await bot.say("high, and yes please open it", thread_ts=event["ts"])
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Opened it."
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    tool_result = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert "opened ticket 4 (high)" in tool_result["content"]
    assert TITLE in await titles(mcp_servers)


async def test_answered_by_the_form_the_server_gets_accept_with_the_content(bot, model, mcp_servers):
    _, question = await ask_to_open_a_ticket(bot, model)
    await bot.sender.click(question, "tool_answer", user="U1")
    opened = await bot.slack.wait_for("views.open")
    view = opened[0].params["view"]
    inputs = [block["block_id"] for block in view["blocks"] if block["type"] == "input"]
    assert inputs == ["field:priority", "field:confirm"]
    model.chat.push(reply("Opened, low priority."))
    low = {"text": {"type": "plain_text", "text": "low"}, "value": json.dumps("low")}
    await bot.sender.submit(
        view,
        {
            "field:priority": {"value": {"type": "static_select", "selected_option": low}},
            "field:confirm": {"value": {"type": "checkboxes", "selected_options": [{"value": "true"}]}},
        },
    )
    await bot.slack.wait_for("chat.stopStream")
    tool_result = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert "opened ticket 4 (low)" in tool_result["content"]
    assert TITLE in await titles(mcp_servers)


async def test_an_answer_that_says_no_reaches_the_server_and_nothing_is_opened(bot, model, mcp_servers):
    event, _ = await ask_to_open_a_ticket(bot, model)
    model.structured.push(structured({"priority": "low", "confirm": "no"}))
    model.chat.push(reply("I did not open it."))
    await bot.say("low, but no, do not open it", thread_ts=event["ts"])
    await bot.slack.wait_for("chat.stopStream")
    tool_result = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert "not opened: the user did not confirm" in tool_result["content"]
    assert TITLE not in await titles(mcp_servers)


@pytest.mark.parametrize(("button", "heard", "shown", "audited"), [
    ("tool_question_decline", "decline", "Declined by <@U1>", "answer_declined"),
    ("tool_question_cancel", "cancel", "Cancelled by <@U1>", "answer_cancelled"),
])  # fmt: skip
async def test_decline_and_cancel_tell_the_server_and_are_no_error(
    bot, model, mcp_servers, button, heard, shown, audited
):
    _, question = await ask_to_open_a_ticket(bot, model)
    ref = next(e["value"] for b in question.blocks if b["type"] == "actions" for e in b["elements"])
    model.chat.push(reply("D'accord, je ne l'ai pas ouvert."))
    await bot.sender.click(question, button, user="U1")
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "D'accord, je ne l'ai pas ouvert."
    tool_result = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert tool_result["content"] == f"not opened: the user chose {heard}"  # the server's own words, no error
    assert TITLE not in await titles(mcp_servers)
    updates = await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert shown in str(updates[-1].params["blocks"]) and "tool_question" not in str(updates[-1].params["blocks"])
    audit = await bot.storage.audit_log.entries(tool_name="tickets__open_ticket")
    (line,) = [a for a in audit if a.action.startswith("answer_")]
    assert (line.action, line.actor, line.via) == (audited, "U1", "button")
    await bot.sender.click(question, button, user="U1", value=ref)  # a stale client clicks again
    await bot.slack.wait_for("chat.postEphemeral", lambda c: "already answered" in c.params.get("text", ""))


async def test_a_question_nobody_answers_is_cancelled_at_the_tool_policys_expiry(bot, model, mcp_servers, clock):
    _, question = await ask_to_open_a_ticket(bot, model)
    # set once the question waits (an expiry would also apply to the approval before it)
    await bot.storage.policies.set("tickets__open_ticket", PolicyChange(expires_after=120))
    clock.advance(121)  # the storage's clock: two minutes pass
    model.chat.push(reply("Nobody answered, so I did not open it."))
    stops = await bot.slack.wait_for("chat.stopStream")
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "Nobody answered, so I did not open it."
    tool_result = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert tool_result["content"] == "not opened: the user chose cancel"
    updates = await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert "Cancelled: nobody answered in time." in str(updates[-1].params["blocks"])
    audit = await bot.storage.audit_log.entries(tool_name="tickets__open_ticket")
    (line,) = [a for a in audit if a.action == "answer_cancelled"]
    assert line.via == "expiry" and "within 120 s" in line.detail


async def test_url_mode_shows_a_link_and_the_call_waits_for_the_server(bot, model):
    model.chat.push(tool_calls(call("tickets__link_account", {}, id="call_1")))
    await bot.mention("link my tracker account")
    await bot.sender.click(await bot.approval_message(), "tool_approve", user="U2")
    posts = await bot.slack.wait_for("chat.postMessage", lambda c: "tool_question_url" in str(c.params.get("blocks")))
    question = bot.slack.posted_by(posts[0])
    assert "Sign in to the tracker" in question.all_text
    assert question.action_ids() == ["tool_question_url", "tool_question_decline", "tool_question_cancel"]
    (link,) = [e for b in question.blocks if b["type"] == "actions" for e in b["elements"] if "url" in e]
    assert link["url"].startswith("https://tickets.example/link?session=")
    model.chat.push(reply("Finish the sign-in on the page."))
    await bot.sender.click(question, "tool_question_url", user="U1")
    await bot.slack.wait_for("chat.stopStream")
    tool_result = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert tool_result["content"].startswith("the sign-in page was opened")
