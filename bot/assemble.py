"""Turning settings into the agent a front end runs: the one named, or the built-in demo, with the
bot's storage and memory attached. Shared by `serve`, `socket` and the playground."""

from __future__ import annotations

from bot.agent import Agent
from memory import Memory, Storage


async def assemble_agent(storage: Storage, *, model: str, agent: Agent | None = None) -> Agent:
    """`agent` (built without storage), or the demo agent on a seeded `storage`; storage and memory attached.

    The demo's tables are created only when the demo runs.
    """
    if agent is None:
        from bot.demo import build_demo_agent, seed_demo_records
        from bot.demo.migrations import SCHEMA as DEMO_SCHEMA

        await storage.migrate(DEMO_SCHEMA)
        await seed_demo_records(storage)
        agent = build_demo_agent(storage, model=model)
    return agent.attach(storage=storage, memory=Memory(storage))
