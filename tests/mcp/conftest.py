"""Fixtures of the MCP tests in Slack: the emulated Slack, and the bot running the demo agent with the
tools of the test module's `mcp_servers` fixture added."""

from __future__ import annotations

import pytest

from bot.assemble import add_tools
from bot.demo import build_demo_agent
from bot.slack_emulator import SlackEmulator
from tests.slack.harness import MODEL, running_bot
from tests.support.slack import slack_workspace


@pytest.fixture
async def slack():
    async with SlackEmulator(slack_workspace()) as emulator:
        yield emulator


@pytest.fixture
async def bot(tmp_path, slack, model, mcp_servers):
    def agent(storage):
        built = build_demo_agent(storage, model=MODEL)
        add_tools(built, mcp_servers.tools)
        return built

    async with running_bot(
        database_url=f"sqlite+aiosqlite:///{tmp_path}/bot.db", slack=slack, agent_factory=agent
    ) as b:
        yield b
