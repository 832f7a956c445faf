"""The local playground, `python -m bot dev`: an emulated Slack workspace in the browser, with nothing
to configure.

One aiohttp server on 127.0.0.1 holds it all: the page (`browser`), the Slack Web API the bot calls
(`bot.slack_emulator`, the same emulation the tests use), the signed requests Slack would send the bot
(`delivery`), the bot's real Bolt app, and, without OPENAI_API_KEY, an offline rule-based model
(`demo_model`). The Slack adapter and the agent runtime run unchanged.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.settings import without_password

from ._server import Playground

if TYPE_CHECKING:
    from bot.agent import Agent
    from bot.settings import Settings
    from tools import Tool

__all__ = ["ADMIN_HINT", "Playground", "run_playground"]

ADMIN_HINT = "python -m bot policy list --playground  ·  python -m bot audit --playground"
"""The admin commands on this playground's database, as the banner names them."""


async def run_playground(
    settings: Settings, *, port: int = 3000, agent: Agent | None = None, tools: Sequence[Tool] = ()
) -> None:
    """Serve the playground on 127.0.0.1 (on `port`, or the next free one) until cancelled."""
    try:
        async with Playground(settings, port=port, agent=agent, tools=tools) as playground:
            if playground.asked_port and playground.port != playground.asked_port:
                print(f"Port {playground.asked_port} is in use: serving on {playground.port} instead.", flush=True)
            print(f"Playground: {playground.url}  <- open it in a browser and talk to the bot", flush=True)
            print(f"Agent:      {playground.agent.name if playground.agent else '?'}", flush=True)
            print(f"Model:      {playground.model_label}", flush=True)
            print(f"Database:   {without_password(playground.database_url)}", flush=True)
            print(f"Admin:      {ADMIN_HINT}", flush=True)
            print("Stop with Ctrl-C.", flush=True)
            await asyncio.Event().wait()
    finally:
        # The process ends next. Spare it the collector's walk over every object of every module at exit:
        # seconds on a busy machine, for memory the system takes back anyway. Ctrl-C then ends it at once.
        gc.freeze()
