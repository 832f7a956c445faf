"""Decline a tool call with a reason, through `generate`.

`generate` returns with `finish_reason="suspended"` and the call waiting for a decision in
`suspend_payload`. Declining it means the tool never runs; the model is told it was not approved,
and why, and answers the user.

    OPENAI_API_KEY=... python examples/decline_with_reason.py
"""

import asyncio
import os
import tempfile

from bot.agent import Agent
from bot.defaults import DEFAULT_MODEL
from memory import Storage
from tools import create_tool


async def delete_record(input: dict, ctx) -> dict:
    raise AssertionError("a declined call never runs")


delete_tool = create_tool(
    id="delete-record",
    description="Delete a record by ID",
    input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    require_approval=True,
    execute=delete_record,
)


async def main() -> None:
    database_url = os.environ.get("DATABASE_URL") or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/example.db"
    storage = Storage(database_url)
    agent = Agent(
        id="records-agent",
        name="Records Agent",
        instructions="You manage records. Use delete-record to delete one.",
        model=os.environ.get("BOT_MODEL", DEFAULT_MODEL),
        tools=[delete_tool],
        storage=storage,
    )
    try:
        output = await agent.generate("Delete record 42")
        waiting = output.suspend_payload
        print(f"{output.finish_reason}: {waiting.tool_name} {waiting.args} (approval: {waiting.requires_approval})")

        final = await agent.decline_tool_call_generate(
            run_id=output.run_id, tool_call_id=waiting.tool_call_id, reason="record 42 is still referenced"
        )
        print(f"agent: {final.text}")
        print(f"finished: {final.finish_reason}")
    finally:
        await storage.close()


if __name__ == "__main__":
    asyncio.run(main())
