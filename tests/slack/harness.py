"""Run the real Bolt app over real HTTP for a test: its aiohttp server on a loopback port, the demo agent
on the test's database, the Slack stub as Slack's Web API, the scripted model as the LLM. Below it, what
the tests of several files do with a running bot: ask to delete a record, click as someone refused, call
the HTTP API, open and click the App Home."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from bot.api import add_api_routes
from bot.demo import build_demo_agent, seed_demo_records
from bot.demo.tables import DemoRecordRow
from bot.metrics import add_metrics_routes
from bot.slack import build_web_app, create_slack_app
from bot.slack.http_api import slack_api_front
from bot.slack.tables import ToolCallMessageRow
from bot.slack_emulator import Message, SlackEmulator
from bot.slack_emulator.app_requests import app_home_opened_event, checkbox_state, home_block_actions
from memory import Clock, Memory, Storage
from memory.clock import SYSTEM_CLOCK
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender
from tests.support.waiting import until

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
MODEL = "openai/test-model"
API_TOKEN = "api-test-token"
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}


@dataclass
class RunningBot:
    """One bot process, as a test sees it."""

    app: Any
    agent: Any
    storage: Storage
    sender: SignedSender
    slack: SlackEmulator
    url: str

    @property
    def base_url(self) -> str:
        """Where the bot's HTTP server is (the HTTP API lives under `/api`)."""
        return self.url.removesuffix("/slack/events")

    async def mention(self, text: str, **kw: Any) -> dict[str, Any]:
        """Mention the bot in a channel; returns the event sent."""
        event = self.sender.mention(text, **kw)
        status, _ = await self.sender.event(event)
        assert status == 200
        return event

    async def say(self, text: str, **kw: Any) -> dict[str, Any]:
        event = self.sender.message(text, **kw)
        status, _ = await self.sender.event(event)
        assert status == 200
        return event

    async def approval_message(self, channel: str = "C1", *, count: int = 1) -> Message:
        """The `count`-th approval message posted (waits for it, and for the bot to have recorded it)."""
        calls = await self.slack.wait_for(
            "chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")), count=count
        )
        message = self.slack.posted_by(calls[count - 1])
        assert message.channel == channel
        await self.recorded(message)
        return message

    async def question_message(self, channel: str = "C1") -> Message:
        calls = await self.slack.wait_for("chat.postMessage", lambda c: "tool_answer" in str(c.params.get("blocks")))
        message = self.slack.posted_by(calls[0])
        assert message.channel == channel
        await self.recorded(message)
        return message

    async def recorded(self, message: Message) -> None:
        """Wait until the bot has stored the ts Slack gave `message` (it does so once chat.postMessage has
        answered): until then a click on it, or an escalation of its call, finds no posted message."""
        query = select(ToolCallMessageRow.id).where(ToolCallMessageRow.ts == message.ts)

        async def stored() -> bool:
            async with self.storage.session() as session:
                return await session.scalar(query) is not None

        await until(stored, what=f"the bot to record its message {message.ts} in {message.channel}")


@asynccontextmanager
async def running_bot(
    *,
    database_url: str,
    slack: SlackEmulator,
    admins: tuple[str, ...] = (),
    api_token: str | None = None,
    streaming: bool = True,
    agent_factory: Callable[[Storage], Any] | None = None,
    clock: Clock = SYSTEM_CLOCK,
    **app_options: Any,
) -> AsyncIterator[RunningBot]:
    """The bot with the demo agent (or `agent_factory(storage)`'s agent, built without storage), its
    storage on `clock`; `app_options` go to `create_slack_app`."""
    storage = Storage(database_url, clock=clock)
    await storage.migrate()
    await seed_demo_records(storage)
    agent = agent_factory(storage) if agent_factory else build_demo_agent(storage, model=MODEL)
    agent.attach(storage=storage, memory=Memory(storage))
    app = create_slack_app(
        agent=agent,
        storage=storage,
        token="xoxb-test-token",
        signing_secret=SIGNING_SECRET,
        api_url=slack.api_url,
        admins=admins,
        streaming=streaming,
        **app_options,
    )
    web_app = build_web_app(app)
    if api_token:
        add_api_routes(web_app, slack_api_front(app, token=api_token))
    add_metrics_routes(web_app, storage)
    runner = web.AppRunner(web_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}/slack/events"
    try:
        yield RunningBot(
            app=app,
            agent=agent,
            storage=storage,
            sender=SignedSender(url, SIGNING_SECRET, slack=slack),
            slack=slack,
            url=url,
        )
    finally:
        await slack.settle()
        await runner.cleanup()
        await agent.model_client.close()  # in this test's event loop, not at garbage collection
        await storage.close()


# -- what the tests of several files do with a running bot --------------------------------------


async def record_ids(bot: RunningBot) -> list[int]:
    async with bot.storage.session() as session:
        return list(await session.scalars(select(DemoRecordRow.id).order_by(DemoRecordRow.id)))


def ask_to_delete(model, record_id: int = 3) -> None:
    model.chat.push(
        tool_calls(call("delete-record", {"id": record_id}, id="call_1")), reply(f"Deleted record {record_id}.")
    )


