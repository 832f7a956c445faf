"""Talking to the bot in the playground, as the page does: the real Bolt app gets signed Slack payloads,
answers through the emulated Web API, and the demo agent runs on the offline demo model."""

from __future__ import annotations

import json

import aiohttp
import pytest

from bot.agent import Agent
from bot.playground import Playground
from bot.settings import Settings
from tools import ToolContext, create_tool

from .browser import ALICE, BOB, GENERAL, PlaygroundPage, action_ids, from_bot, record_ids, shown_text, thread


async def test_a_mention_in_general_gets_a_reply_in_its_thread(page):
    ts = await page.say("@bot hello there")

    reply = await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts)) if not m["streaming"]], what="the bot's reply"
    )

    assert "demo model" in reply[0]["text"]
    assert "delete record 3" in reply[0]["text"]  # it lists what it can do
    state = await page.state()
    parent = next(m for m in state["messages"] if m["ts"] == ts)
    assert parent["text"] == "<@UBOT> hello there"  # typed "@bot" became a mention, as Slack does it
    assert [m["ts"] for m in state["messages"] if m["channel"] == GENERAL and not m["thread_ts"]] == [ts]


async def test_delete_record_waits_for_approval_and_bob_approves_it_in_place(page, playground):
    ts = await page.say("@bot delete record 2")

    approval = (await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval"))[0]
    assert action_ids(approval) == [
        "tool_approve",
        "tool_decline",
        "tool_decline_with_reason",
        "tool_edit_args",
        "tool_cancel",
    ]
    assert "delete-record" in shown_text(approval) and '"id": 2' in shown_text(approval)
    assert 2 in await record_ids(playground)

    status, body = await page.click(approval, "tool_approve", user=BOB)
    assert status == 200 and body["bot_status"] == 200

    def decided(state):
        message = next(m for m in thread(state, ts) if m["ts"] == approval["ts"])
        return message if "Approved by <@UBOB>" in shown_text(message) else None

    updated = await page.wait_for(decided, what="the approval updated in place")
    assert action_ids(updated) in ([], ["tool_undo"]) and updated["edited"]  # at most Undo, once it ran
    done = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "record 2 is deleted" in m["text"]], what="the bot's summary"
    )
    assert [m["user"] for m in done] == ["UBOT"]  # said once, by the bot, in the thread
    assert 2 not in await record_ids(playground)


async def test_a_second_click_on_a_decided_approval_is_explained_to_the_clicker_alone(page):
    ts = await page.say("@bot delete record 3")
    approval = (await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval"))[0]
    await page.click(approval, "tool_approve", user=ALICE)
    await page.wait_for(lambda s: [m for m in thread(s, ts) if "record 3 is deleted" in m["text"]], what="done")

    status, _ = await page.click(approval, "tool_approve", user=BOB)  # Bob's page still showed the buttons

    assert status == 200
    told = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if m["ephemeral"]], user=BOB, what="Bob's ephemeral message"
    )
    assert told[0]["text"] == "此請求已經有人決定了。"  # "This request was already decided.", in Bob's language
    assert not [m for m in (await page.state(ALICE))["messages"] if m["ephemeral"]]


async def test_the_weather_question_is_answered_by_the_next_message_in_the_thread(page):
    ts = await page.say("@bot what's the weather?")
    question = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "Which city?" in shown_text(m)], what="the question"
    )
    assert action_ids(question[0]) == ["tool_answer", "tool_question_cancel"]

    await page.say("Paris", thread_ts=ts)  # no mention needed in the bot's thread

    await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts)) if "Paris" in m["text"] and "°C" in m["text"]],
        what="the weather in Paris",
    )

    def closed(state):
        message = next(m for m in thread(state, ts) if m["ts"] == question[0]["ts"])
        return message if "Answered" in shown_text(message) else None

    assert action_ids(await page.wait_for(closed, what="the question closed")) == []


@pytest.mark.parametrize(
    ("reply", "city"),
    [("我在台北", "台北"), ("서울이요", "서울"), ("東京にいます", "東京"), ("أنا في القاهرة", "القاهرة")],
    ids=["zh", "ko", "ja", "ar"],
)
async def test_a_city_answered_in_any_script_resumes_the_question(page, reply, city):
    """The offline model read a city in Latin letters only: these got its help text, and the question waited."""
    ts = await page.say("@bot what's the weather?")
    question = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "Which city?" in shown_text(m)], what="the question"
    )
    await page.say(reply, thread_ts=ts)
    await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts)) if city in m["text"] and "°C" in m["text"]],
        what=f"the weather in {city}",
    )

    def closed(state):
        message = next(m for m in thread(state, ts) if m["ts"] == question[0]["ts"])
        return message if "Answered" in shown_text(message) else None

    assert action_ids(await page.wait_for(closed, what="the question closed")) == []


