"""Fixtures of the MCP tests in Slack: the bot running the demo agent with the tools of the test module's
`mcp_servers` fixture added (the emulated Slack, `slack`, is tests/conftest.py's)."""

from __future__ import annotations

import pytest

from .servers import demo_bot_with


@pytest.fixture
async def bot(tmp_path, slack, model, mcp_servers, clock):
    async with demo_bot_with(
        mcp_servers, database_url=f"sqlite+aiosqlite:///{tmp_path}/bot.db", slack=slack, clock=clock
    ) as b:
        yield b
