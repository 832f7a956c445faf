"""Assemble and run the playground: one aiohttp app on 127.0.0.1 that serves the bot's real Bolt app
(`/slack/events`), the emulated Slack Web API (`/api/*`), the browser page (`/`, `/play/*`) and, when no
model key is set, the offline demo model (`/v1/chat/completions`)."""

from __future__ import annotations

import asyncio
import errno
import secrets
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

import openai
from aiohttp import web

from bot.agent import Agent
from bot.api import add_api_off_routes, add_api_routes
from bot.assemble import assemble_agent
from bot.expiry import expire_forever
from bot.metrics import add_metrics_routes
from bot.recovery import RecoveryLoop
from bot.slack import build_web_app, create_slack_app, run_slack_recovery
from bot.slack.http_api import slack_api_front
from bot.slack.migrations import SCHEMA as SLACK_SCHEMA
from bot.slack.services import services_of_app
from bot.slack_emulator import SlackWebApi, Workspace
from bot.slack_emulator.workspace import UserGroup
from bot.stopping import cut_off
from memory import Storage
from tools import Tool

from .browser import add_browser_routes
from .delivery import Delivery
from .demo_model import add_demo_model_routes, suggestions
from .migrations import SCHEMA as PLAYGROUND_SCHEMA
from .store import WorkspaceStore

if TYPE_CHECKING:
    from bot.settings import Settings

STOP_GRACE = 0.5
"""Seconds the server gives requests still running when it stops (a long poll is answered at once)."""
PORTS_TRIED = 10
"""When the asked port is taken, the next ones are tried (the port used is printed)."""


PLAYGROUND_GROUP = UserGroup(id="S0LEADS", handle="leads", users=("UALICE", "UBOB"))
"""The playground's user group, Alice and Bob: an approver group and an escalation target to try
(`policy set delete-record --escalate-to S0LEADS --escalate-after 20 --playground`)."""