async def test_the_dms_refund_prompt_asks_for_what_it_does_not_say(page):
    """The DM's suggested prompt for issue-refund made a $10 refund of order A-1001 that nobody named."""
    await page.post("/play/home/open", {"user": ALICE, "tab": "messages"})
    prompts = await page.wait_for(lambda s: s["suggested_prompts"].get("DUALICE"), what="the DM's prompts")
    refund = next(p["message"] for p in prompts["prompts"] if p["title"] == "issue-refund")
    ts = await page.say(refund, channel="DUALICE")
    asked = await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts, "DUALICE")) if not m["streaming"]], what="the bot's reply"
    )
    assert "To run `issue-refund` I still need `order_id`" in asked[0]["text"] and "`amount`" in asked[0]["text"]
    await page.settle()
    replies = thread(await page.state(), ts, "DUALICE")
    assert [action_ids(m) for m in replies] == [[]]  # no approval: nothing was proposed
    assert "A-1001" not in json.dumps(replies, ensure_ascii=False)


def billing_agent() -> Agent:
    """A team's own agent: a tool that runs at once, and one that asks which warehouse."""

    async def send_invoice(input: dict, ctx: ToolContext) -> dict:
        return {"invoice": "INV-7", "customer": input["customer"], "amount": input["amount"]}

    async def ship_order(input: dict, ctx: ToolContext) -> dict:
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which warehouse?"})
        return {"shipped": input["order"], "from": ctx.agent.resume_data["warehouse"]}

    invoice = {
        "type": "object",
        "properties": {"customer": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["customer", "amount"],
    }
    warehouse = {"type": "object", "properties": {"warehouse": {"type": "string"}}, "required": ["warehouse"]}
    tools = [
        create_tool(id="send-invoice", description="Send an invoice", input_schema=invoice, execute=send_invoice),
        create_tool(
            id="ship-order",
            description="Ship an order from a warehouse",
            input_schema={"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]},
            resume_schema=warehouse,
            execute=ship_order,
        ),
    ]
    return Agent(id="billing", name="Billing", instructions="Bill and ship.", tools=tools)


async def test_an_agents_own_tools_are_called_offline_and_can_ask(tmp_path):
    """A custom agent did nothing without a model key ("this agent has no tools I know"), and the chips
    suggested the demo's "delete record 2"."""
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/p.db", openai_api_key=None)
    async with Playground(settings, port=0, agent=billing_agent(), word_delay=0) as playground:
        async with aiohttp.ClientSession() as session:
            page = PlaygroundPage(playground.url, session)
            chips = (await page.state())["info"]["suggestions"]
            assert chips == ["send-invoice customer=… amount=…", "ship-order order=…"]

            ts = await page.say("@bot send-invoice customer=ACME amount=30")
            await page.wait_for(
                lambda s: [m for m in from_bot(thread(s, ts)) if '"customer": "ACME", "amount": 30' in m["text"]],
                what="the invoice sent",
            )

            ts = await page.say("@bot ship-order order=A-7")
            await page.wait_for(
                lambda s: [m for m in thread(s, ts) if "Which warehouse?" in shown_text(m)], what="the question"
            )
            await page.say("大阪です", thread_ts=ts)
            await page.wait_for(
                lambda s: [m for m in from_bot(thread(s, ts)) if '"from": "大阪"' in m["text"]], what="shipped"
            )
            await page.settle()


async def test_every_message_in_a_dm_is_a_conversation_only_its_person_sees(page):
    ts = await page.say("list records", user=BOB, channel="DUBOB")

    await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts, "DUBOB")) if "Quarterly report" in m["text"]],
        user=BOB,
        what="the records listed to Bob",
    )
    alice_sees = await page.state(ALICE)
    assert "DUBOB" not in [c["id"] for c in alice_sees["channels"]]
    assert not [m for m in alice_sees["messages"] if m["channel"] == "DUBOB"]


async def test_a_channel_message_without_a_mention_is_not_for_the_bot(page):
    ts = await page.say("lunch at noon?")
    await page.settle()
    assert thread(await page.state(), ts) == []


async def test_an_agent_of_ones_own_runs_on_the_demo_model_too(tmp_path):
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/p.db", openai_api_key=None)
    agent = Agent(id="my-agent", name="My Agent", instructions="Be nice.")
    async with Playground(settings, port=0, agent=agent, word_delay=0) as playground, aiohttp.ClientSession() as s:
        page = PlaygroundPage(playground.url, s)
        ts = await page.say("@bot hi")
        reply = await page.wait_for(lambda st: [m for m in thread(st, ts) if not m["streaming"]], what="a reply")
        assert "this agent has no tools" in reply[0]["text"]
        assert (await page.state())["info"]["agent"] == "My Agent"
        await page.settle()