async def refused_click(bot: RunningBot, message, user: str, action_id: str = "tool_approve") -> str:
    """Click as `user`; the click must change nothing; returns the ephemeral explanation they got."""
    before = len(bot.slack.calls_of("chat.postEphemeral"))
    await bot.sender.click(message, action_id, user=user)
    ephemerals = await bot.slack.wait_for("chat.postEphemeral", count=before + 1)
    await bot.slack.settle()
    assert ephemerals[-1].params["user"] == user
    assert bot.slack.calls_of("chat.update") == [] and bot.slack.calls_of("views.open") == []
    assert message.action_ids()[0] == "tool_approve"
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    return ephemerals[-1].params["text"]


async def request(
    bot: RunningBot, method: str, path: str, *, body: Any = None, raw: str | None = None, headers=AUTH
) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body))
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, bot.base_url + path, data=data, headers=headers) as response,
    ):
        text = await response.text()
        return response.status, json.loads(text) if response.content_type == "application/json" else text


async def waiting_call(bot: RunningBot) -> tuple[str, str]:
    """(run id, tool call id) of the one call waiting, as the API lists it."""
    status, page = await request(bot, "GET", "/api/agents/demo-agent/suspended-runs")
    assert status == 200 and page["total"] == 1, page
    run = page["runs"][0]
    return run["runId"], run["toolCalls"][0]["toolCallId"]


def decide_path(run_id: str, call_id: str, what: str, agent: str = "demo-agent") -> str:
    return f"/api/agents/{agent}/runs/{run_id}/tool-calls/{call_id}/{what}"


async def open_home(bot: RunningBot, user: str) -> None:
    status, _ = await bot.sender.event(app_home_opened_event(user))
    assert status == 200


def published(bot: RunningBot, user: str) -> list[dict[str, Any]]:
    views = []
    for publish in bot.slack.calls_of("views.publish"):
        if publish.params.get("user_id") == user:
            view = publish.params["view"]
            views.append(json.loads(view) if isinstance(view, str) else view)
    return views


async def home_of(bot: RunningBot, user: str, *, count: int = 1) -> dict[str, Any]:
    """The `count`-th Home view published for `user` (waits for it)."""
    await bot.slack.wait_for("views.publish", lambda c: c.params.get("user_id") == user, count=count)
    return published(bot, user)[count - 1]


async def home_click(bot: RunningBot, user: str, action_id: str, value: str) -> None:
    """A click on a button of the user's App Home (a view, not a message: no channel)."""
    action = {"type": "button", "action_id": action_id, "block_id": "home", "value": value}
    payload = home_block_actions(user, {"blocks": []}, action, trigger_id=bot.sender.trigger_for(user))
    status, _ = await bot.sender.interaction(payload)
    assert status == 200


def bulk_options(view: dict[str, Any]) -> list[str]:
    """The values of the bulk checkboxes of a Home view, in the order it lists them."""
    return [
        option["value"]
        for block in view["blocks"]
        if (block.get("accessory") or {}).get("action_id") == "home_bulk_pick"
        for option in block["accessory"]["options"]
    ]


async def home_bulk_click(
    bot: RunningBot,
    user: str,
    action_id: str,
    *,
    view: dict[str, Any],
    chosen: list[str],
    forged: dict[str, Any] | None = None,
) -> None:
    """Tick the bulk checkboxes `chosen` in the user's Home `view` and press `action_id` ("Approve
    selected", "Decline selected"); `forged` is a view state sent instead, as a forged request can."""
    values = forged if forged is not None else checkbox_state(view, "home_bulk_pick", chosen)
    action = {"type": "button", "action_id": action_id, "block_id": "home_bulk", "value": action_id}
    payload = home_block_actions(user, view, action, trigger_id=bot.sender.trigger_for(user), values=values)
    status, _ = await bot.sender.interaction(payload)
    assert status == 200


def text_of(view: dict[str, Any]) -> str:
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
                parts.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(view.get("blocks"))
    return "\n".join(parts)


async def scrape(bot: RunningBot) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the scrape, by name and labels."""
    url = bot.url.replace("/slack/events", "/metrics")
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def modal_values(*, mode: str = "inherit", approvers: str = "", expiry: str = "") -> dict[str, Any]:
    return {
        "policy_mode": {"value": {"type": "static_select", "selected_option": {"value": mode}}},
        "policy_approvers": {"value": {"type": "plain_text_input", "value": approvers}},
        "policy_self_approval": {"value": {"type": "checkboxes", "selected_options": [{"value": "allowed"}]}},
        "policy_expiry": {"value": {"type": "plain_text_input", "value": expiry}},
    }


async def opened_policy_modal(bot: RunningBot, tool: str, user: str = "U1") -> dict[str, Any]:
    await open_home(bot, user)
    await home_of(bot, user)
    await home_click(bot, user, "policy_edit", tool)
    opened = await bot.slack.wait_for("views.open")
    view = opened[-1].params["view"]
    return json.loads(view) if isinstance(view, str) else view
