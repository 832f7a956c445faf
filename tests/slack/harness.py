"""Run the real Bolt app over real HTTP for a test: its aiohttp server on a loopback port, the demo agent
on the test's database, the Slack stub as Slack's Web API, the scripted model as the LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.api import add_api_routes
from bot.demo import build_demo_agent, seed_demo_records
from bot.metrics import add_metrics_routes
from bot.slack import build_web_app, create_slack_app
from bot.slack.http_api import slack_api_front
from bot.slack_emulator import Message, SlackEmulator
from memory import Memory, Storage
from tests.support.slack import SignedSender

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
MODEL = "openai/test-model"


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
        """The `count`-th approval message posted (waits for it)."""
        calls = await self.slack.wait_for(
            "chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")), count=count
        )
        message = self.slack.posted_by(calls[count - 1])
        assert message.channel == channel
        return message

    async def question_message(self, channel: str = "C1") -> Message:
        calls = await self.slack.wait_for("chat.postMessage", lambda c: "tool_answer" in str(c.params.get("blocks")))
        message = self.slack.posted_by(calls[0])
        assert message.channel == channel
        return message


@asynccontextmanager
async def running_bot(
    *,
    database_url: str,
    slack: SlackEmulator,
    decision_rule: Any = None,
    admins: tuple[str, ...] = (),
    api_token: str | None = None,
    streaming: bool = True,
    agent_factory: Callable[[Storage], Any] | None = None,
    **app_options: Any,
) -> AsyncIterator[RunningBot]:
    """The bot with the demo agent (or `agent_factory(storage)`'s agent, built without storage);
    `app_options` go to `create_slack_app`."""
    storage = Storage(database_url)
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
        decision_rule=decision_rule,
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
