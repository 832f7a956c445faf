"""The built-in demo agent the bot runs when no `--agent` is named: records to list and delete, a refund
ledger, and a weather tool that asks for the city. Its tools use the bot's own database."""

from __future__ import annotations

from bot.agent import Agent
from bot.defaults import DEFAULT_MODEL
from memory import Storage

from .tools import build_demo_tools, seed_demo_records

INSTRUCTIONS = """You are the demo assistant of a team in Slack.
You can list records, delete a record (a human approves first), issue refunds (a human approves first),
and tell the weather (ask for the city when the user did not say). Be brief."""


def build_demo_agent(storage: Storage, *, model: str = DEFAULT_MODEL) -> Agent:
    """The demo agent, its tools bound to `storage` (the bot attaches storage and memory to it as to any agent)."""
    return Agent(
        id="demo-agent",
        name="Demo Agent",
        instructions=INSTRUCTIONS,
        model=model,
        tools=build_demo_tools(storage),
        default_options={"auto_resume_suspended_tools": True, "max_steps": 10},
        description="A demo agent with records, refunds and weather",
    )


__all__ = ["build_demo_agent", "seed_demo_records"]
