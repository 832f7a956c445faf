"""Turning settings into the agent a front end runs: the one named, or the built-in demo, with the
bot's storage and memory attached. Shared by `serve`, `socket` and the playground."""

from __future__ import annotations

from collections.abc import Sequence

from bot.agent import Agent
from memory import Memory, Storage
from tools import Tool


async def assemble_agent(
    storage: Storage,
    *,
    model: str,
    agent: Agent | None = None,
    model_timeout: float | None = None,
    tools: Sequence[Tool] = (),
    secrets: Sequence[str] = (),
) -> Agent:
    """`agent` (built without storage), or the demo agent on a seeded `storage`; storage and memory attached.

    `model_timeout` (the BOT_MODEL_TIMEOUT setting) applies to every agent of the tree that does not set
    its own in `default_options`.

    `tools` (the MCP servers' tools) join the agent's own.

    `secrets` (`Settings.secrets`) are masked in what a failing tool or preview said, wherever it is shown.

    The demo's tables are created only when the demo runs.
    """
    if agent is None:
        from bot.demo import build_demo_agent, seed_demo_records
        from bot.demo.migrations import SCHEMA as DEMO_SCHEMA

        await storage.migrate(DEMO_SCHEMA)
        await seed_demo_records(storage)
        agent = build_demo_agent(storage, model=model)
    add_tools(agent, tools)
    if model_timeout is not None:
        agent.set_default_option("model_timeout", model_timeout, unless_given=True)
    return agent.attach(storage=storage, memory=Memory(storage), secrets=secrets)


def add_tools(agent: Agent, tools: Sequence[Tool]) -> None:
    """Give `agent` more tools (the MCP servers'); a name the agent already uses is refused."""
    for tool in tools:
        if tool.id in agent.tools and agent.tools[tool.id] is not tool:
            raise ValueError(f"the tool {tool.id!r} of an MCP server has the name of one of the agent's own tools")
        agent.tools[tool.id] = tool