class Playground:
    """The playground's server and everything it runs; `start()`, then open `url`, then `stop()`."""

    def __init__(
        self,
        settings: Settings,
        *,
        port: int = 3000,
        agent: Agent | None = None,
        host: str = "127.0.0.1",
        word_delay: float = 0.02,
        tools: Sequence[Tool] = (),
    ):
        self.settings = settings
        self.asked_port = port
        self.host = host
        self.word_delay = word_delay
        self.given_agent = agent
        self.given_tools = tuple(tools)
        """More tools for the agent (the MCP servers')."""
        self.workspace = Workspace(usergroups=[PLAYGROUND_GROUP])
        self.port = 0
        self.agent: Agent | None = None
        self.storage: Storage | None = None
        self.model_label = ""
        self.uses_demo_model = False
        self._model_client: openai.AsyncOpenAI | None = None
        self._delivery: Delivery | None = None
        self._runner: web.AppRunner | None = None
        self._workspace_store: WorkspaceStore | None = None
        self._recovery: RecoveryLoop | None = None
        self._slack_recovery: asyncio.Task | None = None
        self._bolt_app: Any = None
        self._expiry: asyncio.Task | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def database_url(self) -> str:
        """DATABASE_URL when it is set, else a database of the playground's own."""
        return self.settings.playground_database_url

    async def start(self) -> Self:
        sock = _bind(self.host, self.asked_port)
        try:
            self.port = sock.getsockname()[1]
            self.storage = Storage(self.database_url)
            await self.storage.migrate(SLACK_SCHEMA, PLAYGROUND_SCHEMA)
            self.agent = await self._build_agent(self.storage)
            self.workspace = Workspace(bot_name=self.agent.name, usergroups=[PLAYGROUND_GROUP])
            self._workspace_store = WorkspaceStore(self.storage, self.workspace)
            await self._workspace_store.load()  # the conversation of the last run, and its open modals
            web_app = self._build_web_app(self.agent, self.storage)
            self._runner = web.AppRunner(web_app, access_log=None, shutdown_timeout=STOP_GRACE)
            await self._runner.setup()
            await web.SockSite(self._runner, sock).start()
            self._recovery = RecoveryLoop(
                self.agent, every=self.settings.bot_recovery_interval, stale_after=self.settings.bot_stale_after
            )
            self._slack_recovery = asyncio.get_running_loop().create_task(
                run_slack_recovery(
                    self._bolt_app,
                    every=self.settings.bot_recovery_interval,
                    repost_after=self.settings.bot_stale_after,
                )
            )
            self._expiry = asyncio.get_running_loop().create_task(expire_forever(self.agent))
        except BaseException:
            sock.close()
            await self.stop()
            raise
        return self

    async def stop(self) -> None:
        """Stop within about a second, open pages or not: their long polls are answered at once, and what
        the bot was doing is left to the recovery of the next start."""
        # The background passes end before the storage closes: one cancelled mid-query and left to finish
        # on its own would be closing its connection while the engine is disposed, and hang the loop's end.
        await cut_off(task for task in (self._expiry, self._slack_recovery) if task is not None)
        self._expiry = self._slack_recovery = None
        if self._recovery is not None:
            await self._recovery.stop(timeout=1.0)
            self._recovery = None
        if self._runner is not None:
            self.workspace.changed()  # every page waiting for a change gets its answer now
            await self._runner.cleanup()
            self._runner = None
        if self._workspace_store is not None:
            await self._workspace_store.close()
            self._workspace_store = None
        if self._delivery is not None:
            await self._delivery.close()
        if self.agent is not None:
            await self.agent.aclose()
        if self._model_client is not None:
            await self._model_client.close()
            self._model_client = None
        if self.storage is not None:
            await self.storage.close()
            self.storage = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _build_agent(self, storage: Storage) -> Agent:
        """The agent (the given one, or the built-in demo on `storage`), talking to the real model when
        OPENAI_API_KEY is set and to the offline demo model otherwise; storage and memory attached."""
        agent = await assemble_agent(
            storage,
            model=self.settings.bot_model,
            agent=self.given_agent,
            model_timeout=self.settings.bot_model_timeout,
            tools=self.given_tools,
            secrets=self.settings.secrets(),
        )
        if self.settings.openai_api_key:
            self.model_label = self.settings.bot_model if self.given_agent is None else agent.model
        else:
            self.uses_demo_model = True
            self.model_label = "offline demo model (rule-based; set OPENAI_API_KEY to use a real one)"
            self._model_client = openai.AsyncOpenAI(base_url=f"{self.url}/v1", api_key="demo", max_retries=0)
            agent.attach(model_client=self._model_client)
        return agent

    def _build_web_app(self, agent: Agent, storage: Storage) -> web.Application:
        signing_secret = secrets.token_hex(16)  # new each run: only the playground can sign for the bot
        token = "xoxb-playground-" + secrets.token_hex(8)
        bolt_app = create_slack_app(
            agent=agent,
            storage=storage,
            token=token,
            signing_secret=signing_secret,
            api_url=f"{self.url}/api/",
            language=self.settings.bot_language,
            quick_approval_seconds=self.settings.bot_quick_approval_seconds,
        )
        self._bolt_app = bolt_app
        web_app = build_web_app(bolt_app)
        # before the emulated Web API, whose /api/{method} would take /api/openapi.json
        if self.settings.bot_api_token:
            add_api_routes(web_app, slack_api_front(bolt_app, token=self.settings.bot_api_token))
        else:
            add_api_off_routes(web_app)
        add_metrics_routes(web_app, storage)
        SlackWebApi(self.workspace, token=token).add_routes(web_app)
        if self.uses_demo_model:
            add_demo_model_routes(web_app, word_delay=self.word_delay)
        self._delivery = Delivery(self.workspace, events_url=f"{self.url}/slack/events", signing_secret=signing_secret)
        info: dict[str, Any] = {
            "model": self.model_label,
            "demo_model": self.uses_demo_model,
            "agent": agent.name,
            "suggestions": suggestions({name: tool.parameters() for name, tool in agent.tools.items()}),
        }
        directory = services_of_app(bolt_app).directory
        forget = directory.forget if directory is not None else (lambda _user: None)
        add_browser_routes(web_app, self.workspace, self._delivery, info, forget_person=forget)
        return web_app


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on `port`, or on the next free one of `PORTS_TRIED` (port 0: any free port)."""
    candidates = [port] if port == 0 else range(port, min(port + PORTS_TRIED, 65536))
    last_error: OSError | None = None
    for candidate in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError as exc:
            sock.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            last_error = exc
            continue
        sock.listen(128)
        sock.setblocking(False)
        return sock
    raise OSError(errno.EADDRINUSE, f"ports {port}-{port + PORTS_TRIED - 1} on {host} are all in use") from last_error
