"""`python -m bot dev --mcp examples/mcp/servers.json` without a real model: the offline demo model knows
MCP tools, so the playground shows the three flows with the example server (started over stdio, trusted
for its read-only hints as the example config says): a read-only tool that runs at once, a destructive
one behind an approval that shows its title, server and hints, and one whose server asks a question in
the thread (answered in the thread, or declined)."""

from __future__ import annotations

import aiohttp
import pytest

from bot.playground import Playground
from bot.settings import Settings
from tests.mcp.servers import configs, connected, stdio_entry

from .browser import ALICE, BOB, PlaygroundPage, action_ids, from_bot, shown_text, thread


@pytest.fixture
async def page(tmp_path):
    servers_file = {"tickets": stdio_entry(trust="read-only-hints")}
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/playground.db", openai_api_key=None)
    async with (
        connected(configs(tmp_path, servers_file)) as servers,
        Playground(settings, port=0, word_delay=0, tools=servers.tools) as running,
        aiohttp.ClientSession() as session,
    ):
        browser = PlaygroundPage(running.url, session)
        yield browser
        await browser.settle()


def said(page, ts, words):
    return page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts)) if words in m["text"] and not m["streaming"]], what=words
    )


async def test_the_demo_model_names_the_mcp_tools(page):
    ts = await page.say("@bot hello")
    (reply,) = await said(page, ts, "tickets__open_ticket")
    assert "“close ticket 2”" in reply["text"] and "MCP server `tickets`" in reply["text"]


async def test_a_read_only_tool_runs_at_once_and_a_destructive_one_waits_for_approval(page):
    ts = await page.say("@bot which tickets are open?")
    await said(page, ts, "Login page is slow")
    assert not [m for m in thread(await page.state(), ts) if action_ids(m)]  # no approval asked

    ts = await page.say("@bot close ticket 1")
    approval = (await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval"))[0]
    text = shown_text(approval)
    assert "Close ticket" in text and "tickets" in text and "destructive" in text and "idempotent" in text
    await page.click(approval, "tool_approve", user=BOB)
    await said(page, ts, "closed ticket 1")


async def test_the_servers_question_is_answered_in_the_thread_or_declined(page):
    ts = await page.say("@bot open a ticket: 打印机着火了")
    approval = (await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval"))[0]
    await page.click(approval, "tool_approve", user=BOB)
    question = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "Choose its priority" in shown_text(m) and action_ids(m)],
        what="the question",
    )
    assert action_ids(question[0]) == ["tool_answer", "tool_question_decline", "tool_question_cancel"]
    await page.say("high, and yes", thread_ts=ts, user=ALICE)
    await said(page, ts, "(high): 打印机着火了")

    ts = await page.say("@bot open a ticket: not this one")
    approval = (await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval"))[0]
    await page.click(approval, "tool_approve", user=BOB)
    question = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "Choose its priority" in shown_text(m) and action_ids(m)],
        what="the second question",
    )
    await page.click(question[0], "tool_question_decline", user=ALICE)
    await said(page, ts, "not opened: the user chose decline")
