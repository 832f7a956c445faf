"""What an MCP server sends fits Slack, through the Slack emulation (as strict as Slack about sizes): a
question of 200,000 characters is posted cut, with the whole of it one button away (cut there too, saying
so) and answerable; a URL-mode question is offered only with an `https://` link (an `http://` one to this
machine when `BOT_MCP_ALLOW_HTTP_LOOPBACK` says so), anything else is declined to the server and the
thread says why."""

from __future__ import annotations

import json

import pytest

from bot.mcp import load_mcp_config
from bot.mcp._session import link_allowed
from bot.settings import load_settings
from tests.support.scripted_model import call, reply, tool_calls

from .servers import connected, demo_bot_with, stdio_entry, write_config

SLOW = 30.0


@pytest.fixture
def allow_http_loopback() -> bool:
    return False


@pytest.fixture
async def mcp_servers(tmp_path, allow_http_loopback):
    path = write_config(tmp_path / "servers.json", {"tickets": stdio_entry()})
    async with connected(load_mcp_config(path, {}, allow_http_loopback=allow_http_loopback)) as servers:
        yield servers


@pytest.fixture
async def bot(database_url, slack, model, mcp_servers):
    async with demo_bot_with(mcp_servers, database_url=database_url, slack=slack) as running:
        yield running


async def approved(bot, model, tool: str, args: dict, *, then=None) -> dict:
    """The model calls `tool` (and then says `then`); U1 approves it. Returns the mention's event."""
    model.chat.push(tool_calls(call(f"tickets__{tool}", args, id="call_1")), *([then] if then else []))
    event = await bot.mention(f"run {tool}")
    await bot.sender.click(await bot.approval_message(), "tool_approve", user="U1")
    return event


def tool_results(model) -> list[str]:
    return [m["content"] for r in model.chat.requests for m in r["messages"] if m.get("role") == "tool"]


async def test_a_200_kb_question_is_posted_cut_with_the_whole_of_it_behind_a_button_and_is_answered(bot, model):
    await approved(bot, model, "ask_long", {"size": 200_000})
    posts = await bot.slack.wait_for(
        "chat.postMessage", lambda c: "tool_answer" in str(c.params.get("blocks")), timeout=SLOW
    )
    question = bot.slack.posted_by(posts[0])
    await bot.recorded(question)
    assert "旅行の計画 · 여행 계획 · 旅行计划 &lt;&amp;&gt;" in question.all_text
    assert "more characters under *Show the whole question*" in question.all_text
    assert len(question.text) < 1000
    assert question.action_ids() == [
        "tool_answer",
        "tool_question_decline",
        "tool_question_cancel",
        "tool_full_question",
    ]

    await bot.sender.click(question, "tool_full_question", user="U3")  # anyone who sees it may read it
    (opened,) = await bot.slack.wait_for("views.open")
    blocks = opened.params["view"]["blocks"]
    shown = "".join(b["text"]["text"] for b in blocks if b["type"] == "section")
    line = "旅行の計画 · 여행 계획 · 旅行计划 <&> "
    whole = (line * (200_000 // len(line) + 1))[:200_000] + "\nWhich city?"
    assert 80_000 < len(shown) <= 90_000 and whole.startswith(shown)  # as sent: plain text, unescaped
    note = f"Cut here: {len(whole) - len(shown):,} more characters are not shown"
    assert note in json.dumps(blocks, ensure_ascii=False)

    model.chat.push(reply("城市：北京。"))
    await bot.sender.click(question, "tool_answer", user="U1")
    form = await bot.slack.wait_for("views.open", count=2)
    city = {"type": "plain_text_input", "value": "北京"}
    await bot.sender.submit(form[1].params["view"], {"field:city": {"value": city}}, user="U1")
    await bot.slack.wait_for("chat.stopStream", timeout=SLOW)
    assert "long question: 北京" in tool_results(model)


@pytest.mark.parametrize(
    "url",
    ["http://tickets.example/link", "javascript:alert(document.cookie)", "http://127.0.0.1:8765/link", "ftp://x/y"],
)
async def test_a_link_that_is_not_https_is_declined_to_the_server_and_the_thread_says_why(bot, model, url):
    event = await approved(bot, model, "link_to", {"url": url}, then=reply("The link cannot be opened · 链接无法打开."))
    await bot.slack.wait_for("chat.stopStream", timeout=SLOW)
    (result,) = tool_results(model)
    assert "sent a link the bot does not open" in result and "link: decline" in result
    assert url not in result  # the link itself is never shown
    posted = [c.params for c in bot.slack.calls_of("chat.postMessage")]
    assert not any("tool_question_url" in str(p.get("blocks")) for p in posted)  # never offered
    thread = json.dumps([m.blocks for m in bot.slack.thread("C1", event["ts"])], ensure_ascii=False)
    assert "sent a link the bot does not open" in thread


@pytest.mark.parametrize(
    ("url", "allow_http_loopback"),
    [("https://tickets.example/link?s=東京", False), ("http://127.0.0.1:8765/link", True)],
)
async def test_an_https_link_or_with_the_setting_one_to_this_machine_is_offered(bot, model, url, allow_http_loopback):
    await approved(bot, model, "link_to", {"url": url})
    posts = await bot.slack.wait_for(
        "chat.postMessage", lambda c: "tool_question_url" in str(c.params.get("blocks")), timeout=SLOW
    )
    question = bot.slack.posted_by(posts[0])
    (link,) = [e for b in question.blocks if b["type"] == "actions" for e in b["elements"] if "url" in e]
    assert link["url"] == url
    model.chat.push(reply("Done."))
    await bot.sender.click(question, "tool_question_url", user="U1")
    await bot.slack.wait_for("chat.stopStream", timeout=SLOW)
    assert tool_results(model) == ["link: accept"]


def test_the_setting_is_read_from_the_environment(monkeypatch):
    assert load_settings().bot_mcp_allow_http_loopback is False
    monkeypatch.setenv("BOT_MCP_ALLOW_HTTP_LOOPBACK", "true")
    assert load_settings().bot_mcp_allow_http_loopback is True


@pytest.mark.parametrize(
    ("url", "loopback", "offered"),
    [
        ("https://tickets.example/a?b=ソウル", False, True),
        ("https://", False, False),
        ("https://tickets.example/a b", False, False),
        ("https://tickets.example/" + "a" * 3000, False, False),
        ("HTTP://127.0.0.1/x", True, True),
        ("http://localhost:8000/x", True, True),
        ("http://[::1]:8000/x", True, True),
        ("http://localhost.evil.example/x", True, False),
        ("http://127.0.0.1/x", False, False),
        ("javascript:alert(1)", True, False),
        ("data:text/html,<script>", True, False),
    ],
)
def test_which_links_are_offered(url, loopback, offered):
    assert link_allowed(url, http_loopback=loopback) is offered
