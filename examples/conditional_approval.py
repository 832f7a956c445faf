"""Ask for approval only when it matters.

Two rules, as in Mastra's docs:
- a tool-level rule: `transfer-money` needs approval only above 100 (the tool's rule decides alone);
- a request-level rule: in this request every tool whose name starts with `delete-` needs approval.

    OPENAI_API_KEY=... python examples/conditional_approval.py
"""

import asyncio
import os
import tempfile

from bot.agent import Agent
from bot.defaults import DEFAULT_MODEL
from memory import Storage
from tools import create_tool


async def transfer_money(input: dict, ctx) -> dict:
    print(f"[tool] transferring {input['amount']} to {input['to']}")
    return {"sent": input["amount"]}


async def delete_record(input: dict, ctx) -> dict:
    print(f"[tool] deleting record {input['id']}")
    return {"deleted": True}


async def get_record(input: dict, ctx) -> dict:
    print(f"[tool] reading record {input['id']}")
    return {"id": input["id"], "name": "Alice"}


def large_transfers_only(check) -> bool:
    return check.args["amount"] > 100


async def deletions(check) -> bool:
    return check.tool_name.startswith("delete-")


RECORD = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}

tools = [
    create_tool(
        id="transfer-money",
        description="Send money",
        input_schema={
            "type": "object",
            "properties": {"amount": {"type": "number"}, "to": {"type": "string"}},
            "required": ["amount", "to"],
        },
        require_approval=large_transfers_only,
        execute=transfer_money,
    ),
    create_tool(id="delete-record", description="Delete a record", input_schema=RECORD, execute=delete_record),
    create_tool(id="get-record", description="Read a record", input_schema=RECORD, execute=get_record),
]


async def run(agent: Agent, message: str, **options) -> None:
    print(f"> {message}")
    output = await agent.generate(message, **options)
    while output.finish_reason == "suspended":
        waiting = output.suspend_payload
        print(f"approval needed: {waiting.tool_name} {waiting.args}")
        output = await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id=waiting.tool_call_id)
    print(f"agent: {output.text}")


async def main() -> None:
    database_url = os.environ.get("DATABASE_URL") or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/example.db"
    storage = Storage(database_url)
    agent = Agent(
        id="finance-agent",
        name="Finance Agent",
        instructions="You move money and manage records.",
        model=os.environ.get("BOT_MODEL", DEFAULT_MODEL),
        tools=tools,
        storage=storage,
    )
    try:
        await run(agent, "Send 20 to Bob")
        await run(agent, "Send 500 to Bob")
        await run(agent, "Look up record 7, then delete it", require_tool_approval=deletions)
    finally:
        await storage.close()


if __name__ == "__main__":
    asyncio.run(main())
