"""Approve a tool call from inside the stream loop.

The agent wants to delete a record; `delete-record` requires approval, so the stream yields a
`tool-call-approval` chunk and stops. We approve right there, inside the `async for`, and print what
the agent says once the tool has run.

    OPENAI_API_KEY=... python examples/approve_in_stream.py
    (OPENAI_BASE_URL points it at any OpenAI-compatible server; DATABASE_URL at your database)
"""

import asyncio
import os
import tempfile

from pydantic import BaseModel

from bot.agent import Agent
from bot.defaults import DEFAULT_MODEL
from memory import Storage
from tools import create_tool


class DeleteInput(BaseModel):
    id: str


async def delete_record(input: DeleteInput, ctx) -> dict:
    print(f"[tool] deleting record {input.id}")
    return {"deleted": True}


delete_tool = create_tool(
    id="delete-record",
    description="Delete a record by ID",
    input_schema=DeleteInput,
    output_schema={"type": "object", "properties": {"deleted": {"type": "boolean"}}},
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
        tools={"delete_tool": delete_tool},
        storage=storage,
    )
    try:
        stream = await agent.stream("Delete record 42")
        async for chunk in stream.full_stream:
            if chunk.type == "tool-call-approval":
                print(f"approval requested: {chunk.payload['tool_name']} {chunk.payload['args']}")
                approved = await agent.approve_tool_call(
                    run_id=stream.run_id, tool_call_id=chunk.payload["tool_call_id"]
                )
                async for text in approved.text_stream:
                    print(text, end="", flush=True)
                print()
                print(f"finished: {(await approved.result()).finish_reason}")
    finally:
        await storage.close()


if __name__ == "__main__":
    asyncio.run(main())
