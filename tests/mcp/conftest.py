"""Fixtures of the MCP tests in Slack: the bot running the demo agent with the tools of the test module's
`mcp_servers` fixture added (the emulated Slack, `slack`, is tests/conftest.py's)."""

from __future__ import annotations

import pytest

from bot.assemble import add_tools
from bot.demo import build_demo_agent
from tests.slack.harness import MODEL, running_bot


@pytest.fixture
async def bot(tmp_path, slack, model, mcp_servers, clock):
    def agent(storage):
        built = build_demo_agent(storage, model=MODEL)
        add_tools(built, mcp_servers.tools)
        return built

    async with running_bot(
        database_url=f"sqlite+aiosqlite:///{tmp_path}/bot.db", slack=slack, agent_factory=agent, clock=clock
    ) as b:
        yield b
