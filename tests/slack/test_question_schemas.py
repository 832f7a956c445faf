"""A question whose schema is not valid (`"type": "strng"`): no answer fits it, and each surface says so
plainly instead of failing: the HTTP API answers 400 with a sentence, the answer form shows it on its
input; the call waits as it did."""

from __future__ import annotations

import json

import pytest

from bot.assemble import add_tools
from bot.demo import build_demo_agent
from tests.support.scripted_model import call, tool_calls
from tools import create_tool

from .harness import API_TOKEN, MODEL, decide_path, request, running_bot, waiting_call

BROKEN = {"type": "object", "properties": {"code": {"type": "strng"}}, "required": ["code"]}


async def ask_code(args, ctx):
    if ctx.agent.resume_data is None:
        return await ctx.agent.suspend({"question": "暗号は何ですか？"}, resume_schema=BROKEN)
    return f"heard {ctx.agent.resume_data}"


@pytest.fixture
async def bot(database_url, slack, model, clock):
    def agent(storage):
        built = build_demo_agent(storage, model=MODEL)
        tool = create_tool(id="ask-code", description="Ask the user for a code", execute=ask_code)
        add_tools(built, [tool])
        return built

    async with running_bot(
        database_url=database_url, slack=slack, agent_factory=agent, api_token=API_TOKEN, clock=clock
    ) as running:
        yield running


async def a_broken_question(bot, model):
    model.chat.push(tool_calls(call("ask-code", {}, id="call_1")))
    await bot.mention("ask me for the code")
    return await bot.question_message()


async def test_resumed_through_the_api_it_is_a_400_with_a_sentence_and_the_call_waits(bot, model):
    await a_broken_question(bot, model)
    run_id, call_id = await waiting_call(bot)
    status, body = await request(
        bot, "POST", decide_path(run_id, call_id, "resume"), body={"resumeData": {"code": "秘密"}, "resumedBy": "U1"}
    )
    assert status == 400, body
    error = body["error"]
    assert "schema that is not valid" in error and "'strng'" in error and "/properties/code/type" in error
    assert "Traceback" not in error and "*" not in error and "<" not in error
    assert (await bot.agent.get_tool_call(run_id, call_id)).state == "suspended"
    assert (await bot.agent.list_suspended_runs()).total == 1


async def test_answered_by_the_form_the_form_says_no_answer_fits(bot, model):
    question = await a_broken_question(bot, model)
    await bot.sender.click(question, "tool_answer", user="U1")
    opened = await bot.slack.wait_for("views.open")
    view = opened[0].params["view"]
    (block_id,) = [block["block_id"] for block in view["blocks"] if block["type"] == "input"]
    typed = json.dumps("秘密")  # a field of an unknown type is asked for as JSON
    status, body = await bot.sender.submit(view, {block_id: {"value": {"type": "plain_text_input", "value": typed}}})
    assert status == 200
    answer = json.loads(body)
    assert answer["response_action"] == "errors" and "schema is not valid" in answer["errors"][block_id]
    run_id, call_id = await waiting_call(bot)
    assert (await bot.agent.get_tool_call(run_id, call_id)).state == "suspended"
